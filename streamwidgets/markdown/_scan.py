"""What can be read straight off markdown source, without a parse: fences and code spans.

The incremental renderer watches an open fence's lines for its closing one without parsing the
fence again; the healer closes a code span still open at the end of the text; the static export
(`safe_markdown`) keeps fences and code spans as written. They all ask the questions here, which
answer as markdown-it does.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["opens_fence", "closes_fence", "may_close_fence", "code_span_end"]

_FENCE_RE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")


def _columns(indent: str) -> int:
    column = 0
    for ch in indent:
        column += 4 - column % 4 if ch == "\t" else 1
    return column


def opens_fence(line: str) -> Optional[str]:
    """The markup (```, ~~~~...) of the fence `line` opens, or None (a backtick fence's info
    string may hold no backtick)."""
    opened = _FENCE_RE.match(line)
    if opened is None or (opened.group(2)[0] == "`" and "`" in opened.group(3)):
        return None
    return opened.group(2)


def closes_fence(line: str, markup: str) -> bool:
    """Is `line` a closing fence for a top-level fence opened with `markup` (as markdown-it says)?"""
    body = line.lstrip(" \t")
    if _columns(line[: len(line) - len(body)]) >= 4:
        return False
    run = len(body) - len(body.lstrip(markup[0]))
    return run >= len(markup) and not body[run:].strip(" \t")


def may_close_fence(partial: str, markup: str) -> bool:
    """An unfinished last line that could still become the fence's closing line."""
    marks = partial.lstrip(" ")
    return bool(marks) and len(partial) - len(marks) <= 3 and marks.rstrip(" ") == markup[0] * len(marks.rstrip(" "))


def code_span_end(text: str, start: int) -> tuple[int, int]:
    """For the run of backticks at `start`: where the run ends, and where the code span it opens
    ends (after the closing run of exactly as many backticks), or -1 when nothing closes it."""
    run = _backticks(text, start)
    j = start + run
    while True:
        k = text.find("`" * run, j)
        if k < 0:
            return start + run, -1
        m = _backticks(text, k)
        if m == run:
            return start + run, k + run
        j = k + m


def _backticks(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] == "`":
        end += 1
    return end - start
