"""An in-memory WebDAV server as a `Transport` (margin.platform.ports), for sync's unit tests and
bench: PROPFIND (depth 0/1), GET, PUT, DELETE, MKCOL, with ETags, If-Match and If-None-Match as
RFC 4918 / RFC 9110 say, and basic auth.

Fault injection: `fail_after_writes=k` lets k writes (PUT, DELETE, MKCOL) succeed, then the
server "dies" (every request is a connect error) until `revive()`; `answer_next` queues canned
answers (status, body, content type) for the next requests, to play a bad server; `before_write`
is called with each write's path before it is done (a racing device's write, in a test).
`requests` records (method, path) of every request.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from platform_memory import ScriptedResponse

from margin.platform.ports import HttpRequest, TransportError


@dataclass
class FakeDav:
    user: str = "me"
    password: str = "secret"
    files: dict[str, str] = field(default_factory=dict)
    folders: set[str] = field(default_factory=lambda: {"/dav/"})
    fail_after_writes: int | None = None
    answer_next: list[tuple[int, str, str]] = field(default_factory=list)
    before_write: Callable[[str], None] | None = None
    requests: list[tuple[str, str]] = field(default_factory=list)
    writes: int = 0
    bytes_received: int = 0
    # When each file was last written (ms), as PROPFIND's getlastmodified says; `now_ms` stamps it.
    modified: dict[str, int] = field(default_factory=dict)
    now_ms: Callable[[], int] = field(default=lambda: int(time.time() * 1000))
    _dead: bool = False

    def revive(self) -> None:
        self._dead = False
        self.fail_after_writes = None

    def etag(self, path: str) -> str:
        return '"' + hashlib.sha256(self.files[path].encode()).hexdigest()[:16] + '"'

    async def open(self, request: HttpRequest) -> ScriptedResponse:
        path = urlsplit(request.url).path
        self.requests.append((request.method, path))
        if self._dead:
            raise TransportError("connect", "server gone (simulated crash)")
        if self.answer_next:
            status, body, kind = self.answer_next.pop(0)
            return ScriptedResponse(status, [body] if body else [], {"content-type": kind})
        expected = "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            return _answer(401, "<html><body>Unauthorized</body></html>", "text/html")
        if request.method in ("PUT", "DELETE", "MKCOL"):
            if self.fail_after_writes is not None and self.writes >= self.fail_after_writes:
                self._dead = True
                raise TransportError("connect", "server gone (simulated crash)")
            if self.before_write is not None:
                self.before_write(path)
            self.writes += 1
        return getattr(self, "_" + request.method.lower())(path, request)

    def _parent_exists(self, path: str) -> bool:
        return path.rstrip("/").rsplit("/", 1)[0] + "/" in self.folders

    def _conditions(self, path: str, request: HttpRequest) -> ScriptedResponse | None:
        exists = path in self.files
        if request.headers.get("If-None-Match") == "*" and exists:
            return _answer(412, "", "text/plain")
        if_match = request.headers.get("If-Match")
        if if_match is not None and (not exists or self.etag(path) != if_match):
            return _answer(412, "", "text/plain")
        return None

    def _get(self, path: str, request: HttpRequest) -> ScriptedResponse:
        if path not in self.files:
            return _answer(404, "", "text/plain")
        return ScriptedResponse(
            200, [self.files[path]], {"content-type": "application/octet-stream", "etag": self.etag(path)}
        )

    def _put(self, path: str, request: HttpRequest) -> ScriptedResponse:
        if not self._parent_exists(path):
            return _answer(409, "", "text/plain")
        refused = self._conditions(path, request)
        if refused is not None:
            return refused
        created = path not in self.files
        self.files[path] = request.body or ""
        self.modified[path] = self.now_ms()
        self.bytes_received += len(request.body or "")
        return ScriptedResponse(201 if created else 204, [], {"etag": self.etag(path)})

    def _delete(self, path: str, request: HttpRequest) -> ScriptedResponse:
        if self.files.pop(path, None) is None:
            return _answer(404, "", "text/plain")
        return _answer(204, "", "text/plain")

    def _mkcol(self, path: str, request: HttpRequest) -> ScriptedResponse:
        if path in self.folders:
            return _answer(405, "", "text/plain")
        if not self._parent_exists(path):
            return _answer(409, "", "text/plain")
        self.folders.add(path)
        return _answer(201, "", "text/plain")

    def _propfind(self, path: str, request: HttpRequest) -> ScriptedResponse:
        folder = path if path.endswith("/") else path + "/"
        if folder not in self.folders:
            return _answer(404, "", "text/plain")
        rows = [
            f"<d:response><d:href>{folder}</d:href><d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
        ]
        if request.headers.get("Depth") == "1":
            for name, text in self.files.items():
                if name.rsplit("/", 1)[0] + "/" == folder:
                    rows.append(
                        f"<d:response><d:href>{name}</d:href><d:propstat><d:prop><d:getetag>{self.etag(name)}</d:getetag>"
                        f"<d:getcontentlength>{len(text)}</d:getcontentlength>"
                        f"<d:getlastmodified>{email.utils.formatdate(self.modified.get(name, 0) / 1000, usegmt=True)}"
                        "</d:getlastmodified><d:resourcetype/></d:prop>"
                        "<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>"
                    )
        body = '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">' + "".join(rows) + "</d:multistatus>"
        return ScriptedResponse(207, [body], {"content-type": "application/xml"})

    def object_files(self) -> dict[str, str]:
        """The files in Margin's folder, by name."""
        return {p.rsplit("/", 1)[1]: t for p, t in self.files.items() if p.startswith("/dav/margin-sync/")}


def _answer(status: int, body: str, kind: str) -> ScriptedResponse:
    return ScriptedResponse(status, [body] if body else [], {"content-type": kind})
