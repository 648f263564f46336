"""TeX math in model output, typeset in the kernel as sanitized MathML.

`math_plugin` teaches the markdown parser the four ways models write math: `$…$` and `$$…$$`
(with pandoc's rule for `$`, so `it costs $5 and $10` stays text), `\\(…\\)` and `\\[…\\]`, and
`\\begin{align}`-style environments on their own lines. The math rules run before markdown's
backslash escapes, so `\\,dx` keeps its backslash, and code spans and blocks never hold math.

`render_tex` turns one formula into MathML with `latex2mathml`, once per formula (cached), within
a size and nesting limit, and passes the result through an allow-list of MathML elements and
attributes: the converter copies `\\href`, `\\style`, `\\class` and the text of `\\text{…}` into
its output, and the browser would take them as markup. The TeX stays on the element (`alttext`)
for copy and screen readers. A formula that is still open (its closing
delimiter has not arrived), too big, or that the converter refuses is shown as its TeX, as text,
in the math style (`TEX_CLASS`).

Pure: no widgets, no I/O.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Optional

from latex2mathml.converter import convert as _latex_to_mathml
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

__all__ = ["math_plugin", "render_tex", "MATH_CSS", "MATH_CLASS", "TEX_CLASS", "MAX_TEX", "MAX_DEPTH"]

#: The class of the box around display math (centred, scrolls sideways when too wide).
MATH_CLASS = "sw-math"
#: The class of a formula shown as its TeX: still open, too big, or not convertible.
TEX_CLASS = "sw-tex"
#: Formulas longer than this (characters of TeX) are shown as TeX: conversion time grows with size.
MAX_TEX = 4000
#: Formulas nested deeper than this (braces, \left, \begin) are shown as TeX.
MAX_DEPTH = 40

#: Styles for math inside `.sw-md`; the theme includes it once per page.
MATH_CSS = "\n".join(
    [
        f".sw-md .{MATH_CLASS}{{display:block;overflow-x:auto;overflow-y:hidden;text-align:center;"
        "margin:0.5em 0;padding:0.1em 0}",
        f".sw-md .{MATH_CLASS} math{{display:block math;margin:0 auto}}",
        f".sw-md .{TEX_CLASS}{{font-family:var(--jp-code-font-family,monospace);font-size:0.95em;"
        "white-space:pre-wrap;opacity:0.8}",
        f".sw-md .{MATH_CLASS}.{TEX_CLASS}{{text-align:left}}",
        # Fonts with an OpenType MATH table lay out large operators and stretchy delimiters.
        '.sw-md math{font-size:1.1em;font-family:math,"Latin Modern Math","STIX Two Math",'
        '"DejaVu Math TeX Gyre","Cambria Math",serif}',
    ]
)

_MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"

# MathML Core's presentation elements, less the ones that can carry links or markup
# (maction, semantics, annotation, annotation-xml): those are never copied from the converter.
_ELEMENTS = frozenset(
    [
        "math",
        "mrow",
        "mi",
        "mn",
        "mo",
        "ms",
        "mtext",
        "mspace",
        "msub",
        "msup",
        "msubsup",
        "mfrac",
        "msqrt",
        "mroot",
        "mstyle",
        "mtable",
        "mtr",
        "mtd",
        "mlabeledtr",
        "mover",
        "munder",
        "munderover",
        "mpadded",
        "mphantom",
        "menclose",
        "merror",
        "mmultiscripts",
        "mprescripts",
        "none",
        "mfenced",
    ]
)
# Layout attributes only: no href, no style, no class, no id, no event handlers.
_ATTRIBUTES = frozenset(
    [
        "display",
        "mathvariant",
        "mathsize",
        "mathcolor",
        "mathbackground",
        "displaystyle",
        "scriptlevel",
        "stretchy",
        "fence",
        "separator",
        "separators",
        "lspace",
        "rspace",
        "minsize",
        "maxsize",
        "movablelimits",
        "accent",
        "accentunder",
        "width",
        "height",
        "depth",
        "linethickness",
        "rowspacing",
        "columnspacing",
        "columnalign",
        "rowalign",
        "columnlines",
        "rowlines",
        "frame",
        "framespacing",
        "notation",
        "columnspan",
        "rowspan",
        "symmetric",
        "largeop",
        "form",
        "voffset",
        "equalrows",
        "equalcolumns",
        "align",
        "open",
        "close",
        "bevelled",
        "numalign",
        "denomalign",
    ]
)
# Values are lengths, keywords, colours and numbers: nothing that can hold a URL or a script.
_VALUE_RE = re.compile(r"[A-Za-z0-9 .#%+\-]{0,64}")
_DEPTH_RE = re.compile(r"\\left\b|\\begin\b|\{|\\right\b|\\end\b|\}")


class _Refused(Exception):
    """The converter's output had something the allow-list does not take."""


def _escape(text: str, quote: bool = False) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;").replace("'", "&#x27;") if quote else text


def _too_deep(tex: str) -> bool:
    depth = 0
    for match in _DEPTH_RE.finditer(tex):
        token = match.group(0)
        depth += 1 if token in ("{", "\\left", "\\begin") else -1
        if depth > MAX_DEPTH:
            return True
    return False


def _serialize(element: ET.Element, out: list[str]) -> None:
    tag = element.tag
    if not isinstance(tag, str) or not tag.startswith(_MATHML_NS) or tag[len(_MATHML_NS) :] not in _ELEMENTS:
        raise _Refused(str(tag))
    name = tag[len(_MATHML_NS) :]
    lone = len(element) == 1 and not (element.text or "").strip() and not (element[0].tail or "").strip()
    if name == "mrow" and not element.attrib and lone:
        _serialize(element[0], out)  # a row of one is that one: fewer bytes, same layout
        return
    out.append(f"<{name}")
    for key, value in element.attrib.items():
        if key not in _ATTRIBUTES or not _VALUE_RE.fullmatch(value):
            continue  # dropped, not refused: the formula still reads right without it
        out.append(f' {key}="{_escape(value, quote=True)}"')
    out.append(">")
    if element.text:
        out.append(_escape(element.text))
    for child in element:
        _serialize(child, out)
        if child.tail:
            out.append(_escape(child.tail))
    out.append(f"</{name}>")


def _tex_html(tex: str, display: bool) -> str:
    """A formula shown as its TeX, as text, in the math style."""
    extra = f" {MATH_CLASS}" if display else ""
    return f'<span class="{TEX_CLASS}{extra}">{_escape(tex)}</span>'


@lru_cache(maxsize=2048)
def render_tex(tex: str, display: bool = False, pending: bool = False) -> str:
    """One formula as HTML: sanitized MathML, or its TeX as text when it cannot be.

    `pending` says the formula is still open: it is shown as TeX until its closing delimiter
    arrives, then typeset once. Display math sits in a centred box that scrolls sideways.
    """
    source = tex.strip()
    if pending or not source or len(source) > MAX_TEX or _too_deep(source):
        return _tex_html(source, display)
    try:
        root = ET.fromstring(_latex_to_mathml(source, display="block" if display else "inline"))
        if root.tag != _MATHML_NS + "math":
            raise _Refused(str(root.tag))
        out: list[str] = [_escape(root.text or "")]
        children = list(root)
        if len(children) == 1 and children[0].tag == _MATHML_NS + "mrow" and not children[0].attrib:
            out.append(_escape(children[0].text or ""))
            children = list(children[0])  # <math> is a row already
        for child in children:
            _serialize(child, out)
            if child.tail:
                out.append(_escape(child.tail))
    except Exception:
        return _tex_html(source, display)
    # The TeX rides in `alttext` (screen readers, copy); in HTML, <math> needs no xmlns.
    mode = "block" if display else "inline"
    math = f'<math display="{mode}" alttext="{_escape(source, quote=True)}">{"".join(out)}</math>'

    return f'<span class="{MATH_CLASS}">{math}</span>' if display else math


# ---------------------------------------------------------------------------------------------
# Markdown rules
# ---------------------------------------------------------------------------------------------

# Inline openers and their closers; `$` is handled on its own (pandoc's rule).
_INLINE = (("$$", "$$", True), ("\\(", "\\)", False), ("\\[", "\\]", True))


def _escaped(src: str, pos: int) -> bool:
    """Is the character at `pos` preceded by an odd number of backslashes?"""
    count = 0
    while pos - count - 1 >= 0 and src[pos - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def find_inline_close(src: str, pos: int, end: int) -> Optional[tuple[int, int, bool, str]]:
    """The math that opens at `pos`: (content start, content end, display, closer), or None.

    None when no math opens there, or when it is not closed before `end`. Shared by the inline
    rule and the live-tail healing, so the two agree on what is math.
    """
    if _escaped(src, pos):
        return None
    for opener, closer, display in _INLINE:
        if src.startswith(opener, pos):
            start = pos + len(opener)
            at = start
            while True:
                close = src.find(closer, at, end)
                if close < 0:
                    return None
                if not _escaped(src, close):
                    return (start, close, display, closer) if src[start:close].strip() else None
                at = close + 1
    if src.startswith("$", pos):
        # pandoc: the opening $ has a non-space right after it, the closing $ a non-space right
        # before it and no digit right after it. Prices stay text.
        start = pos + 1
        if start >= end or src[start].isspace() or src[start] == "$":
            return None
        at = start
        while True:
            close = src.find("$", at, end)
            if close < 0:
                return None
            if not _escaped(src, close) and not src[close - 1].isspace():
                if close + 1 < end and src[close + 1].isdigit():
                    return None
                return start, close, False, "$"
            at = close + 1
    return None


def _math_inline(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if src[pos] not in "$\\":
        return False
    found = find_inline_close(src, pos, state.posMax)
    if found is None:
        return False
    start, close, display, closer = found
    content = src[start:close]
    if "`" in content:
        return False  # a code span has the last word: math never reaches into one
    if not silent:
        token = state.push("sw_math_inline", "math", 0)
        token.content = content
        token.meta = {"display": display}
    state.pos = close + len(closer)
    return True


_BLOCK_OPEN_RE = re.compile(r"(\$\$|\\\[|\\begin\{([A-Za-z]+\*?)\})")


def _math_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """`$$`, `\\[` or `\\begin{env}` at the start of a line, to the line that ends with its closer.

    It never interrupts a paragraph, and no blank line may fall inside: so whether lines are math
    is decided by the text up to the next blank line, which keeps incremental rendering exact.
    With no closer before the end of the text it is an open formula (shown as TeX).
    """
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    begin = state.bMarks[start_line] + state.tShift[start_line]
    first = state.src[begin : state.eMarks[start_line]]
    match = _BLOCK_OPEN_RE.match(first)
    if match is None:
        return False
    opener = match.group(1)
    env = match.group(2)
    closer = "$$" if opener == "$$" else "\\]" if opener == "\\[" else f"\\end{{{env}}}"
    keep = env is not None  # an environment is converted with its \begin and \end
    rest = first[len(opener) :].rstrip()
    lines: list[str] = []
    line = start_line
    closed = False
    if rest.endswith(closer) and len(rest) >= len(closer) and rest[: len(rest) - len(closer)].strip():
        lines.append(rest[: len(rest) - len(closer)])
        closed = True
    elif closer in rest:
        return False  # text after the formula on its line: the inline rule takes it
    else:
        lines.append(rest)
        while True:
            line += 1
            if line >= end_line:
                # The end of the text with no closer: an open formula, unless its container ends.
                if end_line < state.lineMax or state.src[state.eMarks[end_line - 1] :].strip():
                    return False
                line -= 1
                break
            if state.isEmpty(line) or state.sCount[line] < state.blkIndent:
                return False
            text = state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]].rstrip()
            if text.endswith(closer):
                lines.append(text[: len(text) - len(closer)])
                closed = True
                break
            lines.append(text)
    if silent:
        return True
    content = "\n".join(lines)
    if not closed:
        for k in range(len(closer) - 1, 0, -1):
            if content.endswith(closer[:k]):
                content = content[:-k]  # part of the closer has come
                break
    if keep:
        content = f"{opener}{content}{closer if closed else ''}"
    token = state.push("sw_math_block", "math", 0)
    token.block = True
    token.content = content
    token.map = [start_line, line + 1]
    token.markup = opener
    token.meta = {"display": True, "open": not closed}
    state.line = line + 1
    return True


def _render_inline(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    return render_tex(token.content, bool(token.meta.get("display")), bool(token.meta.get("pending")))


def _render_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    return render_tex(token.content, True, bool(token.meta.get("open"))) + "\n"


def math_plugin(md: MarkdownIt) -> None:
    """Add the math rules and their renderers to a markdown-it parser."""
    md.inline.ruler.before("escape", "sw_math_inline", _math_inline)
    md.block.ruler.before("fence", "sw_math_block", _math_block)
    md.add_render_rule("sw_math_inline", _render_inline)
    md.add_render_rule("sw_math_block", _render_block)
