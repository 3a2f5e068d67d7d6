"""An API key over plain `http://`: which hosts are this machine, and when a key may go unencrypted.

Rules:
1. A host is local when the browser would connect to this machine: `localhost` or a name ending
   in `.localhost` (a trailing dot allowed), an IPv4 address in 127.0.0.0/8 in any form the
   browser's URL parser accepts (`127.1`, `0x7f.0.0.1`, `2130706433`), or `[::1]` (also written
   long, or as the IPv4-mapped `[::ffff:127.0.0.1]`). The host is read the way the browser reads
   it (`target_host`): tabs and newlines dropped, `\\` taken as `/`, the user-info before `@`
   skipped, percent escapes decoded, so `http://localhost@evil.com` and
   `http://evil.com\\@localhost` are evil.com. Anything unclear (non-ASCII, a zone id, an
   unparsable number) is not local: the check errs towards refusing.
2. A provider with an API key whose Base URL is `http://` to a host that is not local is refused,
   unless the provider carries `allowPlainHttpKey: true` (the options page's checkbox "Send the
   API key over plain HTTP"). A keyless provider (Ollama or LM Studio on a LAN) is never refused.
3. It is checked twice with the same function: when the options are saved (`options.save`,
   code `key_over_http`, the sentence names the provider) and before every request leaves
   (`providers.streaming.send`, the same code, so nothing is sent), which also covers providers
   stored before this rule or restored from a backup.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import unquote

from ..base.errors import MarginError, ProviderError
from ..base.sentences import Sentence, sentence

ALLOW_FIELD = "allowPlainHttpKey"

_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def scheme_and_host(url: str) -> tuple[str, str]:
    """(scheme, host) as the browser's URL parser would read them; host lowercased, no port."""
    text = url.strip(_C0_AND_SPACE)
    text = re.sub(r"[\t\n\r]", "", text)
    match = _SCHEME.match(text)
    if not match:
        return "", ""
    scheme = match.group(1).lower()
    rest = text[match.end() :].replace("\\", "/").lstrip("/")
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    host = authority.rsplit("@", 1)[-1]
    if host.startswith("["):
        host = host[: host.find("]") + 1] if "]" in host else host
    else:
        host = host.split(":", 1)[0]
    return scheme, unquote(host).lower()


def target_host(url: str) -> str:
    return scheme_and_host(url)[1]


def _ipv4_number(part: str) -> int | None:
    base = 10
    if part[:2] in ("0x", "0X"):
        part, base = part[2:], 16
        if not part:
            return 0
    elif len(part) > 1 and part.startswith("0"):
        part, base = part[1:], 8
    try:
        return int(part, base) if re.fullmatch(r"[0-9a-fA-F]+", part) else None
    except ValueError:
        return None


def _ipv4(host: str) -> int | None:
    """The WHATWG URL parser's IPv4 reading of `host`, or None when it is not one."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":  # "127.0.0.1." is an address too
        parts.pop()
    if not parts or len(parts) > 4 or "" in parts:
        return None
    numbers = [_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    head, last = numbers[:-1], numbers[-1]
    assert last is not None
    if any(n is None or n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, number in enumerate(head):
        assert number is not None
        value += number * 256 ** (3 - index)
    return value


def is_local_host(host: str) -> bool:
    """Rule 1, for a host as `target_host` gives it."""
    if not host or not host.isascii():
        return False
    if host.startswith("["):
        inner = host[1:-1] if host.endswith("]") else ""
        if "%" in inner:
            return False
        try:
            address = ipaddress.IPv6Address(inner)
        except ValueError:
            return False
        mapped = address.ipv4_mapped
        return mapped.is_loopback if mapped is not None else address.is_loopback
    name = host[:-1] if host.endswith(".") else host
    if name == "localhost" or name.endswith(".localhost"):
        return True
    number = _ipv4(host)
    return number is not None and number >> 24 == 127


def key_exposed(provider: dict[str, Any], url: str | None = None) -> str | None:
    """Rule 2: the host an API key would go to unencrypted (and unconfirmed), or None when fine."""
    if not str(provider.get("apiKey") or "").strip() or provider.get(ALLOW_FIELD) is True:
        return None
    scheme, host = scheme_and_host(url if url is not None else str(provider.get("baseUrl") or ""))
    if scheme != "http" or is_local_host(host):
        return None
    return host


def _named(host: str) -> str | Sentence:
    return host or sentence("py_error_unknown_host")


def refused_at_save(provider: Sentence, host: str) -> MarginError:
    """`provider` names it (its position and name); the sentence quotes the checkbox (rule 2)."""
    return MarginError.said("key_over_http", "py_error_key_over_http_at_save", provider, _named(host))


def refused_at_request(host: str) -> ProviderError:
    return ProviderError.said("key_over_http", "py_error_key_over_http", _named(host))
