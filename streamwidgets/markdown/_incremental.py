"""`IncrementalMarkdown`: a text that grows by appending, rendered at linear cost.

Blocks that can no longer change are rendered once, only the open tail is re-rendered, and after
`finish` the segments join to exactly `render_markdown(text)`; so the work (and the bytes a view
must send) grow linearly with the answer, not quadratically.

Pure: no widgets, no I/O.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, cast

from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import OptionsDict

from ._heal import heal_blocks
from ._highlight import CODE_CHUNK_CLASS
from ._parser import CITATION_RE, citation_targets, new_parser
from ._scan import closes_fence, may_close_fence
from ._sealed import SealedCode, SealedHighlighter

__all__ = ["IncrementalMarkdown", "Patch"]


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
    """A top-level code fence still open at the end of the text, shown as chunks of lines.

    Each chunk is its own `<pre>` (styled to join the others seamlessly) holding a piece of the
    sealed code: lines lexed once, as they came.
    """

    opener: str  # the opening line
    markup: str  # ``` or ~~~ (or longer)
    chunked_to: int  # offset up to which complete lines have become chunks
    code: SealedCode  # its content so far, highlighted
    head: str  # `<pre class="sw-code-chunk"><code class="language-...">`: a chunk's start
    foot: str = "</code></pre>\n"
    chunks: list[str] = field(default_factory=list)


@dataclass
class _Group:
    tokens: list[Token]
    begin: int  # first line
    end: int  # line after the last


@dataclass
class _Tail:
    """The uncommitted end of the text, parsed by markdown-it's block parser."""

    src: str  # the text from the commit boundary on
    base: int  # the commit boundary: where `src` starts in the text
    state: StateBlock  # its line marks
    groups: list[_Group]  # its top-level blocks
    refs: dict[str, dict[str, Any]]  # the link reference definitions in effect
    definitions: list[list[int]]  # line ranges of the definitions made in it (repeats too)
    complete: int  # lines [0, complete) of `src` end with a newline


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
    `finish`) its chunks are replaced once by the exact HTML of the whole fence. Its code is
    highlighted as sealed lines (`SealedCode`): each complete line is lexed once, going on from
    where the lines before it left the lexer, so the whole fence's HTML is made without lexing
    it again; only the unfinished last line is lexed on every update.

    Exactness: after `finish(text)`, `"".join(segments) == render_markdown(text)`, however the
    text was chunked; whenever `exact` is True the join equals `render_markdown(text_so_far)`.
    """

    def __init__(self, citations: Optional[Sequence[str]] = None, *, heal: bool = False) -> None:
        self._code = SealedHighlighter()
        self._md = new_parser(self._code)
        self._heal = heal
        self._cut_off = False
        rule_names = self._md.core.ruler.get_active_rules()
        self._after_block = self._md.core.ruler.getRules("")[rule_names.index("block") + 1 :]
        self._citations = citation_targets(citations)
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
        return self._fence is None and not self._typing_definition and not self._healing(self._finished)

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
        targets = citation_targets(urls)
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
        for match in CITATION_RE.finditer(committed):
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
        """Bring blocks, chunks and tail up to date; return the first segment index touched.

        An open fence only takes its new lines. Otherwise the tail is parsed afresh, the blocks
        nothing appended can change are committed, and what is left is rendered as the tail (or,
        while it is a fence that is still open, shown in chunks).
        """
        first = self._tail_index()
        if self._fence is not None:
            if not final:
                changed = self._extend_fence()
                if changed is not None:  # new chunks (or lexed again from `changed` on) and the tail
                    return min(first, len(self._blocks) + changed)
            first = len(self._blocks)  # the chunks go: the fence is rendered whole below,
            self._code.keep(self._fence.code)  # from its sealed lines
            self._fence = None
        tail, first = self._parse_tail(final, first)
        rest = self._commit(tail, final)
        if not final and self._open_fence(tail, rest):
            return first
        heal = tail.src if self._healing(final) else None
        self._tail = self._render([t for group in rest for t in group.tokens], tail.refs, heal)[0]
        return first

    def _parse_tail(self, final: bool, first: int) -> tuple[_Tail, int]:
        """Parse the text after the commit boundary with the definitions in effect.

        A committed block was rendered with the link reference definitions known then; when one
        it looked up appears, changes or goes away, rendering rewinds to that block (`first` drops
        to it) and the tail, now longer, is parsed again.
        """
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
        definitions = [ref["map"] for label, ref in env["references"].items() if label not in self._refs]
        definitions += [ref["map"] for ref in env.get("duplicate_refs", ())]
        return _Tail(src, self._boundary, state, _top_level_groups(tokens), refs, definitions, complete), first

    def _commit(self, tail: _Tail, final: bool) -> list[_Group]:
        """Commit the leading blocks of the tail that are final; return the groups left over.

        At `finish` every block is final, except that a cut-off answer keeps its last block in
        the healed form, as the tail.
        """
        groups = tail.groups
        count = len(groups) if final else self._count_final(groups, tail.state, tail.complete, tail.definitions)
        if final and self._healing(final) and groups and groups[-1].tokens[0].type != "fence":
            count -= 1  # the cut-off last block is rendered healed, as the tail
        for group in groups[:count]:
            html_text, lookups = self._render(group.tokens, tail.refs)
            defined = {
                label: ref for label, ref in tail.refs.items() if label not in self._refs and ref["map"][1] <= group.end
            }
            index = len(self._blocks)
            end = tail.base + min(tail.state.eMarks[group.end - 1] + 1, len(tail.src))
            self._blocks.append(_Block(self._boundary, end, html_text, lookups, defined))
            self._refs.update(defined)
            for label in lookups:
                self._first_use.setdefault(label, index)
            self._boundary = end
        return groups[count:]

    def _open_fence(self, tail: _Tail, rest: list[_Group]) -> bool:
        """Start showing the tail in chunks if it is one top-level fence still open.

        Only once its opening line is complete: until then the opener itself may still change.
        """
        if len(rest) != 1 or rest[0].tokens[0].type != "fence" or rest[0].begin >= tail.complete:
            return False
        begin = rest[0].begin
        token = rest[0].tokens[0]
        # How markdown-it's renderer wraps this fence's code, and the language it asks for.
        asked: list[str] = []

        def ask(_code: str, lang: str, _attrs: str) -> str:
            asked.append(lang)
            return ""

        options = OptionsDict(cast(Any, {**dict(self._md.options), "highlight": ask}))
        empty: str = self._md.renderer.render([token.copy(content="")], options, {})
        self._fence = _OpenFence(
            opener=tail.src[tail.state.bMarks[begin] : tail.state.eMarks[begin]],
            markup=token.markup,
            chunked_to=tail.base + tail.state.eMarks[begin] + 1,
            code=SealedCode(asked[0] if asked else ""),
            head=f'<pre class="{CODE_CHUNK_CLASS}">' + empty[len("<pre>") : -len("</code></pre>\n")],
        )
        self._extend_fence()
        return True

    def _healing(self, final: bool) -> bool:
        """Is the last block shown healed? While streaming, and after a cut-off finish."""
        return self._heal and (not final or self._cut_off)

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
        return last > group.begin and closes_fence(line, token.markup)

    def _extend_fence(self) -> Optional[int]:
        """Chunk the open fence's new complete lines and show its unfinished last one.

        Returns None when a line closed the fence, else the index of the first chunk that
        changed (the new one, or an earlier one whose lines were lexed again).
        """
        fence = self._fence
        assert fence is not None
        text = self._text
        first = len(fence.chunks)
        complete_to = text.rfind("\n", fence.chunked_to - 1) + 1
        if complete_to > fence.chunked_to:
            lines = text[fence.chunked_to : complete_to]
            if any(closes_fence(line, fence.markup) for line in lines[:-1].split("\n")):
                return None
            first = fence.code.extend(self._fence_code(fence, lines))
            fence.chunks[first:] = [fence.head + piece + fence.foot for piece in fence.code.pieces[first:]]
            fence.chunked_to = complete_to
        partial = text[fence.chunked_to :]
        if may_close_fence(partial, fence.markup):
            partial = ""  # half of the closing fence: showing it would flash a stray backtick
        self._tail = fence.head + fence.code.partial(self._fence_code(fence, partial)) + fence.foot if partial else ""
        return first

    def _fence_code(self, fence: _OpenFence, lines: str) -> str:
        """The code that lines of an open fence hold: as written, or, under an indented opener,
        without as much indentation as markdown-it removes (it is asked)."""
        if not fence.opener.startswith(" "):
            return lines
        tokens: list[Token] = []
        self._md.block.parse(fence.opener + "\n" + lines, self._md, {}, tokens)
        return tokens[0].content

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
        if self._fence is not None:
            self._code.keep(self._fence.code)
            self._fence = None
