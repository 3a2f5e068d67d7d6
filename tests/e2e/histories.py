"""Stored conversations the first-paint tests and the bench paint: `realistic_history(n)` is n
records alternating user/assistant, the answers with a heading, bold, a code block, a list, a
table and a link (what a real answer's Markdown holds); `AGED` is a long page attached three
questions before (its card says the model now gets a short note, with "Attach again")."""

from __future__ import annotations

from typing import Any


def realistic_history(count: int) -> list[dict[str, Any]]:
    """`count` records alternating user/assistant, with Markdown, lists and code blocks."""
    records: list[dict[str, Any]] = []
    for i in range(count):
        if i % 2 == 0:
            records.append(
                {
                    "role": "user",
                    "content": f"Question {i // 2 + 1}: how do I read a file line by line in Python and count the words on each line?",
                }
            )
        else:
            records.append(
                {
                    "role": "assistant",
                    "content": (
                        f"## Answer {i // 2 + 1}\n\nOpen the file with a **context manager** and iterate over it:\n\n"
                        "```python\nwith open(path, encoding='utf-8') as handle:\n    for number, line in enumerate(handle, 1):\n"
                        "        print(number, len(line.split()))\n```\n\n"
                        "- `open()` returns a lazy iterator, so big files are fine\n- `split()` with no argument splits on any whitespace\n\n"
                        "| call | meaning |\n| --- | --- |\n| `enumerate` | numbers the lines |\n\nSee [the docs](https://docs.python.org/3/library/functions.html#open)."
                    ),
                }
            )
    return records


# The card's rule is panel/slimming.js's, the same as py/margin/turn/slimming.py's.
AGED = [
    {
        "role": "user",
        "content": "[Page context] Page: Old notes\nURL: https://example.com/old\n\n" + "river " * 1600,
        "attachment": {
            "kind": "page",
            "title": "Old notes",
            "url": "https://example.com/old",
            "site": "example.com",
            "chars": 9600,
            "truncated": False,
            "originalChars": 9600,
            "capturedAt": 1764684000000,
        },
    },
    *[
        record
        for n in range(3)
        for record in (
            {"role": "user", "content": f"Question {n}", "createdAt": 1764684100000 + n},
            {"role": "assistant", "content": f"Answer {n}", "createdAt": 1764684200000 + n},
        )
    ],
]
