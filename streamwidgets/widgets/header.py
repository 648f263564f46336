"""The header line: who answers (model, API, provider), what is happening now, and how fast.

A person waiting for an answer first wants to know that something is happening: the status has a
pulsing dot (a CSS animation, so it costs no messages) and counts the server's keep-alives. The
API is named because three views of one model through chat, responses and messages would
otherwise look the same. A note (such as "offline: the embedded provider stands in") goes on a
line of its own, so that a long one never pushes the buttons out of the header row.
"""

from __future__ import annotations

import math
from typing import Optional

from .. import formatting
from ..formatting import STATUS_WORDS
from ..markdown import escape_html
from ..state import StreamState
from .sync import Parts, set_traits
from .traffic import Cost

__all__ = ["Header", "header_html"]

#: The status word shown for each `StreamState.phase`.

_LIVE = frozenset({"waiting", "thinking", "answering"})
_MAX_NAME = 80


def live_elapsed(state: StreamState, now: Optional[float]) -> Optional[float]:
    """Seconds since the request, counted on the caller's clock while the stream runs.

    The state only knows the time of its last event, so during a silent wait the header counts
    from `now` — but only when `now` is plausibly on the clock the client stamped the state with.
    """
    if state.done or now is None or state.started_at is None:
        return state.elapsed
    since = now - state.started_at
    return since if 0 <= since < 86400 else state.elapsed


def retry_words(state: StreamState, now: Optional[float], word: str) -> str:
    """The status word with the retries in it (`retry.py`): the countdown while a turned-away try
    waits ("rate limited by the provider — retrying in 12 s"), then how many tries it took."""
    retry = state.retry
    if retry is None:
        return word
    if not state.done and retry.until is not None:
        left = math.ceil(retry.until - now) if now is not None else 0
        when = f"in {left} s" if left > 0 else "now"
        return f"{retry.reason} — retrying {when} (try {retry.tries + 1} of {retry.retries + 1})"
    return f"{word} · after {retry.tries} tries" if retry.tries > 1 else word


def header_html(
    state: StreamState,
    *,
    now: Optional[float] = None,
    model: Optional[str] = None,
    provider: Optional[str] = None,
    api: Optional[str] = None,
    part: int = 1,
    note: Optional[str] = None,
    badge: Optional[str] = None,
) -> str:
    """The header's HTML. Model and provider names come from the stream, so they are escaped.

    `badge` ("offline demo", "replay") says up front where the answer comes from, so that a
    stand-in is never mistaken for the real provider; `note` explains it on a line of its own.
    """
    phase = state.phase
    live = phase in _LIVE
    items = []
    if badge:
        items.append(f'<span class="sw-badge">{escape_html(formatting.shorten(badge, _MAX_NAME))}</span>')
    name = state.model or model
    api_html = f'<span class="sw-api">{escape_html(formatting.shorten(api, _MAX_NAME))}</span>' if api else ""
    if name:
        shown = escape_html(formatting.shorten(name, _MAX_NAME))
        items.append(f'<span class="sw-model">{shown}{" · " + api_html if api_html else ""}</span>')
    elif api_html:
        items.append(api_html)
    who = provider or state.provider  # the caller's label (a custom server's host) says more
    if who and who != name:
        items.append(f'<span class="sw-provider">via {escape_html(formatting.shorten(who, _MAX_NAME))}</span>')
    word = STATUS_WORDS.get(phase, phase)
    if phase == "complete" and state.finish == "length":
        word = "done · token limit reached"
    word = retry_words(state, now, word)
    pulse = '<span class="sw-pulse"></span>' if live else ""
    items.append(
        f'<span class="sw-status sw-status-{escape_html(phase)}" role="status">{pulse}{escape_html(word)}</span>'
    )
    if part > 1:
        items.append(f'<span class="sw-part">part {part}</span>')
    metrics = []
    elapsed = live_elapsed(state, now)
    if elapsed is not None:
        metrics.append(formatting.seconds(elapsed, live=live))
    ttft = state.time_to_first_token
    if ttft is not None:
        metrics.append(f"first token {formatting.seconds(ttft)}")
    tps = state.tokens_per_second
    if tps is not None:
        metrics.append(formatting.rate(tps))
    if metrics:
        items.append(f'<span class="sw-metrics">{" · ".join(metrics)}</span>')
    if live and state.heartbeats:
        plural = "" if state.heartbeats == 1 else "s"
        items.append(
            f'<span class="sw-alive">server alive · {formatting.count(state.heartbeats)} keepalive{plural}</span>'
        )
    line = f'<div class="sw-header-line">{"".join(items)}</div>'
    if note:
        line += f'<div class="sw-header-note">{escape_html(formatting.shorten(note, 300))}</div>'
    return line


class Header:
    """The header pane: one `HTML` widget, redrawn at the slow rate or when the phase changes.

    It is made with its first look (`html`), so that the view's first frame need not send it.
    """

    def __init__(self, parts: Parts, html: str) -> None:
        self.widget = parts.html("sw-header", value=html)

    def show(self, html: str) -> Cost:
        """Show `header_html(...)` (nothing is sent when it did not change)."""
        return set_traits(self.widget, value=html)
