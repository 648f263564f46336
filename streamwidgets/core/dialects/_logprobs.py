"""Token log-probabilities, read from any dialect that sends them, and asked for in each one's words.

OpenAI chat chunks (and every server that copies them: llama.cpp's, vLLM, the local model) carry
`choices[0].logprobs.content[]`; a Responses `response.output_text.delta` carries `logprobs[]`
when the request asked for them. Both list entries of the same shape: `token`, `logprob`,
`bytes` (the token's UTF-8 bytes, which may end in the middle of a character) and
`top_logprobs[]` (the same three fields); Gemini's `logprobsResult` is read into the same shape
(`_gemini.py`). Anthropic's Messages API has no log-probabilities.

The texts of the tokens read here always join to the answer text they came with: a token's
text is decoded from its bytes, carrying a character split between two tokens over to the token
that completes it; a server whose tokens do not add up to its text gets one token for the whole
delta (its log-probabilities summed: the chance of that run of tokens) and one warning.
"""

from __future__ import annotations

import codecs
import math
from collections.abc import Callable, Mapping
from typing import Any, Optional, Union

from .._events import Problem, Token, TokenLogprobs

__all__ = ["LogprobReader", "MAX_TOP_LOGPROBS", "LOGPROBS_INCLUDE", "logprob_params", "asked_alternatives"]

#: What OpenAI accepts for `top_logprobs` (and so the most alternatives kept per token).
MAX_TOP_LOGPROBS = 20
#: The Responses `include` value that adds log-probabilities to the text deltas.
LOGPROBS_INCLUDE = "message.output_text.logprobs"
#: Characters of one alternative's text kept (a token is a few characters; a hostile peer's is not).
_MAX_TOKEN_CHARS = 64
#: OpenAI sends -9999.0 for a token it could not score; kept as "practically 0".
_FLOOR = -9999.0

_MISMATCH = (
    "the log-probabilities sent with the answer did not add up to its text; those tokens are shown "
    "as one (their chances multiplied)"
)


def logprob_params(params: Mapping[str, Any], write: Callable[[dict[str, Any], int], None]) -> dict[str, Any]:
    """`params` with `logprobs=N` (0-20 alternatives per token) written by `write` in one API's
    fields (each dialect's `build_body` passes its own). A boolean `logprobs` is chat's own field
    and passes as it is. Checked before: `check_logprobs`."""
    value = params.get("logprobs")
    if value is None or isinstance(value, bool):
        return dict(params)
    out = {k: v for k, v in params.items() if k != "logprobs"}
    write(out, value)
    return out


def asked_alternatives(params: Mapping[str, Any]) -> Optional[int]:
    """How many alternatives per token a request's `params` ask for: `logprobs=N`, or chat's own
    `top_logprobs` (0 to `MAX_TOP_LOGPROBS`); None when they name no number (`logprobs=True`)."""
    value = params.get("top_logprobs")
    if value is None:
        value = params.get("logprobs")
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return min(MAX_TOP_LOGPROBS, max(0, value))


def check_logprobs(value: Any, api: Any) -> None:
    """Refuse `logprobs=` that no request to `api` (a dialect class) could carry, before anything
    is sent: a number out of range, or an API that has no log-probabilities."""
    if value is None or value is False:
        return
    if not api.logprobs:
        raise ValueError(
            f"logprobs= cannot be asked of the {api.title} API: it sends no token log-probabilities "
            "(use a chat or responses API, the local model or the offline demo)"
        )
    if value is True:
        return
    if not isinstance(value, int) or not 0 <= value <= MAX_TOP_LOGPROBS:
        raise ValueError(
            f"logprobs= is how many alternatives to show per token, a whole number from 0 to {MAX_TOP_LOGPROBS}, "
            f"not {value!r}"
        )


class LogprobReader:
    """Reads the logprob entries of one stream; keeps the bytes of a character split between tokens.

    `alternatives` is the most alternatives kept per token: what the request asked for
    (`logprobs=N`, `asked_alternatives`), since a server may send more — 20 per token when 5 were
    asked is ~4 kB per token kept for nothing; `MAX_TOP_LOGPROBS` when the request named no number.
    The most likely are kept."""

    __slots__ = ("_alternatives", "_decoder", "_warned")

    def __init__(self, alternatives: Optional[int] = None) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._warned = False
        self._alternatives = MAX_TOP_LOGPROBS if alternatives is None else min(MAX_TOP_LOGPROBS, max(0, alternatives))

    def read(self, entries: Any, text: str) -> list[Union[TokenLogprobs, Problem]]:
        """The tokens of `entries` (a logprob list) that came with `text`; [] when there are none."""
        if not isinstance(entries, list) or not entries:
            return []
        tokens: list[Token] = []
        decoder = self._decoder
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            logprob = _logprob(entry.get("logprob"))
            if logprob is None:
                continue
            raw = _bytes(entry.get("bytes"))
            if raw is not None:
                piece = decoder.decode(raw)
            else:
                token = entry.get("token")
                piece = token if isinstance(token, str) else ""
            tokens.append(Token(piece, logprob, _top(entry.get("top_logprobs"), self._alternatives)))
        if not tokens:
            return []
        if "".join(token.text for token in tokens) == text:
            return [TokenLogprobs(tuple(tokens))]
        # Another server's spelling of the same text (or a peer that sends no bytes): one token for
        # the delta keeps the view's text the answer's text, its chance the product of theirs.
        decoder.reset()
        if not text:
            return []
        out: list[Union[TokenLogprobs, Problem]] = [
            TokenLogprobs((Token(text, max(_FLOOR, sum(t.logprob for t in tokens))),))
        ]
        if not self._warned:
            self._warned = True
            out.append(Problem(_MISMATCH))
        return out


def _logprob(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return min(0.0, max(_FLOOR, float(value)))


def _bytes(value: Any) -> Optional[bytes]:
    if not isinstance(value, list):
        return None
    try:
        return bytes(value)
    except (TypeError, ValueError):  # not a list of 0-255
        return None


def _top(value: Any, keep: int = MAX_TOP_LOGPROBS) -> tuple[tuple[str, float], ...]:
    """The `keep` most likely alternatives of a token, most likely first (of the first
    `MAX_TOP_LOGPROBS` sent: a peer that sends a million reads no more than that)."""
    if not isinstance(value, list) or keep <= 0:
        return ()
    out: list[tuple[str, float]] = []
    for entry in value[:MAX_TOP_LOGPROBS]:
        if not isinstance(entry, dict):
            continue
        logprob = _logprob(entry.get("logprob"))
        if logprob is None:
            continue
        raw = _bytes(entry.get("bytes"))
        token = entry.get("token")
        text = raw.decode("utf-8", "replace") if raw is not None else token if isinstance(token, str) else ""
        out.append((text[:_MAX_TOKEN_CHARS], logprob))
    out.sort(key=lambda pair: -pair[1])
    return tuple(out[:keep])
