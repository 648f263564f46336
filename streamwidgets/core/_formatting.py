"""Numbers and durations in the few words a person reads at a glance.

Plain text out (the panes escape it): no widget, no HTML, so that the wording is easy to test.
A number that cannot be shown (a 4,000-digit cost, inf, NaN — the JSON edge makes them None, but
a state can be built by hand) is said as `?`, never raised: a summary line must not fail.
"""

from __future__ import annotations

import math
from typing import Optional
from urllib.parse import urlsplit

__all__ = [
    "STATUS_WORDS",
    "origin",
    "script_note",
    "local_note",
    "local_no_tools",
    "count",
    "seconds",
    "rate",
    "cost",
    "domain",
    "shorten",
    "one_line",
]

#: How to get real answers with no key and no network, on a machine without the extra.
LOCAL_INSTALL = 'pip install ".[local]" (in a checkout of streamwidgets)'
LOCAL_EXTRA = f"{LOCAL_INSTALL}, then streamwidgets pull"


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


def origin(kind: Optional[str], provider: Optional[str]) -> Optional[str]:
    """Where an answer came from, in words, when it was not a live provider (`StreamState.origin`):
    "offline demo standing in for openai", "replay of a recording", "openai SDK stream"."""
    if kind == "offline demo":
        return f"offline demo standing in for {provider}" if provider and provider != "demo" else "offline demo"
    if kind == "replay":
        return "replay of a recording"
    if kind == "sdk":
        return f"{provider} SDK stream" if provider else "SDK stream"
    return None


def script_note(script: Optional[str], hint: Optional[str] = LOCAL_EXTRA) -> Optional[str]:
    """What to say about a scripted answer (`StreamState.script`), so that a class never takes the
    scripted demo for a model that read the question; `hint` says how to get real answers offline
    on this machine (None: it has them already)."""
    if not script:
        return None
    real = f" For real answers offline: {hint}." if hint else ""
    if script == "none":
        return f"The scripted demo has no lesson on this question, and says so.{real}"
    if script.startswith("demo-"):
        return f"A scripted scenario ({script}): prepared, not an answer to your question."
    return f"A prepared lesson about {script}, picked by words in your question; the scripted demo does not understand it.{real}"


def local_note(
    model: str,
    stand_in_for: Optional[str] = None,
    key_env: Optional[str] = None,
    *,
    small: bool = False,
    where: str = "on this machine",
) -> str:
    """What to say when the local model answers, so that a class knows what it sees: `model` is
    the model, its size and where it came from (`Weights.describe()`); `stand_in_for` names the
    preset it answers for, when no key was found for it; `small` adds that a 135M model is often
    wrong; `where` it runs (`Weights.where`: on this machine, or in this browser tab)."""
    why = ""
    if stand_in_for:
        why = f" (no {key_env} is set for {stand_in_for})" if key_env else f" (standing in for {stand_in_for})"
    caveat = ": a very small model, its answers are often wrong" if small else ": a small model, check what it says"
    return f"{model} running {where}{why}{caveat}."


def local_no_tools(model: str) -> str:
    """Said when tools were offered to a local model whose chat template cannot take them."""
    return (
        f"{model} cannot call tools (its chat template has none), so it answered without them; "
        "Qwen2.5 models call tools: streamwidgets pull qwen2.5-0.5b"
    )


def count(n: int) -> str:
    """1234 → "1,234"."""
    try:
        return f"{n:,}"
    except (ValueError, OverflowError, TypeError):  # past Python's 4,300-digit limit
        return "?"


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
    try:
        finite = math.isfinite(value)
    except (OverflowError, TypeError):  # an integer no float can hold
        finite = False
    if not finite:
        return "$?"
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


def one_line(text: str, limit: int = 500) -> str:
    """`text` with every run of white space (newlines too) as one space, at most `limit` characters."""
    return shorten(" ".join(str(text).split()), limit)
