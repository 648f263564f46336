"""Healing the still-growing end of a markdown answer, for display only.

While an answer streams, its last block is often half written: `**bold` (no closer yet), a code
span whose backtick has not come, `[text](htt`, a `-` under a line that would flash the line as a
heading for a moment, a table row half received, a formula whose closing delimiter is on its way.
Rendered as they are, these show stray markers that vanish a moment later. `heal_blocks` mends the
parsed tail (the block tokens after markdown-it's block pass, before its inline pass) and marks its
last inline block; the core rule `heal_inline_rule` then re-parses that block's healed text and
closes what is still open. Nothing here touches the text itself: the final render of a complete
answer is the text's own render.

What is healed, and how:

* unclosed `**`, `*`, `_`, `~~`: closed at the end (shown as they will be), or dropped when
  nothing follows them yet; a trailing run of markers (a closer half arrived) is not shown;
* an unclosed code span: closed at the end; an open formula (`$$`, `\\(`, `\\[`): shown as its
  TeX in the math style until it closes; a lone opener with nothing after it is not shown;
* `[text](htt` shows `text`; `[text` shows `text`; a half image or `[12` (a citation) nothing;
* a half-typed `<tag` or `<https://…` autolink is not shown until its `>` arrives;
* a setext underline (`-`, `=`) still being typed leaves its line a paragraph; an empty `#`;
* a table row still being received, and pipe lines that may become a table's header, wait.

Pure: no widgets, no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from ._math import find_inline_close
from ._scan import code_span_end

__all__ = ["heal_blocks", "heal_inline_rule", "heal_text"]

#: The env key that names the inline token to heal (absent: a plain render).
HEAL_KEY = "sw_heal"

_CLOSERS = {"$$": "$$", "\\(": "\\)", "\\[": "\\]"}
_IMAGE_RE = re.compile(r"!\[[^\[\]\n]*(?:\][(][^()\n]*)?$")
_LINK_URL_RE = re.compile(r"\[([^\[\]\n]*)\][(][^()\n]*$")
_CITATION_RE = re.compile(r"\[[0-9]{0,4}$")
_LINK_TEXT_RE = re.compile(r"\[([^\[\]\n]*)$")
_LINK_LABEL_RE = re.compile(r"\[(?![0-9]+\])([^\[\]\n]*)\]$")
_TAG_RE = re.compile(r"<[A-Za-z/!?][^<>\n]{0,100}$")
_MARKERS_RE = re.compile(r"[*_~]+$")
_DOLLAR_RE = re.compile(r"(?:^|(?<=\s))\$+$")  # an opener to be; a closer follows a non-space


def _odd_backslashes(text: str, end: int) -> bool:
    count = 0
    while end - count - 1 >= 0 and text[end - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _strip_end(text: str, pattern: re.Pattern[str], keep: Optional[str] = None) -> str:
    match = pattern.search(text)
    if match is None or _odd_backslashes(text, match.start()):
        return text
    return text[: match.start()] + (match.expand(keep) if keep else "")


def _open_span(text: str) -> tuple[str, Optional[str]]:
    """Find an unclosed code span or formula: (text cut or closed, opener of an open formula).

    Scans as the inline parser does: escapes, code spans (a run of n backticks closed by a run of
    exactly n), then math (the math rule's own matcher). Whatever is open runs to the end.
    """
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and not text.startswith(("\\(", "\\["), i):
            i += 2
            continue
        if c == "`":
            run_end, close = code_span_end(text, i)
            if close < 0:
                if not text[run_end:].strip():
                    return text[:i], None
                return text + (" " if text.endswith("`") else "") + text[i:run_end], None
            i = close
            continue
        if c in "$\\":
            found = find_inline_close(text, i, n)
            if found is not None:
                i = found[1] + len(found[3])
                continue
            opener = next((o for o in _CLOSERS if text.startswith(o, i)), None)
            if opener is not None and "`" in text[i:]:
                opener = None  # the math rule takes no formula with a backtick: not math, then
            if opener is not None and not _odd_backslashes(text, i):
                closer = _CLOSERS[opener]
                body = text[i + len(opener) :]
                if body.endswith(closer[0]) and not _odd_backslashes(text, len(text) - 1):
                    body = body[:-1]  # half of the closer has come
                if not body.strip():
                    return text[:i], None
                return text[: i + len(opener)] + body + closer, opener
        i += 1
    return text, None


def heal_text(text: str) -> tuple[str, bool]:
    """Heal the inline text of the last block: (text to render, whether a formula is open)."""
    if _odd_backslashes(text, len(text)):
        text = text[:-1]  # the start of an escape, or of \( or \[
    while True:
        healed, opener = _open_span(text)
        if healed != text:
            return healed, opener is not None
        before = text
        text = _strip_end(text, _IMAGE_RE)
        text = _strip_end(text, _LINK_URL_RE, r"\1")
        text = _strip_end(text, _CITATION_RE)
        text = _strip_end(text, _LINK_TEXT_RE, r"\1")
        text = _strip_end(text, _LINK_LABEL_RE, r"\1")
        text = _strip_end(text, _TAG_RE)
        text = _strip_end(text, _MARKERS_RE)
        text = _strip_end(text, _DOLLAR_RE)
        if text == before:
            return text, False


def heal_blocks(tokens: list[Token], src: str, env: dict[str, Any]) -> None:
    """Mend the block tokens of the tail `src` in place; mark its last inline block for healing."""
    partial = None if src.endswith("\n") or not src else src.count("\n")  # the unfinished line
    _heal_headings(tokens, partial)
    _heal_tables(tokens, partial)
    last = _last_inline(tokens, src)
    if last is not None:
        env[HEAL_KEY] = last


def _heal_headings(tokens: list[Token], partial: Optional[int]) -> None:
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None or partial is None:
            continue
        if token.markup in ("=", "-") and token.map[1] - 1 == partial:
            # The underline is still being typed: it may yet be a list item or a rule.
            token.type, token.tag, token.markup = "paragraph_open", "p", ""
            close = tokens[i + 2]
            close.type, close.tag, close.markup = "paragraph_close", "p", ""
        elif token.map[0] == partial and not tokens[i + 1].content.strip():
            for t in tokens[i : i + 3]:
                t.type, t.nesting = "sw_hidden", 0


def _heal_tables(tokens: list[Token], partial: Optional[int]) -> None:
    rows = [i for i, t in enumerate(tokens) if t.type == "tr_open" and t.map and t.map[0] == partial]
    for start in rows:
        end = next(j for j in range(start, len(tokens)) if tokens[j].type == "tr_close")
        for t in tokens[start : end + 1]:
            t.type, t.nesting, t.children = "sw_hidden", 0, None
            t.content = ""
    # A paragraph that ends in pipe lines may be a table whose delimiter row has not come yet.
    for i in range(len(tokens) - 1, -1, -1):
        token = tokens[i]
        if token.type != "inline" or i == 0 or tokens[i - 1].type != "paragraph_open":
            continue
        lines = token.content.split("\n")
        keep = len(lines)
        while keep > 0 and len(lines) - keep < 2 and lines[keep - 1].lstrip().startswith("|"):
            keep -= 1
        if keep < len(lines):
            token.content = "\n".join(lines[:keep])
            if not token.content:
                for t in tokens[i - 1 : i + 2]:
                    t.type, t.nesting = "sw_hidden", 0
        break


def _last_inline(tokens: list[Token], src: str) -> Optional[Token]:
    """The inline token of the last leaf block, if the text ends inside it.

    A block that a blank line has ended is final as it is: healing it would flash its markers.
    """
    lines = src.count("\n")  # complete lines: a blank one after the block ends it
    for token in reversed(tokens):
        if token.type == "inline":
            return token if token.map is None or token.map[1] >= lines else None
        if token.type in ("fence", "code_block", "sw_math_block", "hr"):
            return None
    return None


def heal_inline_rule(state: StateCore) -> None:
    """Core rule after `inline`: re-parse the marked block's healed text and close what is open."""
    token: Optional[Token] = state.env.get(HEAL_KEY)
    if token is None or token.type != "inline":
        return
    text, pending = heal_text(token.content)
    token.children = _close_emphasis(text, state.md, state.env)
    if pending:
        math = [t for t in token.children if t.type == "sw_math_inline"]
        if math:
            math[-1].meta = {**math[-1].meta, "pending": True}


def _close_emphasis(text: str, md: MarkdownIt, env: Any) -> list[Token]:
    """Parse `text` inline; close emphasis and strikethrough left open at the end, or drop it."""
    tokens: list[Token] = []
    state = StateInline(text, md, env, tokens)
    md.inline.tokenize(state)
    openers = [state.tokens[d.token] for d in state.delimiters if d.open and d.marker in (0x2A, 0x5F, 0x7E)]
    names = md.inline.ruler2.get_active_rules()
    rules = md.inline.ruler2.getRules("")
    for name, rule in zip(names, rules, strict=True):
        if name != "fragments_join":
            rule(state)
    unmatched = [t for t in openers if t.type == "text" and t.content in ("*", "_", "~~")]
    index = {id(t): i for i, t in enumerate(tokens)}
    runs: list[list[int]] = []
    for t in unmatched:
        i = index[id(t)]
        if runs and runs[-1][-1] == i - 1 and tokens[runs[-1][-1]].content == t.content:
            runs[-1].append(i)
        else:
            runs.append([i])
    closers: list[Token] = []
    for run in reversed(runs):
        after = tokens[run[-1] + 1 :]
        depth = 0
        nested = True
        for t in after:
            depth += t.nesting
            if depth < 0:
                nested = False
                break
        added = {id(t) for t in closers}
        if not nested or not any(t.type != "text" or t.content.strip() for t in after if id(t) not in added):
            for i in run:
                tokens[i].content = ""
            continue
        for opened in _open_tags(tokens, run):
            closers.append(opened)
            tokens.append(opened)
    for name, rule in zip(names, rules, strict=True):
        if name == "fragments_join":
            rule(state)
    return state.tokens


def _open_tags(tokens: list[Token], run: list[int]) -> list[Token]:
    """Turn a run of unmatched opener tokens into open tags; return their closing tokens."""
    closes: list[Token] = []
    marker = tokens[run[0]].content
    if marker == "~~":
        for i in run:
            tokens[i].type, tokens[i].tag, tokens[i].nesting, tokens[i].markup = "s_open", "s", 1, "~~"
            tokens[i].content = ""
            closes.insert(0, Token("s_close", "s", -1, markup="~~"))
        return closes
    left = len(run)
    position = 0
    while left > 0:
        strong = left >= 2
        first = tokens[run[position]]
        kind = "strong" if strong else "em"
        first.type, first.tag, first.nesting = f"{kind}_open", kind, 1
        first.markup, first.content = marker * (2 if strong else 1), ""
        if strong:
            tokens[run[position + 1]].content = ""
        closes.insert(0, Token(f"{kind}_close", kind, -1, markup=first.markup))
        step = 2 if strong else 1
        position += step
        left -= step
    return closes
