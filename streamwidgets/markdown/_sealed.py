"""Sealed code lines: a code block that grows at its end, each complete line highlighted once.

While a fence is open, its complete lines are lexed as they come, going on from the lexer state
the lines before them ended in (`_lexing.Resumable`), and written into the spans of the whole
block at once. Only the unfinished last line is lexed again on each update. When the fence closes,
its HTML is the spans written so far plus the lines that came with the closing update: exactly
`highlight(code, lang)`, without lexing the block again.

A decision that depended on the end of the text (a comment opened but not yet closed, say) is
tried again whenever lines come; if it now goes the other way, lexing goes back to the piece it
was made in. Lexers that cannot be resumed are highlighted as before: each piece on its own
while the fence is open, the whole block once when it closes.

Pure: no widgets, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from markdown_it.common.utils import escapeHtml

from ._highlight import Spans, highlight, lexer_for, role
from ._lexing import Hazard, LexToken, Resumable, recheck

__all__ = ["SealedCode", "SealedHighlighter"]


@dataclass(frozen=True)
class _Mark:
    """Where lexing went on from at the start of a piece: the position and the lexer's state
    there, and how far the spans had been written (the open run's pieces are never changed in
    place, so keeping the list and its length is enough)."""

    pos: int
    stack: tuple[str, ...]
    written: int
    current: Optional[str]
    pending: list[str]
    pending_count: int

    def spans(self) -> Spans:
        """Spans going on from here (without the runs written before)."""
        return Spans(self.current, self.pending[: self.pending_count])


class SealedCode:
    """The code of one fence, growing by whole lines, highlighted as it grows.

    `extend(lines)` takes the next complete lines; `pieces` show the lines so far, one piece per
    call (each well-formed HTML, for the chunks of an open fence); `partial(rest)` shows an
    unfinished last line; `html(code)` is exactly `highlight(code, lang, "")` for any code that
    goes on from `text`, and lexes only what came after it.
    """

    def __init__(self, lang: str) -> None:
        self.lang = lang
        self.text = ""  # the complete lines so far
        self.pieces: list[str] = []
        lexer = lexer_for(lang) if lang else None
        self._run = Resumable.of(lexer) if lexer is not None else None
        self._spans = Spans()
        self._pos = 0  # lexed up to here (a token boundary, at most one newline short of `text`)
        self._stack: tuple[str, ...] = ("root",)
        self._hazards: list[Hazard] = []
        self._marks: list[_Mark] = []  # where the lexing of each piece started
        self._starts: list[int] = []  # where the lines of each piece start
        self._last: tuple[str, str] = ("", "")  # the last `html` asked for, and its answer

    def extend(self, lines: str, show: bool = True) -> int:
        """Take the next complete lines; return the index of the first piece that changed.

        That is the new piece, unless a decision made in an earlier piece went the other way:
        then the pieces from that one on are lexed again, as one. `show=False` keeps the spans
        only (for a block that is never shown in pieces).
        """
        start = len(self.text)
        self.text += lines
        if start == 0 and lines.startswith("\ufeff"):
            self._run = None  # Pygments drops a leading BOM before lexing: keep to its own path
        if self._run is None:
            self.pieces.append(self._plain(lines) if show else "")
            return len(self.pieces) - 1
        first = len(self.pieces)
        changed, self._hazards = recheck(self._hazards, self.text)
        if changed is not None:
            first = changed.mark
            start = self._starts[first]
            self._restore(self._marks[first])
            del self._marks[first:], self._starts[first:], self.pieces[first:]
            self._hazards = [hazard for hazard in self._hazards if hazard.mark < first]
        self._marks.append(self._mark())
        self._starts.append(start)
        # The last newline is left for the next lines: a rule there may read on into them.
        tokens, self._pos, self._stack = self._run.lex(
            self.text, self._pos, self._stack, stop=len(self.text) - 1, hazards=self._hazards, mark=first
        )
        for _, ttype, value in tokens:
            self._spans.add(role(ttype), value)
        self.pieces.append(_clip(tokens, self.text, start, len(self.text)) if show else "")
        return first

    def partial(self, rest: str) -> str:
        """An unfinished last line `rest`, shown as it lexes now (lexed again on every call)."""
        if self._run is None or (not self.text and rest.startswith("\ufeff")):
            return self._plain(rest)
        # From the start of the last complete line: what a rule may look back at is there.
        base = self.text.rfind("\n", 0, max(0, len(self.text) - 1)) + 1
        window = self.text[base:] + rest
        tokens, _, _ = self._run.lex(window, self._pos - base, self._stack)
        return _clip(tokens, window, len(self.text) - base, len(window))

    def html(self, code: str) -> str:
        """`highlight(code, lang, "")`, for a `code` that starts with `text`."""
        if code == self._last[0]:
            return self._last[1]
        if self._run is None:
            result = highlight(code, self.lang, "")
        else:
            changed, _ = recheck(self._hazards, code, settle=False)
            mark = self._mark() if changed is None else self._marks[changed.mark]
            spans = mark.spans()
            tokens, _, _ = self._run.lex(code, mark.pos, mark.stack)
            for _, ttype, value in tokens:
                spans.add(role(ttype), value)
            result = "".join(self._spans.out[: mark.written]) + spans.html()
        self._last = (code, result)
        return result

    def _mark(self) -> _Mark:
        spans = self._spans
        return _Mark(self._pos, self._stack, len(spans.out), spans.current, spans.pending, len(spans.pending))

    def _restore(self, mark: _Mark) -> None:
        self._pos, self._stack = mark.pos, mark.stack
        del self._spans.out[mark.written :]
        self._spans.current = mark.current
        self._spans.pending = mark.pending[: mark.pending_count]

    def _plain(self, lines: str) -> str:
        """Lines highlighted on their own, as markdown-it would show them."""
        return highlight(lines, self.lang, "") or escapeHtml(lines)


class SealedHighlighter:
    """markdown-it's `highlight` option for an incremental renderer.

    A fence seen before (its code starts with the code it had then) is highlighted from where it
    left off: the open fence the renderer showed in chunks (handed over with `keep` when it
    closes) is not lexed again, and a fence re-rendered with its list item or quote as it grows
    is not lexed from the top each time. A fence seen once is highlighted plainly (most are
    never rendered twice); the few most recent ones of each kind are kept.
    """

    KEPT = 8

    def __init__(self) -> None:
        self._codes: list[SealedCode] = []
        self._seen: list[tuple[str, str]] = []  # (lang, code) highlighted plainly

    def keep(self, code: SealedCode) -> None:
        """Remember `code` as the most recent fence."""
        if code in self._codes:
            self._codes.remove(code)
        self._codes.insert(0, code)
        del self._codes[self.KEPT :]

    def __call__(self, code: str, lang: str, attrs: str) -> str:
        if not code or not lang or lexer_for(lang) is None:
            return highlight(code, lang, attrs)
        known = [seen for seen in self._codes if seen.lang == lang and code.startswith(seen.text)]
        if known:
            sealed = max(known, key=lambda seen: len(seen.text))
        elif any(seen == lang and code.startswith(before) for seen, before in self._seen):
            sealed = SealedCode(lang)  # the second time: worth sealing
        else:
            self._seen.insert(0, (lang, code))
            del self._seen[self.KEPT :]
            return highlight(code, lang, attrs)
        self.keep(sealed)
        complete = code.rfind("\n") + 1
        if complete > len(sealed.text):
            sealed.extend(code[len(sealed.text) : complete], show=False)
        return sealed.html(code)


def _clip(tokens: list[LexToken], text: str, start: int, end: int) -> str:
    """The part [start, end) of `text` in spans, from tokens that cover it (or its beginning)."""
    spans = Spans()
    reached = start
    for pos, ttype, value in tokens:
        stop = pos + len(value)
        if stop <= start or pos >= end or not value:
            continue
        spans.add(role(ttype), text[max(pos, start) : min(stop, end)])
        reached = min(stop, end)
    if reached < end:
        spans.add(None, text[reached:end])
    return spans.html()
