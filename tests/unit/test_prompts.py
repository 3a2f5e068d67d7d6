"""Saved prompts (margin.settings.prompts, margin.page.selection, margin.turn.explain rule 5): the
built-ins in the user's language, validation before any write, order, placeholders, the menu run."""

from __future__ import annotations

import json

import pytest
from attach_tabs import ARTICLE_URL, Page, history, run, setup, turn
from chat_turns import answer
from platform_memory import memory_platform

from margin.backup import stream as backup
from margin.base.errors import MarginError
from margin.page import selection
from margin.settings import prompts
from margin.storage.keys import PROMPTS, UI_LANGUAGE
from margin.turn import explain

OWN = {"name": "Spanish", "text": "Translate {{selection}} into Spanish.", "menu": True}


def names(reply):
    return [p["name"] for p in reply["prompts"]]


def test_a_fresh_profile_has_the_seven_built_ins_in_its_language():
    english = run(prompts.handle_list(memory_platform(), {}))
    assert names(english) == [
        "Summarize",
        "Summarize the page",
        "Explain simply",
        "Tighten",
        "Translate",
        "Fix grammar",
        "Key points",
    ]
    assert [p["id"] for p in english["prompts"] if p["menu"]] == ["summarize", "translate"]
    russian = run(prompts.handle_list(memory_platform({UI_LANGUAGE: "ru"}), {}))
    assert names(russian)[3] == "Сократить"
    assert russian["prompts"][4]["text"] == "Переведи это на язык: {{language}}."


def test_save_keeps_the_users_order_and_stores_built_ins_as_ids_not_words():
    platform = memory_platform()
    listed = run(prompts.handle_list(platform, {}))["prompts"]
    tighten = next(p for p in listed if p["id"] == "tighten")
    new_order = [{**OWN}, {**tighten, "hidden": True}]  # the other built-ins are left out
    saved = run(prompts.handle_save(platform, {"prompts": new_order}))
    assert names(saved)[:2] == ["Spanish", "Tighten"]
    assert len(saved["prompts"]) == 8  # the built-ins left out come back, at the end
    stored = platform.local.snapshot()[PROMPTS]
    assert stored[0]["id"].startswith("p_") and stored[0]["text"] == OWN["text"]
    assert stored[1] == {"id": "tighten", "builtin": True, "hidden": True, "menu": False}
    # Under another language the same list speaks that language.
    run(platform.local.set({UI_LANGUAGE: "ja"}))
    assert names(run(prompts.handle_list(platform, {})))[1] == "簡潔に"


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ([{"name": "", "text": "x"}], "Prompt 1 has no name"),
        ([{"name": "A", "text": "   "}], "The prompt “A” has no text"),
        ([{"name": "n" * 81, "text": "x"}], "at most 80 characters"),
        ([{"name": "A", "text": "x" * 20_001}], "at most 20000 characters"),
        ([{"id": "nope", "builtin": True}], "Prompt 1 cannot be read"),
        ([{"id": "a", "name": "A", "text": "x"}, {"id": "a", "name": "B", "text": "y"}], "Prompt 2"),
        ("not a list", "no list of prompts"),
    ],
)
def test_bad_input_is_one_sentence_and_nothing_is_written(bad, words):
    platform = memory_platform()
    run(prompts.handle_save(platform, {"prompts": [OWN]}))
    before = platform.local.snapshot()[PROMPTS]
    with pytest.raises(MarginError) as info:
        run(prompts.handle_save(platform, {"prompts": bad}))
    assert info.value.code == "invalid_prompts" and words in info.value.message
    assert platform.local.snapshot()[PROMPTS] == before


def test_a_stored_value_margin_cannot_read_is_parked_by_the_next_save():
    platform = memory_platform({PROMPTS: [{"id": "x", "name": 3}, {"id": "summarize", "builtin": True}]})
    listed = run(prompts.handle_list(platform, {}))["prompts"]
    assert [p["id"] for p in listed][:2] == ["summarize", "summarize_page"]
    run(prompts.handle_save(platform, {"prompts": listed}))
    parked = [k for k in platform.local.snapshot() if k.startswith("promptsUnreadable_")]
    assert len(parked) == 1


@pytest.mark.parametrize("stored", [{"0": {"name": "Mine", "text": "x"}}, "a list once", 7])
def test_a_stored_value_that_is_not_a_list_reads_as_the_built_ins_and_is_kept_aside(stored):
    platform = memory_platform({PROMPTS: stored})
    listed = run(prompts.handle_list(platform, {}))["prompts"]
    assert [p["id"] for p in listed] == [p["id"] for p in prompts.default_prompts()]
    run(prompts.handle_save(platform, {"prompts": [*listed, OWN]}))
    kept = platform.local.snapshot()
    (parked,) = [k for k in kept if k.startswith("promptsUnreadable_")]
    assert kept[parked] == stored  # nothing the user had is lost
    assert kept[PROMPTS][-1]["name"] == "Spanish"


def test_the_list_cannot_grow_past_its_bound_but_a_longer_one_can_still_shrink():
    platform = memory_platform()
    many = [{"name": f"P{i}", "text": "x"} for i in range(prompts.MAX_PROMPTS - len(prompts.BUILTINS))]
    saved = run(
        prompts.handle_save(
            platform, {"prompts": [*run(prompts.handle_list(platform, {}))["prompts"], *many]}
        )
    )
    assert len(saved["prompts"]) == prompts.MAX_PROMPTS
    with pytest.raises(MarginError) as info:
        run(prompts.handle_save(platform, {"prompts": [*saved["prompts"], OWN]}))
    assert f"at most {prompts.MAX_PROMPTS} prompts" in info.value.message
    assert len(platform.local.snapshot()[PROMPTS]) == prompts.MAX_PROMPTS  # nothing written
    # A backup may have made the list longer: deleting one is still a save.
    longer = [*platform.local.snapshot()[PROMPTS], {"id": "p_extra1", "name": "E1", "text": "x"}]
    run(platform.local.set({PROMPTS: [*longer, {"id": "p_extra2", "name": "E2", "text": "x"}]}))
    listed = run(prompts.handle_list(platform, {}))["prompts"]
    assert (
        len(run(prompts.handle_save(platform, {"prompts": listed[:-1]}))["prompts"])
        == prompts.MAX_PROMPTS + 1
    )


def test_placeholders_are_filled_and_others_left_as_written():
    text = "Put {{ selection }} from {{page}} in {{language}}; keep {{other}}."
    values = {"selection": "S", "page": "P", "language": "L"}
    assert prompts.fill(text, values) == "Put S from P in L; keep {{other}}."
    assert prompts.placeholders_in(text) == {"selection", "page", "language"}


def test_picking_a_prompt_fills_the_selection_language_and_asks_to_attach_the_page():
    class Selected(Page):
        def __call__(self, tab, function, args):
            return (
                "  isostatic rebound "
                if function == "__marginSelection"
                else super().__call__(tab, function, args)
            )

    platform = setup(page=Selected())
    run(platform.local.set({UI_LANGUAGE: "es"}))
    own = {"name": "Mix", "text": "{{selection}} / {{page}} / {{language}}"}
    saved = run(prompts.handle_save(platform, {"prompts": [own]}))["prompts"]
    filled = run(selection.handle_fill(platform, {"id": saved[0]["id"]}))
    assert filled == {
        "text": "isostatic rebound / la página adjunta / Español",
        "attachPage": True,
        "selectionMissing": False,
    }
    with pytest.raises(MarginError) as info:
        run(selection.handle_fill(platform, {"id": "deleted"}))
    assert info.value.code == "prompt_gone"


def test_a_prompt_without_a_readable_selection_is_still_filled():
    platform = setup()  # its page script does not know __marginSelection: Chrome refused, say
    platform.tabs.script = None
    saved = run(prompts.handle_save(platform, {"prompts": [OWN]}))["prompts"]
    filled = run(selection.handle_fill(platform, {"id": saved[0]["id"]}))
    assert filled["text"] == "Translate  into Spanish." and filled["selectionMissing"] is True


def test_a_menu_prompt_runs_as_explain_with_its_text_as_the_question():
    platform = setup(responses=[answer("La erosión ...")])
    saved = run(prompts.handle_save(platform, {"prompts": [OWN]}))["prompts"]
    info = {
        "selectionText": "erosion",
        "pageUrl": ARTICLE_URL,
        "title": "Canyons",
        "promptId": saved[0]["id"],
    }
    request = run(explain.queue(platform, info))
    events = turn(platform, {"action": "explain", "requestId": request["id"]})
    assert events[-1]["event"] == "done"
    card, question, _ = history(platform)
    assert card["content"].endswith("\n\nerosion")
    assert question["content"] == "Translate the selected text above into Spanish."


def test_a_menu_prompt_deleted_before_the_panel_runs_it_is_gone():
    platform = setup()
    saved = run(prompts.handle_save(platform, {"prompts": [OWN]}))["prompts"]
    request = run(explain.queue(platform, {"selectionText": "x", "promptId": saved[0]["id"]}))
    run(prompts.handle_save(platform, {"prompts": []}))
    events = turn(platform, {"action": "explain", "requestId": request["id"]})
    assert events[-1]["event"] == "error" and events[-1]["error"]["code"] == "prompt_gone"
    assert history(platform) == []


# -- backups -----------------------------------------------------------------------------------


def exported(platform):
    return run(backup.export_text(platform, False, 1 << 20))[0]


def test_prompts_travel_in_a_backup_and_never_change_the_prompts_we_have():
    source = memory_platform()
    listed = run(prompts.handle_list(source, {}))["prompts"]
    hidden_tighten = [{**p, "hidden": p["id"] == "tighten"} for p in listed]
    run(prompts.handle_save(source, {"prompts": [OWN, *hidden_tighten]}))
    text = exported(source)
    carried = json.loads(text)["settings"]["prompts"]
    assert (
        carried[0]["name"] == "Spanish"
        and {"id": "tighten", "builtin": True, "hidden": True, "menu": False} in carried
    )
    # A profile that never saved prompts takes the list whole.
    fresh = memory_platform()
    run(backup.import_text(fresh, text, 1 << 20))
    assert fresh.local.snapshot()[PROMPTS] == source.local.snapshot()[PROMPTS]
    # One with its own gets the file's own prompts added at the end, once; its order stays.
    mine = memory_platform()
    run(prompts.handle_save(mine, {"prompts": [{"name": "Mine", "text": "Mine."}]}))
    run(backup.import_text(mine, text, 1 << 20))
    run(backup.import_text(mine, text, 1 << 20))
    after = names(run(prompts.handle_list(mine, {})))
    assert after[0] == "Mine" and after[-1] == "Spanish" and after.count("Spanish") == 1
    assert not next(p for p in run(prompts.handle_list(mine, {}))["prompts"] if p["id"] == "tighten")[
        "hidden"
    ]


def test_a_backup_whose_prompts_are_not_a_list_is_refused_and_bad_entries_are_left_out():
    text = json.loads(exported(memory_platform()))
    text["settings"]["prompts"] = [
        {"id": "x", "name": "", "text": "t"},
        {"name": "Ok", "id": "k", "text": "Fine."},
    ]
    fresh = memory_platform()
    run(backup.import_text(fresh, json.dumps(text), 1 << 20))
    assert fresh.local.snapshot()[PROMPTS][0]["name"] == "Ok"
    text["settings"]["prompts"] = "junk"
    with pytest.raises(MarginError) as info:
        run(backup.import_text(memory_platform(), json.dumps(text), 1 << 20))
    assert info.value.code == "bad_backup"
