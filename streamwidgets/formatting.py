"""Numbers and durations in the few words a person reads at a glance.

Plain text out (the panes escape it): no widget, no HTML, so that the wording is easy to test.
"""

from __future__ import annotations

from typing import Optional
from urllib.parse import urlsplit

__all__ = ["STATUS_WORDS", "origin", "count", "seconds", "rate", "cost", "domain", "shorten"]

#: What the header, the terminal and the static answer call each phase.
STATUS_WORDS = {
    "waiting": "waiting for the first token",
    "thinking": "thinking",
    "answering": "answering",
    "complete": "done",
    "cancelled": "cancelled",
    "error": "error",
    "incomplete": "incomplete",
}


def origin(source: Optional[str], provider: Optional[str]) -> Optional[str]:
    """Where an answer came from, in words, when it was not a live provider (`StreamState.source`):
    "offline demo standing in for openai", "replay of a recording", "openai SDK stream"."""
    if source == "offline demo":
        return f"offline demo standing in for {provider}" if provider and provider != "demo" else "offline demo"
    if source == "replay":
        return "replay of a recording"
    if source == "sdk":
        return f"{provider} SDK stream" if provider else "SDK stream"
    return None


def count(n: int) -> str:
    """1234 → "1,234"."""
    return f"{n:,}"


def seconds(value: float, *, live: bool = False) -> str:
    """A duration: whole seconds while it still runs (so that it changes once a second), else 0.1 s.

    Under one second the value is shown in milliseconds: time to first token lives there.
    """
    if value < 1.0 and not live:
        return f"{value * 1000:.0f} ms"
    if live:
        return f"{int(value)} s"
    if value < 60:
        return f"{value:.1f} s"
    minutes, rest = divmod(int(value), 60)
    return f"{minutes} min {rest:02d} s"


def rate(tokens_per_second: float) -> str:
    return f"{tokens_per_second:.0f} tok/s" if tokens_per_second >= 10 else f"{tokens_per_second:.1f} tok/s"


def cost(value: float) -> str:
    """A cost in dollars (credits for OpenRouter, which are dollars too), with the digits that matter."""
    if value == 0:
        return "$0"
    if value >= 0.01:
        return f"${value:,.4f}".rstrip("0").rstrip(".")
    return f"${value:.8f}".rstrip("0")


def domain(url: str) -> Optional[str]:
    """The host of a URL without `www.`, or None when it has none."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    if not host:
        return None
    return host[4:] if host.startswith("www.") else host


def shorten(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
