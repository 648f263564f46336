"""Code coloured by Pygments: the few roles a notebook theme colours, and their stylesheet.

Pygments' token types are folded into about twenty roles (`k` keyword, `s` string, `c` comment,
...), each a CSS class; `PYGMENTS_CSS` colours them with JupyterLab's own CodeMirror variables,
so code follows the light or dark theme, with fallbacks for front ends without them.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from functools import lru_cache
from typing import Optional

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Token as PygmentsToken
from pygments.token import _TokenType
from pygments.util import ClassNotFound

from ._lexing import Resumable

__all__ = [
    "highlight",
    "lexer_for",
    "role",
    "Spans",
    "PYGMENTS_CSS",
    "DARK_CONTEXTS",
    "MARKDOWN_CLASS",
    "CODE_CHUNK_CLASS",
]

#: The class of the element that holds rendered markdown; `PYGMENTS_CSS` is scoped to it.
MARKDOWN_CLASS = "sw-md"
#: The class of the `<pre>` pieces that show a code fence while it is still open.
CODE_CHUNK_CLASS = "sw-code-chunk"


# Pygments token types folded into the few roles a notebook theme colours. Fewer, coarser
# classes mean adjacent tokens merge into one span: highlighted code costs about 2x its source
# in bytes instead of 4x with one span per Pygments token. None means "no span".
_ROLE_OF: dict[_TokenType, Optional[str]] = {
    PygmentsToken: None,
    PygmentsToken.Text: None,
    PygmentsToken.Punctuation: None,
    PygmentsToken.Generic: None,
    PygmentsToken.Name: None,
    PygmentsToken.Keyword: "k",
    PygmentsToken.Operator.Word: "k",
    PygmentsToken.Keyword.Type: "nb",
    PygmentsToken.Name.Builtin: "nb",
    PygmentsToken.Name.Exception: "nb",
    PygmentsToken.Name.Function: "nf",
    PygmentsToken.Name.Class: "nf",
    PygmentsToken.Name.Decorator: "nd",
    PygmentsToken.Name.Label: "nd",
    PygmentsToken.Comment.Preproc: "nd",
    PygmentsToken.Name.Tag: "nt",
    PygmentsToken.Name.Attribute: "na",
    PygmentsToken.Name.Variable: "nv",
    PygmentsToken.Name.Constant: "nv",
    PygmentsToken.Name.Entity: "nv",
    PygmentsToken.Name.Property: "py",
    PygmentsToken.Literal: "m",
    PygmentsToken.Literal.String: "s",
    PygmentsToken.Comment.PreprocFile: "s",
    PygmentsToken.Comment: "c",
    PygmentsToken.Operator: "o",
    PygmentsToken.Generic.Heading: "gh",
    PygmentsToken.Generic.Subheading: "gh",
    PygmentsToken.Generic.Deleted: "gd",
    PygmentsToken.Generic.Inserted: "gi",
    PygmentsToken.Generic.Error: "err",
    PygmentsToken.Generic.Traceback: "err",
    PygmentsToken.Error: "err",
    PygmentsToken.Generic.Emph: "ge",
    PygmentsToken.Generic.Strong: "gs",
    PygmentsToken.Generic.Prompt: "gp",
    PygmentsToken.Generic.Output: "go",
}

# role: (JupyterLab CodeMirror variable, light fallback, dark fallback, extra declarations).
# The --jp-mirror-editor-* variables follow the light and dark JupyterLab themes by themselves;
# the fallbacks serve front ends without them (classic Notebook, VS Code, Colab).
_ROLE_STYLE: dict[str, tuple[Optional[str], str, str, str]] = {
    "k": ("keyword", "#008000", "#4caf50", "font-weight:bold"),
    "nb": ("builtin", "#008000", "#43a047", ""),
    "nf": ("def", "#0000ff", "#42a5f5", ""),
    "nd": ("meta", "#aa22ff", "#ce93d8", ""),
    "nt": ("tag", "#117700", "#66bb6a", "font-weight:bold"),
    "na": ("attribute", "#0000cc", "#64b5f6", ""),
    "nv": ("variable-2", "#00366d", "#42a5f5", ""),
    "py": ("property", "#0055aa", "#42a5f5", ""),
    "s": ("string", "#ba2121", "#ff7070", ""),
    "m": ("number", "#008800", "#66bb6a", ""),
    "c": ("comment", "#408080", "#80cbc4", "font-style:italic"),
    "o": ("operator", "#aa22ff", "#ce93d8", ""),
    "gh": ("header", "#0000ff", "#42a5f5", "font-weight:bold"),
    "gd": ("error", "#ff0000", "#ff5252", ""),
    "gi": ("quote", "#009900", "#81c784", ""),
    "err": ("error", "#ff0000", "#ff5252", ""),
    "ge": (None, "", "", "font-style:italic"),
    "gs": (None, "", "", "font-weight:bold"),
    "gp": ("meta", "#aa22ff", "#ce93d8", "font-weight:bold"),
    "go": ("comment", "#408080", "#80cbc4", ""),
}

DARK_CONTEXTS = (
    'body[data-jp-theme-light="false"]',  # JupyterLab / Notebook 7 / Voila dark themes
    "body.vscode-dark",
    "body.vscode-high-contrast:not(.vscode-high-contrast-light)",
    'html[theme="dark"]',  # Colab
    ".sw-dark",  # marimo: the view's front end (widgets/_marimo.js) marks its root when the page is dark
)


def _build_pygments_css() -> str:
    scope = f".{MARKDOWN_CLASS}"
    light: list[str] = []
    dark: list[str] = []
    rules: list[str] = []
    for role, (variable, light_colour, dark_colour, extra) in _ROLE_STYLE.items():
        declarations = [extra] if extra else []
        if variable is not None:
            own = f"--sw-hl-{role}"
            light.append(f"{own}:var(--jp-mirror-editor-{variable}-color,{light_colour})")
            dark.append(f"{own}:var(--jp-mirror-editor-{variable}-color,{dark_colour})")
            declarations.insert(0, f"color:var({own})")
        rules.append(f"{scope} pre .{role}{{{';'.join(declarations)}}}")
    dark_selector = ",".join(f"{context} {scope}" for context in DARK_CONTEXTS)
    # The pieces of a still-open fence follow each other without a seam.
    chunk = (
        f"{scope} pre.{CODE_CHUNK_CLASS}{{margin-top:0;margin-bottom:0;padding-top:0;padding-bottom:0;border-radius:0}}"
    )
    return "\n".join([f"{scope}{{{';'.join(light)}}}", f"{dark_selector}{{{';'.join(dark)}}}", *rules, chunk])


#: CSS for code blocks (colours, open-fence pieces), scoped to `.sw-md`; inject it once per page.
PYGMENTS_CSS = _build_pygments_css()


def role(ttype: _TokenType) -> Optional[str]:
    """The role class of a Pygments token type (None: no span)."""
    while ttype not in _ROLE_OF:
        ttype = ttype.parent
    return _ROLE_OF[ttype]


@lru_cache(maxsize=64)
def lexer_for(lang: str) -> Optional[Lexer]:
    """Pygments' lexer for a fence's language, or None. Looked up once per language: the lookup
    scans every lexer's aliases and cost more than highlighting a short block."""
    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def highlight(code: str, lang: str, _attrs: str) -> str:
    """markdown-it's `highlight` option: spans with role classes, or "" to have it escape."""
    lexer = lexer_for(lang) if lang else None
    if lexer is None:
        return ""
    spans = Spans()
    for ttype, value in _tokens(lexer, code):
        spans.add(role(ttype), value)
    return spans.html()


def _tokens(lexer: Lexer, code: str) -> Iterable[tuple[_TokenType, str]]:
    """`lexer.get_tokens(code)`: by our own run of its loop where that is the same (it tries
    fewer rules), else by Pygments. Pygments first drops a BOM and turns CRs into LFs."""
    run = Resumable.of(lexer)
    if run is None or "\r" in code or code.startswith("\ufeff"):
        return lexer.get_tokens(code)
    return ((ttype, value) for _, ttype, value in run.lex(code)[0])


class Spans:
    """Tokens written as `highlight` writes them: a run of tokens of one role shares one span.

    Grows token by token; `out` holds the runs already closed, the open run is still pending.
    """

    def __init__(self, current: Optional[str] = None, pending: Optional[list[str]] = None) -> None:
        self.out: list[str] = []
        self.current = current  # the role of the open run
        self.pending: list[str] = pending or []  # its pieces (a new list whenever a run closes)

    def add(self, role: Optional[str], value: str) -> None:
        if role != self.current and self.pending:
            self.out.append(_span(self.current, "".join(self.pending)))
            self.pending = []
        self.current = role
        self.pending.append(value)

    def html(self) -> str:
        """What is written so far, the open run closed."""
        tail = _span(self.current, "".join(self.pending)) if self.pending else ""
        return "".join(self.out) + tail


def _span(role: Optional[str], text: str) -> str:
    escaped = html.escape(text, quote=False)
    return escaped if role is None else f'<span class="{role}">{escaped}</span>'
