"""Web pages on 127.0.0.1 for the page-context tests: an article with navigation noise, a page with
an HTML5 video and its WebVTT captions, a page without text.

Concept: the pages a user attaches, served the way a real site serves them (HTML, `text/vtt`, a
seekable media file with HTTP Range support), with every request recorded so a test can tell
what the extension fetched.
"""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NAV_WORDS = (
    "Subscribe to our newsletter",
    "We use cookies",
    "Home Politics Sport Weather",
    "Related stories",
    "© 2026 Example News",
)

ARTICLE_PARAGRAPHS = [
    "Rivers carve canyons by grinding the rock beneath them, grain by grain, over millions of years.",
    "The Colorado River cut the Grand Canyon about a mile deep while the plateau around it rose.",
    "Floods do most of the work: a single large flood moves more sediment than a decade of calm flow.",
]


def article_html(paragraphs: int = 0) -> str:
    """A news article wrapped in a menu, a cookie banner, a share bar, an aside and a footer.
    `paragraphs` adds filler paragraphs (to make a ~100 KB article for the benchmark)."""
    filler = "".join(
        f"<p>Paragraph {i}: sediment, uplift and time explain most of what a canyon shows; "
        f"geologists read the layers like pages of a book, each one a chapter of erosion.</p>"
        for i in range(paragraphs)
    )
    body = "".join(f"<p>{p}</p>" for p in ARTICLE_PARAGRAPHS)
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>How rivers carve canyons</title>
<meta property="og:site_name" content="Example News"></head><body>
<header class="masthead"><nav><a href="/">Home</a> <a href="/p">Politics</a> <a href="/s">Sport</a> <a href="/w">Weather</a></nav></header>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your experience. <button>Accept</button></div>
<main><article>
<h1>How rivers carve canyons</h1>
<p class="byline">By Ada Rivers</p>
{body}
<h2>What the layers tell</h2>
<ul><li>Sandstone from ancient deserts</li><li>Limestone from shallow seas</li></ul>
<table><thead><tr><th>Layer</th><th>Age (million years)</th></tr></thead>
<tbody><tr><td>Kaibab</td><td>270</td></tr><tr><td>Vishnu schist</td><td>1,750</td></tr></tbody></table>
{filler}
<div class="share-bar">Share on social media</div>
</article></main>
<aside class="related"><h3>Related stories</h3><ul><li><a href="/x">Glaciers</a></li></ul></aside>
<div class="newsletter">Subscribe to our newsletter</div>
<footer>© 2026 Example News</footer>
</body></html>"""


VIDEO_SECONDS = 200


def silent_wav(seconds: int = VIDEO_SECONDS, rate: int = 8000) -> bytes:
    """A silent mono WAV: Chromium plays it in a <video>, and it is seekable over Range requests."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(rate)
        w.writeframes(b"\x80" * (seconds * rate))
    return out.getvalue()


CAPTIONS_VTT = """WEBVTT

NOTE made for the Margin tests

1
00:00:01.000 --> 00:00:04.000
Welcome to the canyon walk.

2
00:00:05.000 --> 00:00:09.000 align:start
<v Guide>Look at the <b>red</b> layer on the left.</v>

3
00:02:05.000 --> 00:02:09.000
Here the river turns east, at two minutes five.
"""


def video_page_html() -> str:
    return """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Canyon walk (video)</title></head><body>
<h1>Canyon walk</h1><p>A short walk along the canyon rim with a guide.</p>
<video id="film" controls preload="auto" src="/media/walk.wav">
  <track kind="captions" srclang="en" label="English" src="/media/walk.en.vtt" default>
</video>
</body></html>"""


EMPTY_PAGE = "<!doctype html><html><head><title>Nothing here</title></head><body><canvas width=300 height=150></canvas></body></html>"


class WebPages:
    """A threaded HTTP server of `pages` (path -> (content type, bytes)); records the paths asked for."""

    def __init__(
        self,
        extra: dict[str, tuple[str, bytes]] | None = None,
        *,
        redirects: dict[str, str] | None = None,
        cors: set[str] | frozenset[str] = frozenset(),
        slow: dict[str, float] | None = None,
    ):
        """`redirects`: path -> URL answered with a 302; `cors`: paths answered with
        `Access-Control-Allow-Origin: *` (no other path sends any CORS header); `slow`: path ->
        seconds the body waits after the headers (a download still under way)."""
        self.pages: dict[str, tuple[str, bytes]] = {
            "/article.html": ("text/html; charset=utf-8", article_html().encode()),
            "/video.html": ("text/html; charset=utf-8", video_page_html().encode()),
            "/media/walk.wav": ("audio/wav", silent_wav()),
            "/media/walk.en.vtt": ("text/vtt; charset=utf-8", CAPTIONS_VTT.encode()),
            "/empty.html": ("text/html; charset=utf-8", EMPTY_PAGE.encode()),
            **(extra or {}),
        }
        self.requested: list[str] = []
        self._lock = threading.Lock()
        pages, requested, lock = self.pages, self.requested, self._lock
        moved, shared, waits = dict(redirects or {}), frozenset(cors), dict(slow or {})

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].split("#", 1)[0]
                with lock:
                    requested.append(path)
                if path in moved:
                    self.send_response(302)
                    self.send_header("Location", moved[path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if path not in pages:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                kind, data = pages[path]
                start, end = 0, len(data) - 1
                match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
                if match and (match.group(1) or match.group(2)):
                    if match.group(1):
                        start = int(match.group(1))
                        end = min(int(match.group(2)), end) if match.group(2) else end
                    else:
                        start = max(0, len(data) - int(match.group(2)))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Type", kind)
                if path in shared:
                    self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(end - start + 1))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    if path in waits:
                        self.wfile.write(data[start : start + 1024])
                        self.wfile.flush()
                        time.sleep(waits[path])
                        start += 1024
                    self.wfile.write(data[start : end + 1])

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> WebPages:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def requests_for(self, path: str) -> int:
        with self._lock:
            return self.requested.count(path)
