"""The text of a PDF (extension/panel/pdf/extract.js and text.js), on real documents: Chromium's
prints of articles in English, Russian, Chinese and Japanese, a two-column page and a table
(tests/support/pdf_documents.py), read by the pdf.js the build ships (pinned in package-lock.json,
taken from its verified tarball), under node; then the Python half (margin.page.pdf) on what
came out. And every PDF Margin refuses, by the kind the panel passes on.

node is part of the test environment: without it these tests fail, they do not skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "support"))

import pdf_documents as docs

from buildsteps.fetch import cache_dir, npm_pin, npm_tarball, read_npm_lock
from buildsteps.sources import NPM_FILES
from margin.page import pdf

PANEL = REPO / "extension" / "panel" / "pdf"
KANGXI = range(0x2F00, 0x2FE0)

RUNNER = """
import fs from "node:fs";
globalThis.DOMMatrix ??= class DOMMatrix {};  // pdf.js's display layer, unused for text, wants one in node
const pdfjs = await import("./pdf.min.mjs");
globalThis.pdfjsWorker = await import("./pdf.worker.min.mjs");
const { extractPdf, looksLikePdf } = await import("./extract.js");
const { pageLines, documentText } = await import("./text.js");
const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = {};
for (const [name, path] of Object.entries(input.files || {})) {
  try {
    const bytes = new Uint8Array(fs.readFileSync(path));
    out[name] = await extractPdf(pdfjs, bytes, { cMapUrl: "./cmaps/", maxChars: input.maxChars });
  } catch (error) {
    out[name] = { problem: error.kind || "threw", detail: String(error.message || error) };
  }
}
if (input.items) out.items = documentText(input.items.map(pageLines));
if (input.sniff) out.sniff = input.sniff.map((text) => looksLikePdf(new TextEncoder().encode(text)));
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def reader(tmp_path_factory) -> Path:
    """A folder with the shipped pdf.js files (from the verified tarball) and the panel's text code."""
    folder = tmp_path_factory.mktemp("pdfjs")
    pin = npm_pin(read_npm_lock(REPO / "package-lock.json"), "pdfjs-dist")
    wanted = {member: Path(dest).name for package, member, dest in NPM_FILES if package == "pdfjs-dist"}
    with tarfile.open(npm_tarball(pin, cache_dir()), "r:gz") as tar:
        for info in tar:
            name = info.name.split("/", 1)[-1]
            handle = tar.extractfile(info) if info.isfile() else None
            if handle is None:
                continue
            if name in wanted:
                (folder / wanted[name]).write_bytes(handle.read())
            elif name.startswith("cmaps/") and name.endswith(".bcmap"):
                (folder / "cmaps").mkdir(exist_ok=True)
                (folder / name).write_bytes(handle.read())
    for source in ("extract.js", "text.js"):
        shutil.copy(PANEL / source, folder / source)
    (folder / "package.json").write_text('{"type": "module"}')
    (folder / "run.mjs").write_text(RUNNER)
    return folder


def read(reader: Path, tmp_path: Path, files=None, **more) -> dict:
    node = shutil.which("node")
    assert node, "node is not installed: it is part of the test environment (apt-get install nodejs)"
    paths = {}
    for name, data in (files or {}).items():
        paths[name] = str(tmp_path / f"{name}.pdf")
        Path(paths[name]).write_bytes(data)
    (tmp_path / "input.json").write_text(json.dumps({"files": paths, **more}), encoding="utf-8")
    done = subprocess.run(
        [node, "run.mjs", str(tmp_path / "input.json")],
        cwd=reader,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def printed(reader, tmp_path_factory) -> dict:
    """Every committed document, read once."""
    names = [*docs.ARTICLES, "two_columns", "table"]
    return read(reader, tmp_path_factory.mktemp("printed"), {name: docs.fixture(name) for name in names})


def test_an_english_article_keeps_its_headings_paragraphs_and_reading_order(printed):
    result = printed["article_en"]
    assert result["pageCount"] == 1 and result["pagesRead"] == 1
    assert result["title"] == "How rivers carve canyons"
    doc = docs.ENGLISH
    assert result["pages"] == [
        "\n\n".join([f"# {doc['heading']}", *doc["paragraphs"], f"## {doc['subheading']}", *doc["more"]])
    ]


@pytest.mark.parametrize("name", ["article_ru", "article_ja", "article_zh"])
def test_articles_in_other_scripts_read_as_people_type_them(printed, name):
    doc = docs.ARTICLES[name]
    payload = pdf.pdf_payload("https://example.com/a.pdf", doc["title"], printed[name], language="en")
    body = payload["body"]
    assert not [c for c in body if ord(c) in KANGXI], "a Kangxi radical reached the text"
    assert body == unicodedata.normalize("NFC", body)
    expected = [f"# {doc['heading']}", *doc["paragraphs"], f"## {doc['subheading']}", *doc["more"]]
    assert body == "— page 1 —\n\n" + "\n\n".join(expected)


def test_the_chinese_print_maps_to_kangxi_radicals_and_the_fold_undoes_it(printed):
    """The case the fold exists for: Chromium's print of Noto CJK writes ⾕ (U+2F95) for 谷."""
    raw = printed["article_zh"]["pages"][0]
    assert "\u2f95" in raw and "谷" not in raw
    assert "峡谷" in pdf.fold_compatibility(raw)


def test_two_columns_read_down_the_left_column_then_the_right(printed):
    (page,) = printed["two_columns"]["pages"]
    blocks = page.split("\n\n")
    assert blocks == ["# Two rims", *docs.TWO_COLUMNS_LEFT, *docs.TWO_COLUMNS_RIGHT]


def test_a_table_becomes_a_markdown_table(printed):
    (page,) = printed["table"]["pages"]
    assert page == (
        "# Canyon layers\n\nThe layers from the rim down.\n\n"
        "| Layer | Rock | Age (million years) |\n| --- | --- | --- |\n"
        "| Kaibab | Limestone | 270 |\n| Coconino | Sandstone | 275 |\n| Vishnu | Schist | 1750 |"
    )


def item(text, x, y, size=10.0, eol=False):
    return {
        "str": text,
        "transform": [size, 0, 0, size, x, y],
        "width": len(text) * size * 0.5,
        "height": size,
        "hasEOL": eol,
    }


WORDS = ["rivers", "floods", "uplift", "deserts"]


def test_running_headers_and_page_numbers_are_left_out_but_headings_are_kept(reader, tmp_path):
    def body(n):
        return [f"Line {k} of this page is about {WORDS[n - 1]}, in words of its own." for k in range(1, 5)]

    pages = [
        [
            item("Annual report 2026", 50, 800, 8),
            item(f"Chapter {n}", 50, 760, 16),
            *(item(line, 50, 730 - 12 * k, eol=True) for k, line in enumerate(body(n))),
            item(f"Page {n} of 4", 280, 40, 8),
        ]
        for n in range(1, 5)
    ]
    out = read(reader, tmp_path, items=pages)["items"]
    assert out == [f"# Chapter {n}\n\n" + " ".join(body(n)) for n in range(1, 5)]


def test_lines_join_into_paragraphs_without_spaces_between_cjk_characters(reader, tmp_path):
    page = [
        item("河流经过数百万年，", 50, 700),
        item("切割出峡谷。", 50, 688),
        item("A second paragraph, well-", 50, 650),
        item("known, goes on here.", 50, 638),
    ]
    assert read(reader, tmp_path, items=[page])["items"] == [
        "河流经过数百万年，切割出峡谷。\n\nA second paragraph, well-known, goes on here."
    ]


def test_reading_stops_at_max_chars_and_says_how_many_pages_it_read(reader, tmp_path):
    out = read(reader, tmp_path, {"en": docs.fixture("article_en")}, maxChars=10)["en"]
    assert out["pagesRead"] == 1 and out["pageCount"] == 1  # one page is the least it reads


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda: docs.encrypted(docs.fixture("article_en")), "encrypted"),
        (docs.image_only, "no_text"),
        (lambda: docs.truncated(docs.fixture("article_en")), "damaged"),
        (lambda: b"<!doctype html><title>Sign in</title>" * 40, "not_pdf"),
    ],
)
def test_pdfs_that_cannot_be_read_are_one_kind_of_problem(reader, tmp_path, make, problem):
    out = read(reader, tmp_path, {"bad": make()})["bad"]
    assert out["problem"] == problem, out


def test_the_pdf_signature_may_follow_a_little_junk_but_not_an_html_page(reader, tmp_path):
    assert read(reader, tmp_path, sniff=["%PDF-1.7\n", "\ufeff\n%PDF-1.4", "<html>%PDF-"])["sniff"] == [
        True,
        True,
        True,  # readers accept the signature within the first 1,024 bytes
    ]
    assert read(reader, tmp_path, sniff=["<html><body>Not a PDF</body></html>"])["sniff"] == [False]
