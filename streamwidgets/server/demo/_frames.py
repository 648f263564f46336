"""What the writers share: SSE framing, compact JSON, ids, and the steps they hand the edge.

Writers are generators of steps (`Frame`, `Stall`, `Cutoff`, the edge's own vocabulary) and know
nothing about sockets or clocks. A `Frame` says how many tokens it delivers, and the edge
schedules it on the token clock (first-token delay plus tokens over rate); `Stall` and `Cutoff`
end a stream without a proper terminator.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any, Optional

from .._edge import Cutoff, Frame, Stall, Step, Steps

__all__ = ["Frame", "Stall", "Cutoff", "Step", "Steps", "sse", "comment", "dumps", "ident", "group_tokens"]


def dumps(payload: Any, *, ascii_only: bool = False, spaced: bool = False) -> str:
    """Compact JSON as providers send it (`spaced` for Python's default separators)."""
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps(payload, ensure_ascii=ascii_only, separators=separators)


def sse(data: str, *, event: Optional[str] = None, prefix: str = "data: ") -> bytes:
    """One SSE event: an optional `event:` line, the `data` line(s), a blank line.

    Built from bytes in one join: the events that repeat a whole answer (Responses' `done`
    events) are megabytes long, and each extra copy of them would cost that much again.
    """
    body = data.encode("utf-8")
    start = prefix.encode()
    if b"\n" in body:
        body = b"\n".join(start + line for line in body.split(b"\n"))
        start = b""
    head = b"event: " + event.encode() + b"\n" if event else b""
    return b"".join((head, start, body, b"\n\n"))


def comment(text: str) -> bytes:
    """An SSE comment line, the heartbeat that carries no event."""
    return f": {text}\n\n".encode() if text else b":\n\n"


def ident(prefix: str, nonce: str, salt: str = "") -> str:
    """An id in a provider's style (`chatcmpl-…`, `call_…`), derived from the script's nonce so
    that a seeded request gets the same ids every time."""
    if not salt:
        return prefix + nonce
    return prefix + hashlib.sha256(f"{nonce}:{salt}".encode()).hexdigest()[:24]


def group_tokens(tokens: Iterable[str], sizes: tuple[int, ...]) -> Iterator[tuple[str, int]]:
    """Merge token pieces into chunks of `sizes` tokens (cycled): (text, token count) pairs,
    made as they are asked for."""
    pieces = iter(tokens)
    for size in itertools.cycle(sizes):
        group = list(itertools.islice(pieces, size))
        if not group:
            return
        yield "".join(group), len(group)
