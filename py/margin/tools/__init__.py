"""The user's tools: MCP servers, their protocol and a turn's calls of them."""
