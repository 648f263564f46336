"""Keys out of every text that leaves the library, in every form a peer may echo them back.

A provider that refuses a key often quotes it: as sent, JSON-escaped (`\\u0073k-…`), %-encoded, as
HTML entities in an error page, inside the base64 of a `Basic user:key` header, in a redirect's
`Location`. `Redactor` knows one key in all those forms and removes it from text and bytes; for
text it also looks through the encodings (HTML entities, %-escapes, `\\u` escapes) and, when
decoding reveals the key, returns the decoded text with the key removed. `scrub` removes anything
shaped like a key from a text no request saw (the last line of defence).
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable
from urllib.parse import quote, quote_plus, unquote

__all__ = ["MASK", "Redact", "Redactor", "ByteRedactor", "scrub", "unchanged"]

MASK = "***"

#: What takes a key out of a text before it is shown (`StreamRequest.redact`, `StreamHandle.redact`).
Redact = Callable[[str], str]

#: Key-shaped: an OpenAI/Anthropic-style `sk-…` token, and whatever follows `Bearer ` — each as
#: far as a token's characters go (RFC 7235's token68: letters, digits, -._~+/ and trailing =),
#: never further (a `;` or a quote after it stays).
_KEYLIKE = re.compile(r"\bsk-[A-Za-z0-9._~+/\-]{8,}=*|(?<=Bearer )[A-Za-z0-9._~+/\-]+=*")
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def scrub(text: str) -> str:
    """Hide anything shaped like an API key."""
    return _KEYLIKE.sub(MASK, text)


def unchanged(text: str) -> str:
    """The redaction of a stream that has no key."""
    return text


class Redactor:
    """One key, removed from text and bytes in every form it may come back in.

    Keys shorter than 4 characters are not looked for: they would mask ordinary words.
    """

    def __init__(self, key: str) -> None:
        self.key = key if len(key) >= 4 else ""
        self._forms = sorted(_forms(self.key), key=len, reverse=True) if self.key else []
        self._bytes = [form.encode("utf-8") for form in self._forms]
        #: The longest form, in bytes: what a stream of bytes must hold back to find one cut in two.
        self.longest = max((len(form) for form in self._bytes), default=0)

    def __bool__(self) -> bool:
        return bool(self.key)

    def text(self, text: str) -> str:
        """`text` without the key in any form; decoded where only its decoding showed the key."""
        if not self.key or not text:
            return text
        for form in self._forms:
            if form in text:
                text = text.replace(form, MASK)
        for decode in (html.unescape, unquote, _unescape_u):
            decoded = decode(text)
            if decoded != text and self.key in decoded:
                text = decoded.replace(self.key, MASK)
        return text

    def bytes(self, data: bytes) -> bytes:
        """`data` without the key in any of its forms (a body as it came, a recorded read)."""
        if not self.key:
            return data
        for form in self._bytes:
            if form in data:
                data = data.replace(form, MASK.encode())
        return data

    def __repr__(self) -> str:
        return f"<Redactor of a {len(self.key)}-character key>" if self.key else "<Redactor of no key>"


class ByteRedactor:
    """A `Redactor` over a stream of byte chunks: a form cut in two by a read is still found,
    because the last `longest - 1` bytes wait for the next chunk (or `flush()`)."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        if not self._redactor:
            return chunk
        data = self._redactor.bytes(self._held + chunk)
        keep = self._redactor.longest - 1
        if keep <= 0 or len(data) <= keep:
            self._held = data
            return b""
        self._held = data[-keep:]
        return data[:-keep]

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return self._redactor.bytes(held)


def _unescape_u(text: str) -> str:
    return _U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text) if "\\u" in text else text


def _forms(key: str) -> set[str]:
    raw = key.encode("utf-8")
    forms = {
        key,
        quote(key, safe=""),
        quote_plus(key, safe=""),
        "".join(f"%{b:02X}" for b in raw),
        "".join(f"%{b:02x}" for b in raw),
        json.dumps(key)[1:-1],
        json.dumps(key, ensure_ascii=False)[1:-1],
        "".join(f"\\u{ord(c):04x}" for c in key),
        "".join(f"\\u{ord(c):04X}" for c in key),
        "".join(f"&#{ord(c)};" for c in key),
        "".join(f"&#x{ord(c):x};" for c in key),
        "".join(f"&#X{ord(c):X};" for c in key),
        html.escape(key),
    }
    for form in _base64_forms(raw):
        forms.add(form)
        forms.add(form.translate(str.maketrans("+/", "-_")))  # base64url
    return {form for form in forms if form}


def _base64_forms(raw: bytes) -> list[str]:
    """The part of the key's base64 that does not depend on what surrounds it, at each of the
    three alignments it can have inside a longer base64 text (`Basic base64(user:key)`)."""
    forms = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
        start = (0, 2, 3)[offset]
        whole, tail = divmod(offset + len(raw), 3)
        end = whole * 4 + (0, 1, 2)[tail]
        forms.append(encoded[start:end])
    return forms
