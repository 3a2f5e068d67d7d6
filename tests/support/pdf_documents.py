"""Real PDF documents for the PDF tests and the benchmark, printed by Chromium (as a user's browser
prints them), and the bad inputs Attach page must refuse.

Concept: each document is an HTML source whose text is known (`SOURCES`: the words a reader sees,
in reading order), printed with Playwright's `page.pdf()` by the same Chromium the end-to-end
tests drive, so the tests compare what Margin extracts against the text that was printed.

Rules:
1. The small documents (articles in English, Russian, Chinese and Japanese, a two-column page, a
   table) are committed under tests/fixtures/pdf/ (`python3 tests/support/pdf_documents.py`
   prints them again); the long ones (`long_document(pages)`) are printed at test time, since
   they are deterministic in text and too large to commit.
2. The CJK articles use the Noto CJK fonts (Debian's fonts-noto-cjk): Chromium maps some of their
   glyphs to Kangxi radicals (U+2F00–U+2FDF) in the PDF's ToUnicode map, the case NFKC folds.
3. The bad inputs are made from the good ones without a browser: an encrypted copy (pypdf, with
   a user password), an image-only page (no text layer), a truncated file.
"""

from __future__ import annotations

import html
import io
import sys
import zlib
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pdf"

_PAGE_CSS = "body{font-family:'Noto Serif','DejaVu Serif',serif;font-size:12pt;margin:0} h1{font-size:22pt} h2{font-size:16pt}"
_CJK_CSS = "body{font-family:'Noto Serif CJK SC','Noto Serif CJK JP',serif}"

ENGLISH = {
    "title": "How rivers carve canyons",
    "lang": "en",
    "heading": "How rivers carve canyons",
    "paragraphs": [
        "Rivers carve canyons by grinding the rock beneath them, grain by grain, over millions of years. "
        "The water itself does little; the sand and pebbles it carries do the cutting.",
        "The Colorado River cut the Grand Canyon about a mile deep while the plateau around it rose. "
        "Uplift steepened the river, and a steeper river cuts faster.",
    ],
    "subheading": "What the layers tell",
    "more": [
        "Floods do most of the work: a single large flood moves more sediment than a decade of calm flow.",
    ],
}
RUSSIAN = {
    "title": "Как реки прорезают каньоны",
    "lang": "ru",
    "heading": "Как реки прорезают каньоны",
    "paragraphs": [
        "Реки прорезают каньоны, стачивая камень под собой песчинка за песчинкой миллионы лет. "
        "Сама вода делает мало: режут песок и галька, которые она несёт.",
        "Река Колорадо прорезала Большой каньон глубиной около полутора километров, пока плато вокруг поднималось.",
    ],
    "subheading": "Что говорят слои",
    "more": [
        "Большую часть работы делают паводки: один сильный паводок переносит больше наносов, чем десятилетие спокойного течения."
    ],
}
CHINESE = {
    "title": "河流如何切割峡谷",
    "lang": "zh-CN",
    "heading": "河流如何切割峡谷",
    "paragraphs": [
        "河流经过数百万年，一粒一粒地磨蚀身下的岩石，切割出峡谷。水本身作用不大，真正切割岩石的是它携带的沙子和卵石。",
        "科罗拉多河切出了大约一英里深的大峡谷，而周围的高原同时在抬升。",
    ],
    "subheading": "岩层告诉我们什么",
    "more": ["大部分工作由洪水完成：一次大洪水搬运的泥沙比十年平静的水流还多。"],
}
JAPANESE = {
    "title": "川はどのように峡谷を刻むか",
    "lang": "ja",
    "heading": "川はどのように峡谷を刻むか",
    "paragraphs": [
        "川は何百万年もかけて、足もとの岩を一粒ずつ削り、峡谷を刻む。水そのものの力は小さく、運ばれる砂や小石が岩を削る。",
        "コロラド川は周りの高原が隆起するあいだに、深さ約一マイルのグランドキャニオンを刻んだ。",
    ],
    "subheading": "地層が語ること",
    "more": ["仕事の大部分は洪水がする。一度の大洪水は、穏やかな流れの十年分よりも多くの土砂を運ぶ。"],
}
ARTICLES = {"article_en": ENGLISH, "article_ru": RUSSIAN, "article_zh": CHINESE, "article_ja": JAPANESE}

TWO_COLUMNS_LEFT = [
    f"Left column sentence {i}: the western rim is cooler and wetter than the eastern rim."
    for i in range(1, 9)
]
TWO_COLUMNS_RIGHT = [
    f"Right column sentence {i}: the eastern rim sees more visitors in the summer months."
    for i in range(1, 9)
]
TABLE_ROWS = [
    ("Layer", "Rock", "Age (million years)"),
    ("Kaibab", "Limestone", "270"),
    ("Coconino", "Sandstone", "275"),
    ("Vishnu", "Schist", "1750"),
]


def article_html(doc: dict) -> str:
    css = _PAGE_CSS + (_CJK_CSS if doc["lang"] in ("zh-CN", "ja") else "")
    paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in doc["paragraphs"])
    more = "".join(f"<p>{html.escape(p)}</p>" for p in doc["more"])
    return (
        f'<!doctype html><html lang="{doc["lang"]}"><head><meta charset="utf-8"><title>{html.escape(doc["title"])}</title>'
        f"<style>{css}</style></head><body><h1>{html.escape(doc['heading'])}</h1>{paragraphs}"
        f"<h2>{html.escape(doc['subheading'])}</h2>{more}</body></html>"
    )


def two_columns_html() -> str:
    left = "".join(f"<p>{html.escape(s)}</p>" for s in TWO_COLUMNS_LEFT)
    right = "".join(f"<p>{html.escape(s)}</p>" for s in TWO_COLUMNS_RIGHT)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Two rims</title>'
        f"<style>{_PAGE_CSS} .cols{{display:flex;gap:48px}} .cols>div{{flex:1}}</style></head><body>"
        f'<h1>Two rims</h1><div class="cols"><div>{left}</div><div>{right}</div></div></body></html>'
    )


def table_html() -> str:
    head, *rows = TABLE_ROWS
    th = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Canyon layers</title>'
        f"<style>{_PAGE_CSS} td,th{{padding:4px 24px;text-align:left}}</style></head><body>"
        f"<h1>Canyon layers</h1><p>The layers from the rim down.</p><table><tr>{th}</tr>{trs}</table></body></html>"
    )


_CLAUSES = (
    "sediment, uplift and time explain most of what a canyon shows",
    "the river keeps cutting while the plateau rises around it",
    "each layer of rock records a sea, a desert or a swamp",
    "a single flood can move more gravel than a calm decade",
    "side canyons grow headward, one rockfall at a time",
)


def long_sentence(page: int, line: int) -> str:
    """A sentence of the long document, unique to its page and line (rule 1)."""
    return f"Page {page} line {line}: {_CLAUSES[(page * 3 + line) % len(_CLAUSES)]}."


def long_html(pages: int, lines: int = 12) -> str:
    body = "".join(
        f'<section style="page-break-after:always"><h2>Chapter {p}</h2>'
        + "".join(f"<p>{long_sentence(p, i)}</p>" for i in range(1, lines + 1))
        + "</section>"
        for p in range(1, pages + 1)
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A long report ({pages} pages)</title>'
        f"<style>{_PAGE_CSS}</style></head><body>{body}</body></html>"
    )


def print_pdf(page, source: str) -> bytes:
    """Chromium's print of `source` (an HTML string) on A4, as the "Save as PDF" destination does."""
    page.set_content(source, wait_until="load")
    page.evaluate("document.fonts.ready")
    return page.pdf(
        format="A4",
        print_background=False,
        margin={"top": "2cm", "bottom": "2cm", "left": "2cm", "right": "2cm"},
    )


def small_sources() -> dict[str, str]:
    sources = {name: article_html(doc) for name, doc in ARTICLES.items()}
    sources["two_columns"] = two_columns_html()
    sources["table"] = table_html()
    return sources


def long_document(page, pages: int) -> bytes:
    return print_pdf(page, long_html(pages))


def fixture(name: str) -> bytes:
    return (FIXTURES / f"{name}.pdf").read_bytes()


# -- bad inputs (rule 3) -------------------------------------------------------------------------


def encrypted(pdf: bytes, password: str = "secret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def truncated(pdf: bytes) -> bytes:
    """The first third of the file: a download cut off mid-way (no cross-reference table, no trailer)."""
    return pdf[: len(pdf) // 3]


def image_only(width: int = 200, height: int = 100) -> bytes:
    """A one-page scan: a grey image and no text operator at all."""
    pixels = zlib.compress(bytes([(x * 255 // width) for _y in range(height) for x in range(width)]))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /XObject << /Im1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
        % (width, height, len(pixels))
        + pixels
        + b"\nendstream",
    ]
    content = b"q 500 0 0 250 47 500 cm /Im1 Do Q"
    objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
    from harness import CHROMIUM_ARGS, chromium_path
    from playwright.sync_api import sync_playwright

    FIXTURES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        for name, source in small_sources().items():
            data = print_pdf(page, source)
            (FIXTURES / f"{name}.pdf").write_bytes(data)
            print(f"{name}.pdf: {len(data):,} bytes")
        browser.close()


if __name__ == "__main__":
    main()
