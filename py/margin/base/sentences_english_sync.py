"""The English of sync's sentences (margin.base.sentences, rule 2), apart from the rest of
margin.base.sentences_english only for length: each way a sync can fail, said in one sentence
that also says what was (not) changed, and the name of a conflict copy. The same invariants hold:
the English catalogue says exactly these bytes (tests/unit/test_i18n_sentences.py).
"""

SYNC_ENGLISH: dict[str, str] = {
    # margin.sync.crypto
    "py_error_sync_wrong_passphrase": (
        "The sync passphrase does not match the one this sync folder was set up with. Nothing was changed."
    ),
    "py_error_sync_other_passphrase": (
        "A file in the sync folder was encrypted with another passphrase, so Margin cannot read it. "
        "Nothing was changed here."
    ),
    "py_error_sync_damaged": (
        "A file in the sync folder is damaged or incomplete, so Margin stopped before changing "
        "anything here. Sync again; if it keeps happening, turn sync off and on."
    ),
    # margin.sync.webdav
    "py_error_sync_bad_url": "Type a WebDAV URL that starts with https:// or http://.",
    "py_error_sync_unauthorized": "The WebDAV server refused the user name or password.",
    "py_error_sync_not_found": "There is no WebDAV folder at that address: check the WebDAV URL.",
    "py_error_sync_full": "The WebDAV server is out of space. Free some space there, then sync again.",
    "py_error_sync_not_webdav": "That address answered with a web page, not WebDAV: check the WebDAV URL.",
    "py_error_sync_http": "The WebDAV server answered with the error $1. Try again later.",
    "py_error_sync_unreachable": (
        "Margin could not reach the WebDAV server ($1). Check the address and your connection."
    ),
    "py_error_sync_redirect": (
        "The WebDAV server answered with a redirect to $1; put the address it should reach in WebDAV URL."
    ),
    # margin.sync.engine, margin.sync.setup
    "py_error_sync_busy": (
        "Another device kept changing the sync folder; Margin will try again at the next sync."
    ),
    "py_error_sync_off": "Sync is off: turn it on first.",
    "py_error_sync_short_passphrase": "Choose a sync passphrase of at least $1 characters.",
    "py_sync_conflict_copy": "$1 (conflict copy)",
}
