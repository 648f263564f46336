"""The usage meter: what the answer cost in tokens (and money, when the provider says).

When a stream ends without usage (cut off, cancelled, a provider that sends none) the completion
tokens are estimated at about four characters per token — the rule several providers bill a
broken stream by — and the meter says plainly that it is an estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from ..core import StreamState, formatting
from ..markdown import escape_html
from ._sparkline import TokenTrace, sparkline_svg
from ._sync import Parts, set_traits, visible_classes
from ._traffic import Cost

__all__ = ["UsageMeter", "usage_html", "CSS"]

#: The pane's rules in the view's stylesheet (`_sheet.stylesheet`), with why in comments.
CSS = """
.sw-usage-line { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: var(--sw-small-size);
  color: var(--jp-ui-font-color2, inherit); display: flex; flex-wrap: wrap; gap: 0 1em; }
.sw-estimate { font-style: italic; }
.sw-sparkline path { fill: none; stroke: currentColor; stroke-width: 1.6px; }
.sw-bar { height: 4px; border-radius: 2px; margin: 3px 0 1px 0;
  background: var(--jp-layout-color3, rgba(127, 127, 127, 0.25)); overflow: hidden; max-width: 32em; }
.sw-bar-fill { height: 100%; background: var(--sw-live); }
.sw-bar-full .sw-bar-fill { background: var(--sw-warn); }
"""


def usage_html(
    state: StreamState, *, max_tokens: Optional[int] = None, earlier: Sequence[StreamState] = (), sparkline: str = ""
) -> str:
    """ "" when there is nothing to say yet (no usage and no token). `earlier` are the parts
    before a Continue: the line then ends with the totals of all parts. `sparkline` is the view's
    tokens-per-100-ms trace (`_sparkline.sparkline_svg`), shown after the counts."""
    usage = state.usage
    tokens, estimated = state.completion_tokens
    if usage is None and tokens == 0:
        return ""
    parts = []
    if usage is not None and usage.prompt_tokens is not None:
        parts.append(f"prompt {formatting.count(usage.prompt_tokens)}")
    if estimated:
        label = "so far, estimated" if not state.done else "estimated, about 4 characters per token"
        parts.append(f'<span class="sw-estimate">completion ≈ {formatting.count(tokens)} ({label})</span>')
    else:
        parts.append(f"completion {formatting.count(tokens)}")
    if usage is not None:
        # Zero or unreported details say nothing a reader needs ("cached 0 · reasoning 0").
        if usage.cached_tokens:
            parts.append(f"cached {formatting.count(usage.cached_tokens)}")
        if usage.reasoning_tokens:
            parts.append(f"reasoning {formatting.count(usage.reasoning_tokens)}")
        if usage.total_tokens is not None:
            parts.append(f"total {formatting.count(usage.total_tokens)}")
        if usage.cost is not None:
            parts.append(f"cost {escape_html(formatting.cost(usage.cost))}")
    if earlier:
        parts.append(_totals([*earlier, state]))
    line = "".join(f"<span>{part}</span>" for part in parts)
    if sparkline:
        line += f'<span class="sw-trace">{sparkline}</span>'
    return f'<div class="sw-usage-line">{line}</div>{_limit_bar(tokens, estimated, max_tokens)}'


def _totals(states: Sequence[StreamState]) -> str:
    """ "all 2 parts: prompt 1,024 · completion 812 · cost $0.002" — each part was billed on its own."""
    counts = [s.completion_tokens for s in states]
    about = "≈ " if any(estimated for _, estimated in counts) else ""
    words = [f"completion {about}{formatting.count(sum(n for n, _ in counts))}"]
    prompts = [s.usage.prompt_tokens if s.usage is not None else None for s in states]
    if all(p is not None for p in prompts):
        words.insert(0, f"prompt {formatting.count(sum(p for p in prompts if p is not None))}")
    costs = [s.usage.cost if s.usage is not None else None for s in states]
    if all(c is not None for c in costs):
        words.append(f"cost {escape_html(formatting.cost(sum(c for c in costs if c is not None)))}")
    return f'<span class="sw-usage-total">all {len(states)} parts: {" · ".join(words)}</span>'


def _limit_bar(tokens: int, estimated: bool, max_tokens: Optional[int]) -> str:
    if not max_tokens or max_tokens <= 0:
        return ""
    share = min(1.0, tokens / max_tokens)
    full = " sw-bar-full" if tokens >= max_tokens else ""
    about = "about " if estimated else ""
    label = f"{about}{formatting.count(tokens)} of {formatting.count(max_tokens)} tokens allowed ({share:.0%})"
    return (
        f'<div class="sw-bar{full}" role="meter" aria-valuemin="0" aria-valuemax="{max_tokens}" '
        f'aria-valuenow="{min(tokens, max_tokens)}" aria-label="{label}" title="{label}">'
        f'<div class="sw-bar-fill" style="width: {share * 100:.1f}%"></div></div>'
    )


class UsageMeter:
    """One `HTML` widget, drawn at the slow rate: usage changes once, estimates creep. It knows
    the request's token limit (`max_tokens`, for the bar) and the view's token trace (for the
    sparkline; None leaves it out)."""

    def __init__(self, parts: Parts, max_tokens: Optional[int] = None, trace: Optional[TokenTrace] = None) -> None:
        self.max_tokens = max_tokens
        self.trace = trace
        self.widget = parts.html("sw-usage", hidden=True)

    def draw(self, state: StreamState, now: float, final: bool) -> Cost:
        sparkline = sparkline_svg(self.trace.per_bin()) if self.trace is not None else ""
        html = usage_html(state, max_tokens=self.max_tokens, earlier=state.earlier, sparkline=sparkline)
        return set_traits(self.widget, value=html, _dom_classes=visible_classes(self.widget, bool(html)))
