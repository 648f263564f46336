"""A sparkline of tokens per 100 ms, for the usage meter: see a model stall, burst and finish.

`TokenTrace` samples the running token count (four characters a token: the one measure known
all along, so the provider's exact count arriving at the end makes no spike) each time the view
draws a frame (frames come at
up to 20 per second while tokens arrive, so 100 ms bins are well fed) and keeps one number per
bin, however long the answer. `sparkline_svg` draws the bins as a small inline SVG made only of
numbers the code computed — no text from the stream goes into it but the escaped title.
"""

from __future__ import annotations

import math
from typing import Optional

from ..markdown import escape_html

__all__ = ["TokenTrace", "sparkline_svg", "BIN_SECONDS"]

BIN_SECONDS = 0.1
#: Bars drawn at most (240 px): a longer answer's bins are merged, and the title says so.
_MAX_BARS = 120


class TokenTrace:
    """Cumulative tokens per 100 ms bin since the first token; a Continue part adds on."""

    __slots__ = ("_base", "_bins", "_last", "_start")

    def __init__(self) -> None:
        self._start: Optional[float] = None
        self._bins: list[int] = []  # tokens seen by the end of each bin (cumulative)
        self._base = 0  # the tokens of earlier parts
        self._last = 0

    def sample(self, now: float, tokens: int) -> None:
        if tokens < self._last:  # a new part started from zero
            self._base += self._last
        self._last = tokens
        total = self._base + tokens
        if total == 0:
            return
        if self._start is None:
            self._start = now  # the first bin starts with the first token
        index = max(0, int((now - self._start) / BIN_SECONDS + 1e-9))
        bins = self._bins
        if index >= len(bins):
            carry = bins[-1] if bins else 0
            bins.extend([carry] * (index + 1 - len(bins)))
        bins[index] = max(bins[index], total)

    def per_bin(self) -> list[int]:
        """Tokens that arrived in each 100 ms bin."""
        bins = self._bins
        return [b - (bins[i - 1] if i else 0) for i, b in enumerate(bins)]


def sparkline_svg(counts: list[int], *, bar: int = 2, height: int = 28) -> str:
    """An inline SVG of `counts` (tokens per bin), `bar` pixels per bin, so that views side by
    side share one time scale (a quick answer is a short line); "" when there is nothing to draw.

    It is redrawn with the usage line once a second while the answer streams, so it is small:
    one path of vertical strokes drawn on the pixel grid (`M3 28V9` a bar, about 7 bytes), styled
    by the sheet (`.sw-sparkline path`).
    """
    if not counts or max(counts) == 0:
        return ""
    merge = max(1, math.ceil(len(counts) / _MAX_BARS))
    if merge > 1:
        counts = [sum(counts[i : i + merge]) for i in range(0, len(counts), merge)]
    peak = max(counts)
    n = len(counts)
    width = n * bar
    top = height - 1  # the tallest bar leaves a pixel above it
    bars = "".join(
        f"M{i * bar + 1} {height}V{height - max(1, round(c / peak * top))}" for i, c in enumerate(counts) if c
    )
    ms = int(BIN_SECONDS * 1000 * merge)
    label = f"about {peak} tokens per {ms} ms at the peak, over {n * ms / 1000:.1f} s"
    return (
        f'<svg class="sw-sparkline" role="img" aria-label="{escape_html(label)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">'
        f'<title>{escape_html(label)}</title><path d="{bars}"/></svg>'
    )
