"""The streaming answer's incremental Markdown (extension/panel/stream_render.js): over many
generated answers, each fed in many random chunkings, the frozen pieces plus the tail are, at
every paint and at the end, exactly marked's render of the whole text so far; and the work per
answer is linear (characters lexed are counted). Runs the vendored marked in node (from the
build's npm cache, pinned by package-lock.json). Node is part of the test environment."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from helpers import run_js_module

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "extension" / "panel" / "stream_render.js"
sys.path.insert(0, str(ROOT))

from buildsteps import fetch

SCRIPT = """
import { Marked } from './marked.mjs';
const marked = new Marked({ gfm: true, breaks: false });
const lex = (text) => { lexed += text.length; return marked.lexer(text); };
const render = (tokens) => marked.parser(tokens);
let lexed = 0;
const out = [];
for (const { text, cuts } of input.answers) {
  const whole = marked.parse(text);
  const result = { mismatches: [], lexed: 0, length: text.length, chunkings: cuts.length };
  for (const points of cuts) {
    lexed = 0;
    const split = stream_render.createStreamSplit({ lex, render });
    let frozen = '';
    for (const point of points) {
      const prefix = text.slice(0, point);
      const step = split.update(prefix);
      frozen += step.frozen;
      if (!input.definitions.includes(text) && frozen + step.tail !== marked.parse(prefix)) {
        result.mismatches.push({ at: point, prefix });
      }
    }
    const end = split.finish(text);
    const shown = end.whole ? whole : frozen + end.tail;
    if (shown !== whole) result.mismatches.push({ at: 'end', whole: end.whole });
    result.lexed = Math.max(result.lexed, lexed);
  }
  out.push(result);
}
console.log(JSON.stringify(out));
"""


def marked_source() -> str:
    pins = fetch.read_npm_lock(ROOT / "package-lock.json")
    tarball = fetch.npm_tarball(fetch.npm_pin(pins, "marked"), fetch.cache_dir())
    return fetch.read_tar_members(tarball, {"lib/marked.esm.js"}, "marked")["lib/marked.esm.js"].decode()


WORDS = "the river *delta* **grows** `code` and [a link](https://example.com) ünï 中 😀 x < y".split()


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def block(rng: random.Random) -> str:
    kind = rng.randrange(16)
    if kind == 0:
        return f"{'#' * rng.randint(1, 4)} {words(rng, 3)}"
    if kind == 1:
        return f"{words(rng, 4)}\n{rng.choice(['===', '---'])}"
    if kind == 2:
        return "\n".join(f"{rng.choice('-*+')} {words(rng, 3)}" for _ in range(rng.randint(1, 4)))
    if kind == 3:  # a loose list, and one with a continued item
        return f"1. {words(rng, 2)}\n\n2. {words(rng, 2)}\n\n   {words(rng, 3)}"
    if kind == 4:
        return f"- {words(rng, 2)}\n  - {words(rng, 2)}\n    - {words(rng, 2)}"
    if kind == 5:
        body = "\n".join(words(rng, 3) for _ in range(rng.randint(1, 3)))
        return f"```{rng.choice(['', 'python', 'js'])}\n{body}\n\n{words(rng, 2)}\n```"
    if kind == 6:
        return "    indented = code\n    more()"
    if kind == 7:
        rows = "\n".join(f"| {words(rng, 1)} | {words(rng, 2)} |" for _ in range(rng.randint(1, 3)))
        return f"| a | b |\n|---|:-:|\n{rows}"
    if kind == 8:
        return f"> {words(rng, 3)}\n> {words(rng, 2)}\n>\n> - {words(rng, 2)}"
    if kind == 9:
        return rng.choice(["---", "***", "___"])
    if kind == 10:
        return f"{words(rng, 2)} <b>bold {words(rng, 1)}"
    if kind == 11:
        return f"</b> {words(rng, 2)}"
    if kind == 12:
        return f"<div>\n{words(rng, 2)}"
    if kind == 13:
        return f"{words(rng, 3)}  \n{words(rng, 3)}\\\n{words(rng, 2)}"
    if kind == 14:
        return f"{words(rng, 2)} [ref] {words(rng, 1)}"
    return "\n".join(words(rng, rng.randint(3, 9)) for _ in range(rng.randint(1, 4)))


def answer(rng: random.Random, blocks: int) -> str:
    parts = [block(rng) for _ in range(blocks)]
    separators = [rng.choice(["\n\n", "\n\n", "\n\n\n", "\n"]) for _ in parts]
    text = "".join(p + s for p, s in zip(parts, separators, strict=True))
    if rng.random() < 0.2:
        text += "[ref]: https://example.com/ref\n\nafter the definition"
    if rng.random() < 0.3:
        text = text.rstrip("\n")
    if rng.random() < 0.2:
        text += "\n```\nan unclosed fence\n\nstill code"
    return text


def chunkings(rng: random.Random, text: str, count: int) -> list[list[int]]:
    out = [list(range(1, len(text) + 1))] if len(text) < 400 else []  # one character at a time
    for _ in range(count):
        size = rng.choice([2, 5, 13, 40, 200])
        points = sorted({rng.randint(1, len(text)) for _ in range(max(1, len(text) // size))} | {len(text)})
        out.append(points)
    return out


def test_incremental_render_equals_the_whole_render_at_every_paint(tmp_path):
    rng = random.Random(11)
    answers = [answer(rng, rng.randint(1, 14)) for _ in range(80)]
    data = {
        "answers": [{"text": t, "cuts": chunkings(rng, t, 5)} for t in answers],
        "definitions": [t for t in answers if "[ref]:" in t],
    }
    results = run_js_module(
        tmp_path, MODULE, "stream_render", SCRIPT, data, extra_files={"marked.mjs": marked_source()}
    )
    failures = [(answers[i], r["mismatches"][:1]) for i, r in enumerate(results) if r["mismatches"]]
    assert failures == [], failures[:2]
    assert sum(r["chunkings"] for r in results) >= 80 * 5


def test_a_long_answer_is_lexed_in_linear_time(tmp_path):
    """200 paragraphs fed 20 characters at a time: re-lexing the whole answer per paint would lex
    about length² / 40 characters (over 500 times the length); with only the last two blocks
    (about 220 characters) lexed per paint it is about 10 times."""
    rng = random.Random(3)
    text = "\n\n".join(words(rng, 18) for _ in range(200))
    data = {
        "answers": [{"text": text, "cuts": [[*range(20, len(text), 20), len(text)]]}],
        "definitions": [],
    }
    (result,) = run_js_module(
        tmp_path, MODULE, "stream_render", SCRIPT, data, extra_files={"marked.mjs": marked_source()}
    )
    assert result["mismatches"] == []
    assert result["lexed"] < 20 * result["length"], result
