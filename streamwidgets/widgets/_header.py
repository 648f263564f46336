"""The header line: who answers (model, API, provider), what is happening now, and how fast.

A person waiting for an answer first wants to know that something is happening: the status has a
pulsing dot (a CSS animation, so it costs no messages) and counts the server's keep-alives. The
API is named because three views of one model through chat, responses and messages would
otherwise look the same. A note (such as "offline: the embedded provider stands in") goes on a
line of its own, so that a long one never pushes the buttons out of the header row.
"""

from __future__ import annotations

import math
import uuid
from typing import Optional

from ..core import Redact, StreamState, formatting, unchanged
from ..markdown import escape_html
from ..net import Labels, script_note
from ._sync import Parts, set_traits
from ._traffic import NOTHING, Cost

__all__ = ["Header", "header_html", "Announcer", "announcement", "css_string", "CSS"]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
/* The status region is read by screen readers and drawn for nobody (the header shows the same
   phase): clipped, not `display: none`, which would take it out of the accessibility tree. */
.sw-view .sw-announce {
  position: absolute !important; width: 1px; height: 1px; margin: -1px; padding: 0; border: 0;
  overflow: hidden; clip-path: inset(50%); white-space: nowrap;
}
.sw-header { flex: 1 1 auto; min-width: 0; }
.sw-header-line {
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--sw-ui-size);
  color: var(--jp-ui-font-color2, inherit);
  display: flex; flex-wrap: wrap; gap: 0 0.9em; align-items: center; align-content: center;
  min-height: calc(var(--sw-scale, 1) * var(--jp-widgets-inline-height, 28px));
  line-height: 1.6;
}
.sw-header-note {
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--sw-small-size);
  color: var(--jp-ui-font-color2, inherit);
  line-height: 1.4; margin: -2px 0 4px 0;
}
.sw-model { color: var(--jp-ui-font-color1, inherit); font-weight: 600; }
.sw-api { font-weight: normal; }
.sw-badge {
  font-weight: 600;
  text-transform: uppercase;
  letter-spacing: 0.04em;
  font-size: var(--sw-small-size);
  padding: 0 6px;
  border-radius: 3px;
  color: var(--sw-badge-text);
  background: var(--sw-warn);
}
.sw-provider { color: var(--jp-ui-font-color2, inherit); }
.sw-status { font-weight: 600; }
.sw-status-waiting, .sw-status-thinking, .sw-status-answering { color: var(--sw-live); }
.sw-status-complete { color: var(--sw-ok); }
.sw-status-cancelled { color: var(--jp-ui-font-color2, inherit); }
.sw-status-incomplete { color: var(--sw-warn); }
.sw-status-error { color: var(--sw-error); }
.sw-pulse {
  display: inline-block; width: 0.55em; height: 0.55em; margin-right: 0.35em;
  border-radius: 50%; background: currentColor; vertical-align: middle;
  animation: sw-pulse 1.2s ease-in-out infinite;
}
@keyframes sw-pulse { 0%, 100% { opacity: 0.25; } 50% { opacity: 1; } }
@media (prefers-reduced-motion: reduce) { .sw-pulse { animation: none; } }
.sw-metrics, .sw-alive { color: var(--jp-ui-font-color2, inherit); }
"""

#: The status word shown for each `StreamState.phase`.

_LIVE = frozenset({"waiting", "thinking", "answering"})
_MAX_NAME = 80
_MAX_SAID = 160


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
    """The status word with the retries in it (`net/_retry.py`): the countdown while a turned-away try
    waits ("rate limited by the provider — retrying in 12 s"), then how many tries it took."""
    retry = state.retry
    if retry is None:
        return word
    if not state.done and retry.until is not None:
        left = math.ceil(retry.until - now) if now is not None else 0
        when = f"in {left} s" if left > 0 else "now"
        return f"{retry.reason} — retrying {when} (try {retry.tries + 1} of {retry.retries + 1})"
    if retry.tries <= 1:
        return word
    took = retry.took(state)
    return f"{word} · after {retry.tries} tries" + (f" over {formatting.seconds(took)}" if took is not None else "")


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
    word = formatting.STATUS_WORDS.get(phase, phase)
    if phase == "complete" and state.finish == "length":
        word = "done · token limit reached"
    word = retry_words(state, now, word)
    pulse = '<span class="sw-pulse"></span>' if live else ""
    items.append(f'<span class="sw-status sw-status-{escape_html(phase)}">{pulse}{escape_html(word)}</span>')
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
    """The header pane: one `HTML` widget with the labels of the stream (`labels`: model, provider,
    API, note, badge), its status and timings, and the words of the view's status region
    (`announcer`). The scheduler draws it at the slow rate, and at once when the phase changes.

    It is made with its first look, so that the view's first frame need not send it.

    `end_said_later` (set by `show()`, which draws the output anew when the stream ends): the
    status region then says how the stream ended only when `say_end()` is called a moment later,
    so that the words change in the region the page goes on showing, not in the one it is taking
    away. `redact` takes keys out of the provider's words before they are said.
    """

    def __init__(
        self, parts: Parts, labels: Labels, state: StreamState, now: float, redact: Redact = unchanged
    ) -> None:
        self.labels = labels
        self.redact = redact
        # What a screen reader hears: once per phase, never per token (see `Announcer`).
        self.announcer = Announcer(parts)
        self.end_said_later = False
        self._said = ""
        self._state = state
        self._end_said = False
        self.widget = parts.html("sw-header", value=self._html(state, now))

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        """Show the header for `state` at `now` (nothing is sent when it did not change)."""
        return set_traits(self.widget, value=self._html(state, now))

    def say_end(self, state: StreamState, now: float) -> Cost:
        """Let the status region say how `state` ended (see `end_said_later`), once."""
        if self._end_said or not state.done:
            return NOTHING
        self._end_said = True
        return self.draw(state, now, True)

    def _html(self, state: StreamState, now: float) -> str:
        if state is not self._state:  # a new part: its end is still to be said
            self._state, self._end_said = state, False
        labels = self.labels
        said = announcement(state, state.text, self.redact)
        if state.done and self.end_said_later and not self._end_said:
            said = self._said  # until `say_end()`
        self._said = said
        return self.announcer.rule(said) + header_html(
            state,
            now=now,
            model=labels.model,
            provider=labels.provider,
            api=labels.api,
            part=len(state.parts),
            note=" ".join(n for n in (labels.note, script_note(state)) if n) or None,
            badge=labels.badge,
        )


def announcement(state: StreamState, text: str, redact: Redact = unchanged) -> str:
    """What the status region says in `state.phase`: nothing while the request waits, "thinking"
    and "answering" as they start, then how it ended and how long the answer (`text`, the whole of
    it across Continue parts) is in words."""
    phase = state.phase
    if phase == "waiting":
        return ""
    if phase in _LIVE:
        return phase
    n = len(text.split())
    words = f"{formatting.count(n)} word{'' if n == 1 else 's'}"
    if phase == "complete":
        if state.finish == "length":
            return f"answer stopped at the token limit, {words}"
        return f"answer complete, {words}"
    if phase == "cancelled":
        return f"answer cancelled, {words} kept"
    if phase == "error":
        error = state.error
        said = formatting.shorten(redact(error.message), _MAX_SAID) if error is not None else ""
        return f"answer failed: {said}, {words} kept" if said else f"answer failed, {words} kept"
    return f"answer cut off before the end, {words} kept"


#: The status region itself, polite and atomic; its words come from `Announcer.rule`.
_REGION = '<div class="sw-said" role="status" aria-live="polite" aria-atomic="true"></div>'

#: Characters a CSS string may hold as they are; every other one is written as an escape.
_CSS_PLAIN = frozenset(" ,.:;!?'()-_")


def css_string(text: str) -> str:
    """`text` as the inside of a double-quoted CSS string: no quote, backslash, newline or `<`
    (which could close the `<style>`) gets through unescaped."""
    return "".join(c if c.isalnum() or c in _CSS_PLAIN else f"\\{ord(c):x} " for c in text)


class Announcer:
    """The view's status region for screen readers, drawn for nobody (the header shows the same
    phase).

    A screen reader speaks when what is inside a live region changes, not when a region is put
    into the page — and an `HTML` widget replaces its whole content, region and all, on every
    update. So the region is sent once and never touched, and its words are the `content` of a
    CSS rule (`rule(said)`) that rides in the header, which is redrawn at every phase change
    anyway: the region stays in place and only its text changes, once per phase. When the
    output is drawn again (the final display update renders the view anew), the region comes
    back with the header that carries its words, in the same task (before the browser updates
    its accessibility tree): a region that appears with its words is no change, and is not
    spoken again.
    """

    def __init__(self, parts: Parts) -> None:
        self.scope = f"sw-say-{uuid.uuid4().hex[:10]}"
        self.widget = parts.html("sw-announce", self.scope, value=_REGION)

    def rule(self, said: str) -> str:
        """The `<style>` that makes this view's region say `said`."""
        return f'<style>.{self.scope} .sw-said::after{{content:"{css_string(said)}"}}</style>'
