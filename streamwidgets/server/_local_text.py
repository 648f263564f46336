"""From token bytes to the text and logprobs of OpenAI's chunks: UTF-8 and stop sequences.

Pure. A token may end in the middle of a character (an emoji is often two or three tokens), so
text is decoded incrementally and a chunk carries only whole characters. A stop sequence may
span tokens, so the tokens that could be its beginning are held back until it is clear; the
answer then ends before the stop sequence, which is never sent, as OpenAI does. Text and
logprobs travel together: every chunk carries the whole tokens whose text it holds.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["Piece", "TextStream", "token_text", "logprob_entry"]


def token_text(piece: bytes) -> str:
    """A token as OpenAI names it: its text, or `bytes:\\xe2\\x80` for part of a character."""
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(f"\\x{b:02x}" for b in piece)


def logprob_entry(piece: bytes, logprob: float, top: Sequence[tuple[bytes, float]]) -> dict[str, Any]:
    """One element of `choices[0].logprobs.content`, in OpenAI's shape."""
    return {
        "token": token_text(piece),
        "logprob": logprob,
        "bytes": list(piece),
        "top_logprobs": [{"token": token_text(p), "logprob": lp, "bytes": list(p)} for p, lp in top],
    }


@dataclass
class Piece:
    """What one chunk carries: text and the logprob entries of its tokens."""

    text: str = ""
    logprobs: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.text or self.logprobs)


class TextStream:
    """Turns sampled tokens into chunks, holding back what may be the start of a stop sequence."""

    def __init__(self, stops: Sequence[str] = ()) -> None:
        self._stops = tuple(s for s in stops if s)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        #: Tokens not sent yet: (their text, their logprob entry or None).
        self._held: list[tuple[str, Optional[dict[str, Any]]]] = []
        self.stopped = False

    def feed(self, piece: bytes, entry: Optional[dict[str, Any]] = None) -> Piece:
        """Add one token; return what can be sent now. After a stop sequence, `stopped` is True
        and the rest of the answer is dropped."""
        if self.stopped:
            return Piece()
        self._held.append((self._decoder.decode(piece), entry))
        if not self._stops:
            return self._release(len(self._held))
        text = "".join(t for t, _ in self._held)
        found = [i for i in (text.find(s) for s in self._stops) if i >= 0]
        if found:
            self.stopped = True
            return self._release_until(min(found))
        # Hold back the shortest run of last tokens that covers every possible stop beginning.
        keep = max((k for s in self._stops for k in range(1, len(s)) if text.endswith(s[:k])), default=0)
        count, covered = len(self._held), 0
        while count > 0 and covered < keep:
            count -= 1
            covered += len(self._held[count][0])
        return self._release(count)

    def finish(self) -> Piece:
        """Everything still held (the answer ended without a stop sequence)."""
        if self.stopped:
            return Piece()
        tail = self._decoder.decode(b"", final=True)
        if tail:
            self._held.append((tail, None))
        return self._release(len(self._held))

    def _release(self, count: int) -> Piece:
        out = Piece("".join(t for t, _ in self._held[:count]), [e for _, e in self._held[:count] if e is not None])
        del self._held[:count]
        return out

    def _release_until(self, end: int) -> Piece:
        """The text before character `end` and the entries of the tokens that hold any of it."""
        out, position = Piece(), 0
        for text, entry in self._held:
            if position >= end:
                break
            out.text += text[: max(0, end - position)]
            if entry is not None:
                out.logprobs.append(entry)
            position += len(text)
        self._held.clear()
        return out
