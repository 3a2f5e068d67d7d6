"""The English of a backup's sentences (margin.base.sentences, rule 2), apart from the rest of
margin.base.sentences_english only for length: a backup file refused (nothing of it is written),
and what an import did (plural keys: one form per plural category). The same invariants hold: the
English catalogue says exactly these bytes (tests/unit/test_i18n_sentences.py).
"""

BACKUP_ENGLISH: dict[str, str] = {
    # margin.backup.stream*: a backup file refused (nothing of it is written)
    "py_error_backup_choose_ours": "Choose a file made with “Export backup”.",
    "py_error_backup_export_again": "Export the backup again and import the new file.",
    "py_error_backup_not_ours": "This file is not a Margin backup. $1",
    "py_error_backup_not_json": "This file is not a Margin backup (it is not valid JSON). $1",
    "py_error_backup_empty_file": "The chosen file is empty. $1",
    "py_error_backup_constant": "This backup holds “$1”, which is not a number Margin stores. $2",
    "py_error_backup_long_number": (
        "This backup holds a number of more than $1 digits, far larger than any Margin stores, so it "
        "is damaged or was not made by Margin. $2"
    ),
    "py_error_backup_huge_number": "This backup holds a number too large to store ($1). $2",
    "py_error_backup_twice": "This backup is damaged: it holds “$1” twice. $2",
    "py_error_backup_text_after_end": "This backup is damaged: there is text after its end. $1",
    "py_error_backup_nested_over": (
        "This backup is nested more than $1 levels deep, which no Margin backup is: it is damaged or "
        "was not made by Margin. $2"
    ),
    "py_error_backup_nested": "This backup is nested too deeply to read. $1",
    "py_error_backup_incomplete": (
        "This backup file is incomplete: it ends too early, as if the download or copy was cut off. $1"
    ),
    "py_error_backup_unreadable_near": "This backup file is damaged (unreadable near character $1). $2",
    "py_error_backup_newer": (
        "This backup was made by a newer Margin (format version $1). Update Margin, then import it again."
    ),
    "py_error_backup_unknown_version": (
        "This backup has an unknown format version ($1); Margin reads version $2. Export it again "
        "with this version of Margin."
    ),
    "py_error_backup_repeats_session": "This backup repeats one session too often. $1",
    "py_error_backup_damaged": "This backup is damaged: $1. Export the backup again, or choose another file.",
    "py_error_backup_damaged_choose": "This backup is damaged: $1. $2",
    "py_error_backup_session": "session $1",
    "py_error_backup_session_named": "session $1 (“$2”)",
    "py_error_backup_open_conversation": "its open conversation",
    "py_error_backup_problem_history": "$1 has a conversation that is not a list of messages",
    "py_error_backup_problem_message": "$1 has a message ($2) Margin cannot read: $3",
    "py_error_backup_problem_messages": "$1 has messages Margin cannot read",
    "py_error_backup_problem_date": "$1 has a “$2” that is not a date",
    "py_error_backup_problem_flag": "$1 has a “$2” that is neither true nor false",
    "py_error_backup_problem_not_session": "$1 is not a session",
    "py_error_backup_problem_name": "$1 has a name that is not text",
    "py_error_backup_problem_id": "$1 has no usable id",
    "py_error_backup_problem_current": "its open conversation is not readable",
    "py_error_backup_problem_current_session": (
        "its open conversation names its session with something that is not text"
    ),
    "py_error_backup_problem_settings": "its settings are not readable",
    "py_error_backup_problem_providers": "its settings hold a list of providers that is not a list",
    "py_error_backup_problem_language": "its settings hold an interface language that is not text",
    "py_error_backup_problem_summarize": (
        "its settings hold a “Summarize long pages” size that is not a number"
    ),
    "py_error_backup_problem_sessions": "its list of sessions is not readable",
    "py_error_backup_problem_date_of_file": "its date is not a date",
    "py_error_backup_provider_same_id": "$1 has the same id as an earlier one.",
    "py_error_backup_not_file": "The panel sent something that is not part of the file. Import it again.",
    "py_error_backup_bad_start": 'A backup port starts with {action: "export" or "import"}.',
    # margin.backup.importer: what an import did (plural keys: one form per plural category)
    "py_notice_import_nothing_new__one": (
        "Nothing new to import: all $1 session in the backup are already here."
    ),
    "py_notice_import_nothing_new__other": (
        "Nothing new to import: all $1 sessions in the backup are already here."
    ),
    "py_notice_import_empty": "The backup holds no sessions to import.",
    "py_notice_import_added__one": "Added $1 session",
    "py_notice_import_added__other": "Added $1 sessions",
    "py_notice_import_added_none": "Added no session",
    "py_notice_import_copies__one": "$1 of them as an “$2” copy beside yours, which differs from it",
    "py_notice_import_copies__other": "$1 of them as “$2” copies beside yours, which differ from them",
    "py_import_copy_suffix": " (imported)",
    "py_notice_import_skipped": "skipped $1 already here",
    "py_notice_import_providers__one": "added $1 provider",
    "py_notice_import_providers__other": "added $1 providers",
    "py_notice_import_list": "$1, $2",
    "py_notice_import_sentence": "$1.",
    "py_notice_import_damaged__one": " $1 session the backup marks as damaged could not be restored.",
    "py_notice_import_damaged__other": " $1 sessions the backup marks as damaged could not be restored.",
    "py_notice_import_left_out__one": " Left out $1 provider that is not valid: $2",
    "py_notice_import_left_out__other": " Left out $1 providers that are not valid: $2",
    "py_notice_import_use_first": (
        " To use $1, choose it in the model menu: a provider from a backup is not used until you pick it."
    ),
    "py_notice_import_provider": "“$1” ($2)",
}
