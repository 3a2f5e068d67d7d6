"""Small helpers shared by the unit tests."""

import asyncio


def run(coro):
    return asyncio.run(coro)
