"""The WebDAV store (RFC 4918) that sync writes to: its requests as data, its answers read.

Invariants:
1. A request is built here as an `HttpRequest` (PROPFIND, GET, PUT, DELETE, MKCOL) with basic
   auth; `exchange` sends it through the platform's transport and reads the whole answer.
2. Every write is conditional: a new object is `If-None-Match: *` (never overwrites), the
   manifest is `If-Match: <its ETag>` (never overwrites a change it has not seen); a 412 is
   `Precondition`, which the engine answers by reading again (margin.sync.engine).
3. Each way a server fails becomes one sentence (`refusal`): 401/403 (user name or password),
   404/409 (no folder there), 507 (out of space), an HTML page where XML was expected (not a
   WebDAV address), a redirect, no answer at all; any other status names its number.
4. A multistatus answer is parsed into `Resource`s (href, ETag, size, last modified, collection?);
   anything that is not a DAV multistatus is rule 3's "not WebDAV".
"""

from __future__ import annotations

import base64
import email.utils
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ..base.errors import MarginError
from ..platform.ports import HttpRequest, Platform, TransportError

FOLDER = "margin-sync/"
DAV = "{DAV:}"
# Seconds to wait for an answer's headers (a big PUT on a slow line is mostly upload time).
TIMEOUT = 120.0


@dataclass(frozen=True)
class Store:
    """Where sync writes: `url` is the folder the user named; Margin's files go in FOLDER under it."""

    url: str
    user: str
    password: str

    @property
    def root(self) -> str:
        return self.url.rstrip("/") + "/" + FOLDER

    def address(self, name: str) -> str:
        return self.root + name

    def headers(self, **more: str) -> dict[str, str]:
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}", **more}


class Precondition(Exception):
    """412: someone wrote first (rule 2)."""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def etag(self) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == "etag"), None)

    @property
    def content_type(self) -> str:
        return next((v for k, v in self.headers.items() if k.lower() == "content-type"), "")


@dataclass(frozen=True)
class Resource:
    href: str
    etag: str | None
    size: int
    modified_ms: int
    collection: bool

    @property
    def name(self) -> str:
        return unquote(self.href.rstrip("/").rsplit("/", 1)[-1])


def _sentence(code: str, key: str, *args: object) -> MarginError:
    return MarginError.said(code, key, *args)


def bad_url() -> MarginError:
    return _sentence("sync_bad_url", "py_error_sync_bad_url")


def check_url(url: str) -> str:
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise bad_url()
    return url


def propfind(store: Store, url: str, depth: int) -> HttpRequest:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><d:propfind xmlns:d="DAV:"><d:prop><d:getetag/>'
        "<d:getcontentlength/><d:getlastmodified/><d:resourcetype/></d:prop></d:propfind>"
    )
    headers = store.headers(Depth=str(depth), **{"Content-Type": "application/xml; charset=utf-8"})
    return HttpRequest("PROPFIND", url, headers, body, TIMEOUT)


def get(store: Store, name: str) -> HttpRequest:
    return HttpRequest("GET", store.address(name), store.headers(), None, TIMEOUT)


def put(store: Store, name: str, body: str, *, etag: str | None) -> HttpRequest:
    """A PUT of `name`: over the version `etag` only, or, with no etag, only when it does not exist."""
    condition = {"If-Match": etag} if etag else {"If-None-Match": "*"}
    headers = store.headers(**{"Content-Type": "application/octet-stream", **condition})
    return HttpRequest("PUT", store.address(name), headers, body, TIMEOUT)


def delete(store: Store, name: str) -> HttpRequest:
    return HttpRequest("DELETE", store.address(name), store.headers(), None, TIMEOUT)


def mkcol(store: Store) -> HttpRequest:
    return HttpRequest("MKCOL", store.root, store.headers(), None, TIMEOUT)


def refusal(answer: Answer) -> MarginError:
    """Rule 3: the sentence for an answer that is not the one asked for."""
    status = answer.status
    if status in (401, 403):
        return _sentence("sync_unauthorized", "py_error_sync_unauthorized")
    if status in (404, 409, 410):
        return _sentence("sync_not_found", "py_error_sync_not_found")
    if status == 507:
        return _sentence("sync_full", "py_error_sync_full")
    if "html" in answer.content_type.lower() or answer.text.lstrip()[:15].lower().startswith(
        ("<!doctype", "<html")
    ):
        return not_webdav()
    return _sentence("sync_http", "py_error_sync_http", str(status))


def not_webdav() -> MarginError:
    return _sentence("sync_not_webdav", "py_error_sync_not_webdav")


async def exchange(platform: Platform, request: HttpRequest, *, ok: tuple[int, ...]) -> Answer:
    """Send `request`, read its whole answer; an answer whose status is not in `ok` raises its
    sentence (rule 3), a 412 raises `Precondition` (rule 2)."""
    try:
        response = await platform.transport.open(request)
        pieces: list[str] = []
        while (chunk := await response.read_chunk()) is not None:
            pieces.append(chunk)
    except TransportError as error:
        if error.kind == "redirect":
            raise _sentence("sync_redirect", "py_error_sync_redirect", error.detail or "?") from None
        raise _sentence("sync_unreachable", "py_error_sync_unreachable", error.kind) from None
    answer = Answer(response.status, dict(response.headers), "".join(pieces))
    if answer.status in ok:
        return answer
    if answer.status == 412:
        raise Precondition()
    raise refusal(answer)


def parse_multistatus(text: str) -> list[Resource]:
    """Rule 4."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        raise not_webdav() from None
    if root.tag != f"{DAV}multistatus":
        raise not_webdav()
    resources = []
    for response in root.findall(f"{DAV}response"):
        href = response.findtext(f"{DAV}href") or ""
        prop = None
        for propstat in response.findall(f"{DAV}propstat"):
            if " 200 " in f" {propstat.findtext(f'{DAV}status') or ''} ":
                prop = propstat.find(f"{DAV}prop")
        if prop is None:
            continue
        size_text = (prop.findtext(f"{DAV}getcontentlength") or "0").strip()
        resources.append(
            Resource(
                href=href,
                etag=prop.findtext(f"{DAV}getetag"),
                size=int(size_text) if size_text.isdigit() else 0,
                modified_ms=_http_date_ms(prop.findtext(f"{DAV}getlastmodified")),
                collection=prop.find(f"{DAV}resourcetype/{DAV}collection") is not None,
            )
        )
    return resources


def _http_date_ms(text: str | None) -> int:
    if not text:
        return 0
    try:
        return int(email.utils.parsedate_to_datetime(text).timestamp() * 1000)
    except (TypeError, ValueError):
        return 0
