"""The English of Python's sentences (margin.base.sentences, rule 2): each `py_error_*` / `py_notice_*`
key's template, `$1`..`$9` its arguments; and of the words Python writes for the user that are not
errors or notices: a session's Markdown export (`py_export_*`) and the names Margin shows or
makes (`py_session_untitled`, `py_import_copy_suffix`, `py_provider_default_name`).

Invariants: it is the fallback when no catalogue is loaded, so a sentence is always said; the
English catalogue (extension/_locales/en/messages.json) says exactly these bytes, and they are what
Margin said before its sentences came from the catalogue (tests/unit/test_i18n_sentences.py).
Entries are grouped by the module that says them; a backup's sentences (reading, checking and
importing a backup file) are in margin.base.sentences_english_backup.
"""

from .sentences_english_backup import BACKUP_ENGLISH
from .sentences_english_sync import SYNC_ENGLISH
from .sentences_english_tools import TOOLS_ENGLISH

ENGLISH: dict[str, str] = {
    # margin.base.errors: images
    "py_error_image_formats": "Attach a PNG, JPEG, WebP or GIF picture.",
    "py_error_not_an_image": "That file is not an image. $1",
    "py_error_not_a_readable_image": "That file is not an image Margin can read. $1",
    "py_error_image_damaged": "This image is damaged and cannot be read. Attach the file again.",
    "py_error_image_too_large": "This image is larger than $1 MB. Use a smaller picture.",
    "py_error_megapixels": "Margin accepts up to $1 megapixels.",
    "py_error_too_many_pixels": "This image has too many pixels. $1",
    "py_error_image_too_large_size": "This image is too large: $1×$2 pixels; $3",
    "py_error_image_format": (
        "Margin cannot read $1 images. Save the picture as PNG or JPEG and attach it again."
    ),
    "py_error_screenshot_refused": (
        "Chrome did not allow a screenshot of this page. Click the page once, then try again."
    ),
    "py_error_image_empty": "This image is empty. Attach the file again.",
    "py_error_image_data_damaged": (
        "This image's data is damaged, so it cannot be sent. Attach the file again."
    ),
    "py_error_image_not_prepared": "Margin could not prepare an image for sending. Send the message again.",
    "py_error_which_image": "Margin did not say which image to open. Reopen the panel and try again.",
    "py_error_original_gone": (
        "The full-size copy of this image is gone (Chrome may have lost it while repairing its "
        "storage); the thumbnail is all that is left."
    ),
    # margin.app.api
    "py_error_internal": (
        "Something went wrong inside Margin ($1: $2). Your conversation is saved; try again, and if it "
        "keeps happening, reload the extension."
    ),
    # margin.turn.chat
    "py_notice_images_not_seen": (
        "This model does not take images, so it did not see what you attached: Margin sent only the "
        "text $1 in its place."
    ),
    "py_error_turn_in_progress": "An answer is still being written. Stop it or wait for it to finish.",
    "py_error_images_unreadable": "The attached images could not be read. Attach them again.",
    "py_error_empty_message": "Type a message or attach an image first.",
    "py_error_edit_target_gone": "Margin could not tell which message to edit. Try again.",
    # margin.storage.versions, margin.turn.answer_versions
    "py_error_versions_too_deep": (
        "This conversation's earlier versions are nested too deeply to keep one more. Start a new "
        "session to go on."
    ),
    "py_error_which_version": "Margin could not tell which version to show. Reopen the panel and try again.",
    "py_error_version_gone": (
        "That answer changed since the panel showed it, so Margin did not switch versions. Try again."
    ),
    "py_error_bad_turn": "Margin did not understand what to do with this message. Reload the panel.",
    "py_error_conversation_changed": (
        "The conversation changed while the answer was being written (cleared or switched), so the "
        "answer was not saved. Ask again if you still need it."
    ),
    # margin.settings.options
    "py_error_no_provider": (
        "Set up a model provider in Margin's options first (right-click the toolbar icon → Options)."
    ),
    "py_error_choose_imported_provider": (
        "Choose a provider first: the ones restored from a backup are used only once you pick one (the "
        "model chip above, or Margin's options)."
    ),
    "py_error_provider_gone": (
        "That provider is no longer saved. Choose another one, or add it again in Margin's options."
    ),
    # margin.settings.options: the form's settings (the options page checks them first, in its own words)
    "py_error_providers_missing": "The list of providers is missing. Reload the options page and save again.",
    "py_error_provider_ids_repeat": (
        "Two providers share the id “$1”. Reload the options page and save again."
    ),
    "py_error_active_provider_missing": (
        "The active provider is not in the list of providers. Choose one of them and save again."
    ),
    "py_error_language_setting": (
        "The interface language must be “auto” or a language code such as “en” or “zh-CN”."
    ),
    "py_error_summarize_setting": (
        "“Summarize long pages” must be off (0) or a whole number of characters from $1 to $2."
    ),
    "py_error_run_python_setting": "“Let the model run Python” must be “off”, “ask” or “auto”.",
    "py_error_time_limit_setting": "“Time limit for code” must be a whole number of seconds from $1 to $2.",
    # margin.providers: one provider of the form
    "py_error_provider_type_unknown": (
        "Margin does not support the provider type “$1”. Choose one of: $2 in Margin's options."
    ),
    "py_error_the_provider": "The provider",
    "py_error_provider_n": "Provider $1",
    "py_error_provider_named": "$1 (“$2”)",
    "py_error_provider_field": "$1: $2",
    "py_error_field_not_settings": "$1 is not a set of settings. Fill in the provider form again.",
    "py_error_field_type": "the type “$1” is not supported; choose one of: $2.",
    "py_error_field_base_url_empty": (
        "the Base URL is empty. Enter one, for example https://api.openai.com/v1 or "
        "http://localhost:11434/v1."
    ),
    "py_error_field_base_url_not_address": (
        "the Base URL is not a web address (an IPv6 address goes in brackets: http://[::1]:8080/v1)."
    ),
    "py_error_field_base_url_scheme": (
        "the Base URL must start with http:// or https://, for example https://api.openai.com/v1."
    ),
    "py_error_field_model_empty": (
        "the Model is empty. Enter the model's name, for example gpt-4o-mini or llama3.2."
    ),
    "py_error_field_key_not_text": "the API key must be text.",
    "py_error_field_id_not_text": "its id must be text.",
    "py_error_field_name_not_text": "the Name must be text.",
    "py_error_field_prompt_not_text": "the System prompt must be text.",
    "py_error_field_prompt_too_long": "the System prompt is $1 characters long; shorten it to $2 or fewer.",
    "py_error_field_prices": "the prices must be an object with input, cachedInput and output.",
    "py_error_field_price_input": (
        "the Input price must be a number of US dollars per 1 million tokens, 0 or more."
    ),
    "py_error_field_price_cached": (
        "the Cached input price must be a number of US dollars per 1 million tokens, 0 or more."
    ),
    "py_error_field_price_output": (
        "the Output price must be a number of US dollars per 1 million tokens, 0 or more."
    ),
    "py_error_key_over_http_at_save": (
        "$1: the API key would be sent over plain http:// to $2, where anyone on the network in "
        "between can read it. Use https://, or tick “Send the API key over plain HTTP” if you trust "
        "that network."
    ),
    "py_error_key_over_http": (
        "Margin did not send your API key to $1: the Base URL is plain http://, where anyone on the "
        "network in between can read it. Use https:// in Margin's options, or tick “Send the API key "
        "over plain HTTP” for this provider."
    ),
    "py_error_unknown_host": "an unknown host",
    # margin.providers: the name of a provider saved without one
    "py_provider_default_name": "$1 at $2",
    # margin.settings.options: the model list's notes on the options page
    "py_notice_no_model_list": "This provider type has no model list. Type the model's name.",
    "py_notice_models_not_offered": "The provider does not offer a list of models (404).",
    "py_notice_type_the_model": "$1 You can still type the model's name.",
    "py_notice_no_models": "The provider lists no models. Type the model's name.",
    # margin.providers
    "py_error_provider_said": " The provider said: $1.",
    "py_error_bad_key": "The provider rejected the API key ($1). Check the key in Margin's options.$2",
    "py_error_not_found": (
        "The provider at $1 does not know the model “$2” or that address (404). Check the model name and "
        "the Base URL in Margin's options.$3"
    ),
    "py_error_wait_seconds": "Wait $1 seconds and try again.",
    "py_error_wait_a_little": "Wait a little and try again.",
    "py_error_rate_limited": "The provider is limiting requests (429). $1$2",
    "py_error_bad_request": (
        "The provider refused the request ($1)$2. Check the model and settings in Margin's options, or "
        "start a new session if the conversation is very long."
    ),
    "py_error_http_timeout": "$1 took too long to answer (408). Try again.$2",
    "py_error_provider_down": "The provider's server at $1 failed ($2). Try again in a moment.$3",
    "py_error_provider_error": (
        "The provider answered with an error ($1). Check the provider in Margin's options.$2"
    ),
    "py_error_stream_cut": "The connection to the provider broke before the answer was finished. Try again.",
    "py_error_stopped": "The answer was stopped.",
    "py_error_timeout": (
        "$1 did not answer in time. Try again; if it keeps happening, check the server or choose a "
        "faster model."
    ),
    "py_error_idle_timeout": (
        "The provider sent nothing for $1 seconds, so Margin gave up on $2. Try again; if it keeps "
        "happening, check the server or choose a faster model."
    ),
    "py_error_waited_answer": "this answer",
    "py_error_waited_summary": "the summary",
    "py_error_waited_code_run": "the code run",
    "py_error_unreachable": (
        "Margin could not reach $1. Check that the server is running (for Ollama: `ollama serve`), that "
        "the Base URL is right, and that you are online."
    ),
    # margin.providers.overflow, margin.providers.image_refusal
    "py_error_this_model": "this model",
    "py_error_too_long": (
        "This conversation is too long for $1. Start a new session, or choose a model with a larger context."
    ),
    "py_error_too_long_shortened": (
        "This conversation is too long for $1 even with the attached pages shortened. Start a new "
        "session, or choose a model with a larger context."
    ),
    "py_error_images_refused": (
        "The model “$1” does not take images. Remove the images, or choose a model that reads images in "
        "Margin's options."
    ),
    # margin.platform.ports
    "py_error_storage_full": (
        "Chrome's storage for Margin is full, so this change was not saved. Delete old sessions or "
        "export a backup and remove some images, then try again."
    ),
    "py_error_storage_failed": "Chrome could not save Margin's data ($1).",
    "py_error_not_finite": (
        "Margin refused to save a number that is not finite (NaN or Infinity, at $1), which Chrome "
        "cannot store, so nothing was written."
    ),
    # margin.providers.*
    "py_error_answer_too_long": (
        "The answer was cut at $1 MB, the most Margin keeps of one answer. What arrived is kept; ask for "
        "the rest in a new message, or for a shorter answer."
    ),
    "py_error_stream_garbage": (
        "$1 sent a stream line longer than $2 MB, which no chat answer needs, so Margin stopped reading. "
        "What arrived is kept. Try again; if it keeps happening, check the Base URL in Margin's options."
    ),
    "py_error_conversation_forgotten": (
        "The provider no longer knows this conversation (its stored responses expired). Start a new "
        "session or ask again."
    ),
    "py_error_anthropic_overloaded": "Anthropic is overloaded right now ($1). Try again in a moment.$2",
    "py_error_key_not_allowed": (
        "The API key may not use this model or feature (403). Check the key and the model in Margin's "
        "options.$1"
    ),
    "py_error_content_refused": (
        "Google withheld the answer (reason: $1). Rephrase the question, or attach a different page."
    ),
    # margin.page.attach, margin.images.screenshot
    "py_error_no_web_tab": (
        "Margin can only read web pages (http, https or file). Switch to the tab you want to ask about, "
        "then press Attach page."
    ),
    "py_error_screenshot_no_web_tab": "Switch to a web page (http, https or file) and try again.",
    "py_error_tab_gone": (
        "That tab was closed before Margin could read it. Open the page again, then press Attach page."
    ),
    "py_error_file_access_off": (
        "Margin may not read files on this computer yet. Open chrome://extensions, click Details under "
        "Margin, turn on “Allow access to file URLs”, then press Attach page again."
    ),
    "py_error_error_page": (
        "This tab shows an error page, so there is nothing to read. Reload the page, then press Attach page."
    ),
    "py_error_tab_refused": (
        "Chrome did not let Margin read this tab ($1). Use Screenshot instead, or copy the text into the "
        "message."
    ),
    "py_error_web_store": (
        "Chrome does not let extensions read the Chrome Web Store. Copy the text you want to ask about "
        "into the message, or use Screenshot."
    ),
    "py_error_pdf_encrypted": (
        "This PDF is locked with a password, so Margin cannot read its text. Open it in Chrome, enter"
        " the password, save a copy with Print → Save as PDF, and attach that copy."
    ),
    "py_error_pdf_no_text": (
        "This PDF has no text layer: its pages are pictures (a scan), so there is nothing to read. "
        "Use Screenshot to show the model the page you see."
    ),
    "py_error_pdf_damaged": (
        "This PDF is damaged or incomplete, so Margin cannot read it. Reload the tab (or download the"
        " file again), then attach it again."
    ),
    "py_error_pdf_not_pdf": (
        "This address did not give Margin a PDF (the site sent something else, such as a sign-in "
        "page). Reload the tab, then attach it again."
    ),
    "py_error_pdf_too_big": (
        "This PDF is $1 MB, more than the $2 MB Margin reads. Select the part you need and choose "
        "“Explain with Margin”, or attach a smaller PDF."
    ),
    "py_error_pdf_too_big_unknown": (
        "This PDF is larger than the $1 MB Margin reads. Select the part you need and choose “Explain"
        " with Margin”, or attach a smaller PDF."
    ),
    "py_error_pdf_status": (
        "Margin could not download this PDF: the site answered with HTTP status $1. Reload the tab, "
        "then attach it again."
    ),
    "py_error_pdf_unreachable": (
        "Margin could not download this PDF. Check the connection, reload the tab, then attach it again."
    ),
    "py_error_no_text": (
        "This page has no text Margin can read (it may be a picture, a canvas, or still loading). Wait "
        "until it has loaded and try again, or use Screenshot to send what you see."
    ),
    "py_error_page_unreadable": (
        "Margin could not read this page. Reload it and try again, or use Screenshot."
    ),
    "py_error_page_unreadable_detail": (
        "Margin could not read this page ($1). Reload it and try again, or use Screenshot."
    ),
    "py_error_which_page": "Margin could not tell which attached page was meant. Reload the panel.",
    # margin.page.attach rule 8: "Attach tabs"
    "py_error_tab_request": "Margin could not tell which tab to read. Open Attach tabs again.",
    "py_error_tab_not_web": (
        "That tab no longer shows a web page (http, https or file), so Margin cannot read it."
    ),
    "py_error_tab_not_loaded": (
        "“$1” did not finish loading within $2 seconds, so Margin could not read it. Open the tab, "
        "wait until it has loaded, then attach it again."
    ),
    "py_error_attachment_gone": (
        "That page is no longer in the conversation. Open it in a tab and press Attach page."
    ),
    "py_error_attachment_answered": (
        "Only a page that no question has used yet can be removed. Start a New session to leave it behind."
    ),
    # margin.page.transcripts, margin.page.video: captions and times
    "py_error_captions_too_large": "These captions are too large to read (over $1 MB).",
    "py_error_captions_not_webvtt": "This caption file is not WebVTT (it does not start with WEBVTT).",
    "py_error_captions_not_timed_text": "These captions are not timed text Margin can read.",
    "py_error_captions_not_json": "These captions are not JSON Margin can read.",
    "py_error_captions_not_youtube": "These captions are not YouTube's timed text.",
    "py_error_captions_format": "These captions are in a format Margin cannot read.",
    "py_error_video_gone": "The video this time belongs to is no longer in the conversation.",
    "py_error_which_time": "Margin could not tell which time to seek to.",
    "py_error_video_tab_gone": (
        "The tab with this video was closed or shows another page, and this page has no address that "
        "opens the video at a time. Open the page again and press Attach page; the times in new "
        "answers will then work."
    ),
    # margin.storage.history, margin.turn.explain
    "py_error_nothing_to_regenerate": "There is no question to answer again yet.",
    "py_error_message_gone": "That message is no longer in the conversation. Reopen the panel and try again.",
    "py_error_nothing_selected": "Select some text on the page first, then choose Explain with Margin.",
    "py_error_pdf_selection": (
        "Chrome did not give Margin the text selected in this PDF. Press Attach page to attach the "
        "whole PDF, then ask about the part you need."
    ),
    "py_error_explain_gone": (
        "That Explain request was already answered or is too old. Select the text again and choose "
        "Explain with Margin."
    ),
    # margin.settings.prompts, margin.page.selection
    "py_error_prompts_missing": (
        "Margin got no list of prompts to save. Reload the options page and try again."
    ),
    "py_error_prompt_unreadable": "Prompt $1 cannot be read. Reload the options page and try again.",
    "py_error_prompt_name_missing": "Prompt $1 has no name. Give it a name.",
    "py_error_prompt_name_long": "The name “$1” is too long: a prompt's name has at most $2 characters.",
    "py_error_prompt_text_missing": "The prompt “$1” has no text. Write what Margin should ask.",
    "py_error_prompt_text_long": "The prompt “$1” is too long: a prompt's text has at most $2 characters.",
    "py_error_prompts_too_many": "Margin keeps at most $1 prompts. Delete one before adding another.",
    "py_error_prompt_gone": (
        "This prompt no longer exists: it was deleted in the options page. Choose another one."
    ),
    # margin.page.summaries
    "py_error_summary_empty": "The model sent back an empty summary.",
    "py_error_summary_cut": "The model's summary was cut off before its end.",
    "py_error_summary_not_shorter": "The model's summary was not shorter than the page.",
    "py_error_summary_in_progress": "This page is already being summarized.",
    "py_error_summary_page_gone": (
        "The page is no longer in the conversation, so there is nothing to summarize."
    ),
    "py_error_already_summarized": "This page has a summary already.",
    # margin.sessions.actions, margin.sessions.index
    "py_error_no_session_named": "Margin did not say which session to use. Try again.",
    "py_error_empty_session_name": "A session name cannot be empty. Type a name, then press Enter.",
    "py_error_undo_expired": "It is too late to undo: the session was deleted.",
    "py_error_session_not_found": (
        "That session no longer exists. Close the sessions panel and open it again."
    ),
    "py_error_session_missing": (
        "The saved text of “$1” is missing (Chrome may have lost it while "
        "repairing its storage). It cannot be opened; you can delete it."
    ),
    "py_error_session_unreadable": (
        "The saved text of “$1” cannot be read. It is kept as it is; export a backup before deleting it."
    ),
    # margin.sandbox.code_runs, margin.turn.unsaved_answers
    "py_error_run_answer_gone": (
        "The answer this code came from is no longer in the conversation, so its output was not saved."
    ),
    "py_error_answer_question_gone": (
        "The question this answer belongs to is no longer in the conversation, so it cannot be "
        "saved after it. Copy the answer if you need it."
    ),
    "py_error_answer_question_moved": (
        "The conversation went on after this answer's question, so Margin cannot tell where to save "
        "it. Copy the answer if you need it."
    ),
    # margin.page.data_files, margin.sessions.export
    "py_error_file_request": "Margin could not read that file's request. Reload the panel.",
    "py_error_file_spreadsheet": (
        "Margin cannot read spreadsheet files ($1). Save the sheet as CSV and attach that."
    ),
    "py_error_file_type": (
        "Margin can attach CSV, TSV, JSON, Markdown and plain text files; $1 is none of them."
    ),
    "py_error_this_file": "this file",
    "py_error_file_too_large": "$1 is larger than $2 MB. Attach a smaller file, or a part of it.",
    "py_error_file_not_text": (
        "$1 is not a text file in UTF-8. Save it as UTF-8 text (CSV, JSON or plain text) and attach it again."
    ),
    "py_error_file_empty": "$1 is empty. Attach a file with some text in it.",
    "py_error_export_format": "Choose Markdown or JSON to export a session.",
    # margin.sessions.export: the Markdown of one session (its bytes in English are what Margin
    # always wrote; a status or an outcome is the word the record holds)
    "py_export_label": "$1:",
    "py_export_you": "You",
    "py_export_assistant": "Assistant",
    "py_export_attached_page": "Attached page",
    "py_export_attached_video": "Attached video",
    "py_export_attached_selection": "Attached selection",
    "py_export_attached_file": "Attached file",
    "py_export_attached": "Attached $1",
    "py_export_model_text": "The text the model got",
    "py_export_model_ran": "The model ran code (run_python)",
    "py_export_output": "Output",
    "py_export_block_output": "Output of code block $1",
    "py_export_run_status": "$1: $2",
    "py_export_status_ok": "ok",
    "py_export_status_error": "error",
    "py_export_status_timeout": "timeout",
    "py_export_status_stopped": "stopped",
    "py_export_status_crashed": "crashed",
    "py_export_not_run": "Not run ($1)",
    "py_export_not_run_note": "Not run ($1): $2",
    "py_export_outcome_declined": "declined",
    "py_export_outcome_refused": "refused",
    "py_export_outcome_failed": "failed",
    "py_export_date_unknown": "date unknown",
    "py_export_unreadable": "(A message Margin could not read.)",
    "py_export_figure": "figure $1",
    "py_export_image": "image",
    "py_export_image_lost": "(an image that could not be exported)",
    # margin.sessions.entries: the name the user reads for a session stored as untitled
    "py_session_untitled": "Untitled session",
    # requests the panel itself got wrong (a bug of the panel; $1 is what was wrong, technical)
    "py_error_run_unreadable": "Margin could not read the code run to save ($1).",
    "py_error_run_result_unreadable": "Margin could not read the code run's result ($1).",
    "py_error_answer_unreadable": "Margin could not read the answer to save ($1). Copy it instead.",
    "py_error_request_not_json": "The request was not valid JSON.",
    "py_error_unknown_request": "Margin does not know the request $1.",
    "py_error_request_forbidden": "Pages may not send $1 to Margin.",
    "py_error_payload_not_object": "The request $1 needs an object as its payload.",
    # margin.providers: setup problems
    "py_error_ollama_origin": (
        "Ollama at $1 refused Margin's requests (403). Start it with "
        "OLLAMA_ORIGINS=chrome-extension://* (for example: OLLAMA_ORIGINS=chrome-extension://* "
        "ollama serve), then try again."
    ),
    "py_error_server_origin": (
        "The server at $1 refused Margin's requests (403). Allow the chrome-extension:// "
        "origin (CORS) in the server's settings, then try again."
    ),
    "py_error_not_a_chat_stream": (
        "The provider sent something that is not a chat stream: $1. "
        "Check that the Base URL points at an OpenAI-compatible API (it usually ends in /v1)."
    ),
    "py_error_stopped_with_error": (
        "The provider stopped with an error: $1. Try again, or check the provider in Margin's options."
    ),
    "py_error_answered_with_error": (
        "The provider answered with an error: $1. Check the provider in Margin's options."
    ),
    "py_notice_connected": "Connected to $1: model $2 answered.",
    "py_notice_connection_error": "$1 answered with an error: $2.",
    "py_notice_connection_not_api": "$1 answered, but not like $2. Check the Base URL ($3).",
    "py_notice_api_openai": "an OpenAI-compatible API",
    "py_notice_api_anthropic": "the Anthropic API",
    "py_notice_api_gemini": "the Gemini API",
    "py_notice_api_responses": "the Responses API",
    "py_notice_usual_ends_v1": "it usually ends in /v1",
    "py_notice_usual_is": "it is usually $1",
    "py_notice_usual": "usually $1",
    "py_error_not_a_stream_openai": (
        "The provider answered, but not with a stream (content type “$1”). Check that "
        "the Base URL points at an OpenAI-compatible API (it usually ends in /v1)."
    ),
    "py_error_not_anthropic_stream": (
        "The provider sent something that is not an Anthropic message stream: $1. Check that the Base "
        "URL is $2."
    ),
    "py_error_not_responses_stream": (
        "The provider sent something that is not a Responses stream: $1. Check that the Base URL is $2."
    ),
    "py_error_not_gemini_stream": (
        "Google sent something that is not an answer stream: $1. Check that the Base URL is $2."
    ),
    "py_error_not_a_stream_at": (
        "The provider answered, but not with a stream (content type “$1”). Check that the Base URL is $2."
    ),
    "py_error_google_not_a_stream": (
        "Google answered, but not with a stream (content type “$1”). Check that the Base URL is $2."
    ),
    "py_error_no_model_list_v1": (
        "$1 did not send a list of models. Type the model's name instead, or check the Base URL (it "
        "usually ends in /v1)."
    ),
    "py_error_no_model_list_anthropic": (
        "$1 did not answer with a model list. Type the model's name instead, for example claude-sonnet-4-5."
    ),
    "py_error_no_model_list": "$1 sent no model list.",
    "py_error_bad_reply": (
        "$1 sent a reply Margin cannot read: $2. Try again; if it keeps happening, check the provider "
        "and its Base URL in Margin's options."
    ),
    "py_error_source_provider": "The provider",
    "py_error_source_server": "The server at $1",
    "py_error_source_anthropic": "Anthropic's API at $1",
    "py_error_source_google": "Google's API at $1",
    "py_error_source_responses": "The Responses API at $1",
    "py_error_reply_nested_over": "its JSON is nested more than $1 levels deep",
    "py_error_reply_nested": "its JSON is nested too deeply",
    "py_error_reply_digits": "it holds a number with too many digits",
    "py_error_reply_field": "“$1” is $2, not $3",
    "py_error_reply_event": "a stream event is $1, not an object",
    "py_error_reply_item": "a stream item is $1, not an object",
    "py_error_kind_object": "an object",
    "py_error_kind_list": "a list",
    "py_error_kind_text": "text",
    "py_error_kind_number": "a number",
    "py_error_kind_bool": "true or false",
    "py_error_kind_null": "null",
    "py_error_kind_other": "something else",
    "py_error_kind_either": "$1 or $2",
    "py_error_answer_kept": "$1 The answer stays on screen: copy it, or press Retry save.",
    "py_error_redirect_to": (
        "$1 answered with a redirect to $2; Margin does not follow redirects with your "
        "conversation. Put the address it should reach in the Base URL (often https:// "
        "instead of http://, or a missing /v1)."
    ),
    "py_error_redirect": (
        "$1 answered with a redirect; Margin does not follow redirects with your "
        "conversation. Put the address it should reach in the Base URL (often https:// "
        "instead of http://, or a missing /v1)."
    ),
    **BACKUP_ENGLISH,
    **TOOLS_ENGLISH,
    **SYNC_ENGLISH,
}
