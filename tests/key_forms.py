"""A sentinel key, every form it can leak in, and a server that quotes it back.

The key has the characters that change under URL-encoding, JSON-escaping and base64, so a leak
is found whichever way it was written down. `echo_replies()` scripts a `HostileServer` whose
401 bodies quote the key header each API was sent, as many providers do. Shared by the leak
tests in `tests/net/` and the ones in a real kernel in `tests/kernel/`.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

from support.hostile import JSON, Reply

#: A key with the characters that change under URL-encoding, JSON-escaping and base64.
KEY = "sk-leak/SENTINEL+0123456789=abcdef"
HEADER = {"chat": "authorization", "responses": "authorization", "messages": "x-api-key"}
PATH = {"chat": "chat/completions", "responses": "responses", "messages": "messages"}
APIS = tuple(PATH)


def forms(key: str = KEY) -> set[str]:
    raw = key + "\n"
    return {
        key,
        quote(key, safe=""),
        json.dumps(key)[1:-1],
        base64.b64encode(key.encode()).decode(),
        base64.b64encode(f"Bearer {key}".encode()).decode(),
        repr(raw.encode()),  # how the HTTP library quotes a header it refuses: b'...\n'
        json.dumps(raw)[1:-1],
    }


def assert_nowhere(texts: dict[str, str]) -> None:
    for where, text in texts.items():
        for form in forms():
            assert form not in text, f"the key ({form!r}) leaked into {where}"


def echo_replies() -> dict[str, Reply]:
    """For each API, a 401 at `/echo/<api>/v1/...` whose body quotes the key header it was sent."""
    return {
        f"/echo/{api}/v1/{PATH[api]}": Reply(status="401 Unauthorized", headers=JSON, echo=HEADER[api]) for api in APIS
    }
