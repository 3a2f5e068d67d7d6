"""The English of the MCP servers' sentences (margin.base.sentences, rule 2), apart from the rest of
margin.base.sentences_english only for length: what the options page says about a server Margin
cannot add or use (margin.tools.servers, margin.tools.session), and the Markdown export's line
before a call of one of the user's tools. The same invariants hold: the English catalogue says
exactly these bytes (tests/unit/test_i18n_sentences.py).
"""

TOOLS_ENGLISH: dict[str, str] = {
    "py_error_mcp_unreachable": (
        "Margin could not reach the MCP server at $1 ($2). Check the address and that the server is running."
    ),
    "py_error_mcp_timeout": "The MCP server at $1 did not answer in time.",
    "py_error_mcp_not_mcp": (
        "$1 did not answer as an MCP server ($2). Check that the address is the server's "
        "Streamable HTTP endpoint, often ending in /mcp."
    ),
    "py_error_mcp_needs_oauth": (
        "The MCP server at $1 asks for a sign-in (OAuth), which Margin does not do yet. If it "
        "accepts a token, paste it as the Authorization header, e.g. “Bearer …”."
    ),
    "py_error_mcp_auth_refused": (
        "The MCP server at $1 refused the Authorization header (HTTP $2). Check its value."
    ),
    "py_error_mcp_version": "The MCP server at $1 speaks protocol version $2, which Margin does not know.",
    "py_error_mcp_rpc_error": "The MCP server at $1 answered with an error: $2",
    "py_error_mcp_too_large": (
        "The answer of the MCP server at $1 is larger than $2 characters; Margin did not read it."
    ),
    "py_error_mcp_no_tools": "The MCP server at $1 offers no tool Margin can use.",
    "py_error_mcp_session_gone": "The MCP server at $1 ended the session. Try again.",
    "py_error_mcp_bad_url": (
        "Type the MCP server's address, starting with https:// (or http:// for a server on this computer)."
    ),
    "py_error_mcp_header_over_http": (
        "The Authorization header would travel unencrypted over http:// to $1. Use the server's "
        "https:// address."
    ),
    "py_error_mcp_bad_header": "The Authorization header is too long.",
    "py_error_mcp_already_added": "This MCP server is already added.",
    "py_error_mcp_too_many": "Margin keeps at most $1 MCP servers. Remove one first.",
    "py_error_mcp_server_gone": "This MCP server is no longer in Margin's list. Reload the page.",
    "py_export_model_called": "The model called “$1” on $2:",
}
