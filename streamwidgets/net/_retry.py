"""Retry before the first token: which failures, how long to wait, and the loop that waits.

A 429 in a class of thirty is the normal case, not an accident. So a request that the provider
turns away *before any event* — rate limited (429), overloaded (503, Anthropic's 529) — or that
could not connect at all, is sent again, up to `retries` more times. The wait is the provider's own
when it says one (`Retry-After`, `retry-after-ms`, OpenAI's `x-ratelimit-reset-requests`,
Anthropic's `anthropic-ratelimit-requests-reset`, Gemini's `retryDelay`, "try again in 1.2s" in
the message), else an exponential backoff; both get a little jitter so that thirty kernels turned
away together do not come back together. A wait longer than `max_wait` (a daily quota) is not
waited for: the error is shown at once.

Never after the first byte of a stream: a retry then would bill and show the text twice. A stream
that breaks after it started ends as it does today, with the partial answer and Continue.

The policy (`RetryPolicy.delay`, `wait_hint`) is pure; `retrying()` is the async loop a live
source puts around its response reader. While it waits it reports the countdown through the
source's context (`SourceContext.retrying`: the state says why and until when, and the view
counts down); Cancel during the wait is `task.cancel()` as ever, and ends it at once.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..core import ErrorEvent, Item, RetryNote, spent

if TYPE_CHECKING:
    from ._context import SourceContext

__all__ = ["DEFAULT_RETRIES", "RetryPolicy", "RetryNote", "retry_reason", "wait_hint", "retrying"]

#: Tries after the first one, by default: enough for a class's burst, short of hiding an outage.
DEFAULT_RETRIES = 3

#: Why a request is worth sending again, in the words the view shows.
_STATUS_REASONS = {
    429: "rate limited by the provider",
    503: "the provider is overloaded",
    529: "the provider is overloaded",
}
_NETWORK_REASONS = {
    "connect_error": "could not connect",
    "connect_timeout": "could not connect",
}


@dataclass(frozen=True)
class RetryPolicy:
    """How many more tries (`retries`, 0: none), the backoff without a hint (`base` seconds,
    doubling, at most `cap`), and the longest wait worth making (`max_wait`)."""

    retries: int = DEFAULT_RETRIES
    base: float = 1.0
    cap: float = 20.0
    max_wait: float = 60.0

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be a whole number, 0 (no retry) or more, not {self.retries!r}"[:300])

    def delay(self, error: ErrorEvent, tries: int, rng: Callable[[], float] = random.random) -> Optional[float]:
        """Seconds to wait before try `tries + 1`, or None: give up and show the error."""
        if tries > self.retries or retry_reason(error) is None:
            return None
        hint = error.retry_after
        if hint is not None:
            if hint > self.max_wait:
                return None
            return hint + min(1.0, 0.1 * hint + 0.2) * rng()  # a little later than asked, spread out
        backoff = min(self.cap, self.base * 2 ** (tries - 1))
        return backoff * (0.5 + 0.5 * rng())  # "equal jitter": at least half the backoff


def retry_reason(error: ErrorEvent) -> Optional[str]:
    """Why this error is worth another try (the words the countdown shows), or None."""
    if error.http_status is not None:
        if spent(error.code, error.message):  # a 429 that waiting does not cure (`core/_errors.py`)
            return None
        return _STATUS_REASONS.get(error.http_status)
    if isinstance(error.code, str):
        return _NETWORK_REASONS.get(error.code)
    return None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_TRY_AGAIN = re.compile(r"try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)", re.I)
_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def wait_hint(headers: Mapping[str, str], body: bytes = b"", *, now: Optional[float] = None) -> Optional[float]:
    """The wait a provider asks for, in seconds, from whichever way it says it.

    `Retry-After` (seconds or an HTTP date), `retry-after-ms`, OpenAI's and Groq's
    `x-ratelimit-reset-requests` / `-tokens` ("1s", "6m0s", "20ms"), Anthropic's
    `anthropic-ratelimit-*-reset` (an RFC 3339 time), Gemini's `"retryDelay": "12s"` in the error
    body, and "Please try again in 1.2s" in the message (OpenAI, Groq). None when none says.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    now = time.time() if now is None else now
    value = lower.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if _looks_like_date(value) else None
            if when is not None:
                return max(0.0, when.timestamp() - now)
    resets = [
        _duration(lower[name]) for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens") if name in lower
    ]
    for name in ("anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset"):
        if name in lower:
            resets.append(_rfc3339_wait(lower[name], now))
    known = [r for r in resets if r is not None]
    if known:
        return max(known)
    text = body[:65536].decode("utf-8", "replace")
    match = _RETRY_DELAY.search(text) or _TRY_AGAIN.search(text)
    if match:
        return _duration(match.group(1))
    return None


def _looks_like_date(value: str) -> bool:
    return bool(re.search(r"[A-Za-z]{3},", value))


def _duration(value: str) -> Optional[float]:
    """ "6m0s" → 360.0, "20ms" → 0.02, "1.5" → 1.5."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def _rfc3339_wait(value: str, now: float) -> Optional[float]:
    from datetime import datetime

    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


async def retrying(
    attempt: Callable[[], AsyncIterator[Item]],
    policy: RetryPolicy,
    context: SourceContext,
    *,
    clock: Callable[[], float] = time.monotonic,
    rng: Callable[[], float] = random.random,
) -> AsyncGenerator[Item, None]:
    """The items of the first try that is not turned away, or of the last one.

    `attempt()` opens one try (the client's response reader). A try whose first item is a
    retryable error (and nothing else came before it) is closed, the countdown goes to the
    source's `context` (`retrying`), and after the wait a new try begins (`restarted`: the
    state's clock starts again, so that time to first token is the model's, not the queue's, and
    a recording forgets the refused try).
    """
    import anyio  # the async edge only: the policy above needs no event loop

    tries = 1
    since = context.started_at  # the first try's; each later try restarts the state's clock
    while True:
        items = attempt()
        try:
            first = await items.__anext__()
        except StopAsyncIteration:
            return
        error = first[0] if not isinstance(first, bytes) and len(first) == 1 else None
        wait = policy.delay(error, tries, rng) if isinstance(error, ErrorEvent) else None
        if wait is None:
            try:
                yield first
                async for item in items:
                    yield item
            finally:
                aclose = getattr(items, "aclose", None)
                if aclose is not None:
                    await aclose()
            return
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()
        assert isinstance(error, ErrorEvent)
        reason = retry_reason(error) or "turned away"
        context.retrying(
            RetryNote(tries=tries, until=clock() + wait, reason=reason, retries=policy.retries, since=since)
        )
        await anyio.sleep(wait)
        tries += 1
        context.restarted()
        context.retrying(RetryNote(tries=tries, until=None, reason=reason, retries=policy.retries, since=since))
