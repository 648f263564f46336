"""Lexing a code block that grows at its end, so that each of its lines is lexed once.

Pygments' `RegexLexer` reads a text left to right: at each position it tries the rules of its
current state in order, and the first regex that matches makes the token there (and may push or
pop states). `lex` is that same loop (Pygments' own, which it cannot be told to start from a
position or to report its state), started at a given position with a given state stack and
stopped at a given offset, so that the complete lines of an open fence are lexed once, and lexing
goes on from where they ended when more lines come.

That is exact only if what was decided does not depend on the text still to come. For most rules
it cannot: a regex that cannot match a newline reads no further than the end of its line. A rule
that can (a block comment's `/\\*.*?\\*/`, Python's rule for a whole docstring, `\\s+`) may have
failed at the end of the text for want of its closer, or stopped there, and decide differently
once more text comes. So each attempt of such a rule is probed: a twin of its regex, with every
read of a character turned into "is this the end of the text? then say so", replays the regex's
own search in its own order and tells whether it reached the end before it decided. The attempts
that did are kept as `Hazard`s and tried again on the longer text; where one decides differently,
lexing must go back to before it.

Only lexers that run Pygments' loop unchanged can be resumed (`Resumable.of`); the others (JSON,
C, YAML, ...) are highlighted whole, as before.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, Optional

from pygments.lexer import Lexer, RegexLexer
from pygments.token import Error, Whitespace, _TokenType


def _sre(name: str, before_311: str) -> Any:
    """Python's regex parser and compiler (internal modules, checked in tests/markdown): `re._parser`
    since Python 3.11, `sre_parse` before."""
    try:
        return importlib.import_module(f"re._{name}")  # Python 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        return importlib.import_module(before_311)


sre_parse = _sre("parser", "sre_parse")
sre_compile = _sre("compiler", "sre_compile")
sre = _sre("constants", "sre_constants")

__all__ = ["Resumable", "Hazard", "LexToken"]

#: A token as Pygments' loop makes it: (offset in the text, token type, text).
LexToken = tuple[int, _TokenType, str]
_Match = Callable[[str, int], Any]  # a compiled regex's `match`


@dataclass(frozen=True)
class Hazard:
    """A rule tried at `pos` whose outcome (`regs`: the match's spans, or None) depended on the end
    of the text it was tried on; `mark` says where lexing must go back to if it changes."""

    pos: int
    rule: _Match
    regs: Optional[tuple[tuple[int, int], ...]]
    mark: int


#: A rule as Pygments keeps it (its regex's `match`, its action, its state change), with the
#: probe of its regex (None: the rule reads no further than the end of its line).
_Rule = tuple[_Match, Any, Any, Optional["_Probe"]]


class Resumable:
    """Pygments' `RegexLexer` loop for one lexer, resumable, with its end-dependent attempts noted."""

    @staticmethod
    def of(lexer: Lexer) -> Optional[Resumable]:
        """The resumable loop of `lexer`, or None if it does not run Pygments' loop unchanged
        (its own loop, filters, or options that change the text before lexing)."""
        if lexer.filters or lexer.stripall or lexer.stripnl or lexer.ensurenl or lexer.tabsize:
            return None
        return _resumable(lexer)

    def __init__(self, lexer: RegexLexer) -> None:
        self._lexer = lexer
        self._states = _States(lexer._tokens)

    def lex(
        self,
        text: str,
        pos: int = 0,
        stack: Sequence[str] = ("root",),
        stop: Optional[int] = None,
        hazards: Optional[list[Hazard]] = None,
        mark: int = 0,
    ) -> tuple[list[LexToken], int, tuple[str, ...]]:
        """Lex `text` from `pos` in state `stack`: (tokens, where it stopped, the stack there).

        With `stop`, no rule is tried at or after `stop` (the last token may run past it);
        without, lexing ends where Pygments' ends. With `hazards`, every attempt whose outcome
        depended on the end of `text` is appended to it, with `mark` (only rules that can read
        past the end of their line are probed: `text` is complete lines, and attempts on its
        last newline are left to the next call by `stop`).

        The loop is Pygments' `RegexLexer.get_tokens_unprocessed`, line for line; only the start,
        the stop and the probes are added, and the rules that cannot match at `pos` because of
        the character there are not tried (`_States`): the first rule in order that matches is
        the same, with a fraction of the attempts.
        """
        lexer = self._lexer
        states = self._states
        statestack = list(stack)
        statetokens = states[statestack[-1]]
        tokens: list[LexToken] = []
        end = len(text)
        while stop is None or pos < stop:
            if pos < end:
                code = ord(text[pos])
                rules = statetokens[code if code < _OTHER else _OTHER]
            else:
                rules = statetokens[_END]
            for rexmatch, action, new_state, probe in rules:
                m = rexmatch(text, pos)
                if probe is not None and hazards is not None and probe.reaches_end(text, pos):
                    hazards.append(Hazard(pos, rexmatch, m.regs if m else None, mark))
                if m:
                    if action is not None:
                        if type(action) is _TokenType:
                            tokens.append((pos, action, m.group()))
                        else:
                            tokens.extend(action(lexer, m))
                    pos = m.end()
                    if new_state is not None:
                        # state transition
                        if isinstance(new_state, tuple):
                            for state in new_state:
                                if state == "#pop":
                                    if len(statestack) > 1:
                                        statestack.pop()
                                elif state == "#push":
                                    statestack.append(statestack[-1])
                                else:
                                    statestack.append(state)
                        elif isinstance(new_state, int):
                            # pop, but keep at least one state on the stack
                            if abs(new_state) >= len(statestack):
                                del statestack[1:]
                            else:
                                del statestack[new_state:]
                        elif new_state == "#push":
                            statestack.append(statestack[-1])
                        else:
                            raise AssertionError(f"wrong state def: {new_state!r}")
                        statetokens = states[statestack[-1]]
                    break
            else:
                # No rule matched here.
                if pos >= len(text):
                    break
                if text[pos] == "\n":
                    # at EOL, reset state to "root"
                    statestack = ["root"]
                    statetokens = states["root"]
                    tokens.append((pos, Whitespace, "\n"))
                    pos += 1
                    continue
                tokens.append((pos, Error, text[pos]))
                pos += 1
        return tokens, pos, tuple(statestack)


@cache
def _resumable(lexer: Lexer) -> Optional[Resumable]:
    kind = type(lexer)
    plain = (
        isinstance(lexer, RegexLexer)
        and kind.get_tokens_unprocessed is RegexLexer.get_tokens_unprocessed
        and kind.get_tokens is Lexer.get_tokens
        and getattr(kind, "_preprocess_lexer_input", None) is getattr(Lexer, "_preprocess_lexer_input", None)
    )
    return Resumable(lexer) if plain else None


def recheck(hazards: Iterable[Hazard], text: str, settle: bool = True) -> tuple[Optional[Hazard], list[Hazard]]:
    """Try the hazards again on `text` (which goes on from the text they were found on).

    Returns the first that decides differently now (lexing must go back to its mark), or None;
    and, with `settle`, the hazards that still depend on the end of `text` (the others are
    decided for good).
    """
    pending: list[Hazard] = []
    for hazard in hazards:
        m = hazard.rule(text, hazard.pos)
        if (m.regs if m else None) != hazard.regs:
            return hazard, pending
        probe = _probe_of(hazard.rule)
        if settle and probe is not None and probe.reaches_end(text, hazard.pos):
            pending.append(hazard)
    return None, pending


# The parts of a parsed regex, as re's parser names them.
_REPEATS = tuple(getattr(sre, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(sre, name))
_ATOMIC = getattr(sre, "ATOMIC_GROUP", None)  # Python 3.11+
_LOOKS = (sre.ASSERT, sre.ASSERT_NOT)

#: A state's rules by the character they are tried at: `rules[ord(c)]` for an ASCII `c`,
#: `rules[_OTHER]` for any other character, `rules[_END]` at the end of the text.
_OTHER, _END = 128, 129
_Dispatch = tuple[tuple[_Rule, ...], ...]


class _States(dict[str, _Dispatch]):
    """A lexer's states (`RegexLexer._tokens`), each rule with its probe, made on first use, and
    kept by the character they are tried at: a rule whose regex cannot start with that character
    (`_starts`) fails there at once, whatever follows, so leaving it out changes nothing."""

    def __init__(self, tokendefs: dict[str, list[tuple[Any, Any, Any]]]) -> None:
        super().__init__()
        self._tokendefs = tokendefs

    def __missing__(self, state: str) -> _Dispatch:
        # Each rule's probe, then where it can start: one parse of its regex for both (`_parsed`).
        starts = [
            ((m, action, new_state, _probe_of(m)), _starts_of(m)) for m, action, new_state in self._tokendefs[state]
        ]
        rules = [rule for rule, _ in starts]
        by_char = tuple(
            tuple(rule for rule, start in starts if start is None or code in start[0]) for code in range(_OTHER)
        )
        other = tuple(rule for rule, start in starts if start is None or start[1])
        dispatch = (*by_char, other, tuple(rules))
        self[state] = dispatch
        return dispatch


# -------------------------------------------------------------------------------- first chars

#: The ASCII characters, as one-character texts, to try a one-character regex on.
_ASCII = tuple(chr(code) for code in range(_OTHER))
_READS = (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN)


@cache
def _starts_of(match: _Match) -> Optional[tuple[frozenset[int], bool]]:
    """What a match of this rule's regex can start with: (the ASCII codes, whether any other
    character), or None if it can match empty (or it is a regex this cannot read)."""
    pattern, parsed = _parsed(match)
    if parsed is None:
        return None
    try:
        codes, other, empty = _starts(parsed.data, parsed.state.flags | pattern.flags)
    except Exception:
        return None
    return None if empty else (frozenset(codes), other)


def _starts(items: Sequence[tuple[Any, Any]], flags: int) -> tuple[set[int], bool, bool]:
    """The first characters of this part of a regex: (ASCII codes, any other character, whether
    it can match empty). Zero-width parts (anchors, lookarounds) are passed over: what they
    allow is a subset of what the part after them reads."""
    codes: set[int] = set()
    other = False
    for op, av in items:
        if op in _READS:
            first, beyond = _reads(op, av, flags)
            return codes | first, other or beyond, False
        if op is sre.AT or op in _LOOKS:
            continue
        if op is sre.SUBPATTERN:
            _group, add, remove, sub = av
            first, beyond, empty = _starts(sub.data, (flags | add) & ~remove)
        elif op is _ATOMIC:
            first, beyond, empty = _starts(av.data, flags)
        elif op in _REPEATS:
            first, beyond, empty = _starts(av[2].data, flags)
            empty = empty or av[0] == 0
        elif op is sre.BRANCH:
            parts = [_starts(alt.data, flags) for alt in av[1]]
            first = set().union(*(part[0] for part in parts))
            beyond = any(part[1] for part in parts)
            empty = any(part[2] for part in parts)
        else:  # a backreference, a conditional, anything new: it may match anything, or empty
            return codes, True, True
        codes |= first
        other = other or beyond
        if not empty:
            return codes, other, False
    return codes, other, True


def _reads(op: Any, av: Any, flags: int) -> tuple[set[int], bool]:
    """The characters one reading part of a regex matches: the ASCII ones, found by trying it on
    each, and whether it may match any other (yes, unless it plainly cannot)."""
    if op is sre.LITERAL and not flags & sre.SRE_FLAG_IGNORECASE:
        return {av}, av >= _OTHER
    state = sre_parse.State()
    state.flags = flags
    one = sre_compile.compile(sre_parse.SubPattern(state, [(op, av)]), flags).match
    codes = {code for code, char in enumerate(_ASCII) if one(char)}
    plain = op is sre.IN and all(
        (kind is sre.LITERAL and value < _OTHER) or (kind is sre.RANGE and value[1] < _OTHER) for kind, value in av
    )
    return codes, not (plain and not flags & sre.SRE_FLAG_IGNORECASE)


# ------------------------------------------------------------------------------------- probes


class _Probe:
    """Tells whether an attempt of one rule reached the end of the text before it decided.

    By the regex's twin (made on first need); but first by what is plain from the regex itself:
    a rule that reads at most `reach` characters cannot reach an end further away, and one
    anchored at the start of a line fails at once elsewhere. (A rule that cannot start with the
    character at its position is never tried there: `_States`.)
    """

    __slots__ = ("_anchored", "_parsed", "_pattern", "_reach", "_twin")

    def __init__(self, pattern: Any, parsed: Any) -> None:
        self._pattern = pattern
        self._parsed = parsed  # None: not a regex this can read; every attempt reaches the end
        self._twin: Optional[_Match] = None
        self._reach: Optional[int] = None
        self._anchored = False
        if parsed is not None:
            data = parsed.data
            self._reach = _reach(data)
            self._anchored = bool(data) and data[0] in ((sre.AT, sre.AT_BEGINNING), (sre.AT, sre.AT_BEGINNING_STRING))

    def reaches_end(self, text: str, pos: int) -> bool:
        end = len(text)
        if self._reach is not None and pos + self._reach + 2 <= end:  # (`$` looks one further)
            return False
        if self._anchored and 0 < pos < end and text[pos - 1] != "\n":
            return False
        if self._twin is None:
            self._twin = self._make_twin()
        found = self._twin(text, pos)
        return found is not None and found.group(1) is not None

    def _make_twin(self) -> _Match:
        try:
            state = sre_parse.State()
            state.flags = self._parsed.state.flags
            hit = state.opengroup()
            state.closegroup(hit, sre_parse.SubPattern(state, []))
            twin = _Twin(state, hit).seq(self._parsed.data)
            compiled = sre_compile.compile(sre_parse.SubPattern(state, twin), self._pattern.flags)
            return compiled.match
        except Exception:  # a regex this cannot take apart (a backreference, a conditional)
            return _reached_end


_REACHED = re.compile("()").match("")  # a match whose group 1 is set


def _reached_end(_text: str, _pos: int) -> Any:
    return _REACHED


@lru_cache(maxsize=8)  # asked for by `_probe_of` and then `_starts_of` of the same rule
def _parsed(match: _Match) -> tuple[Any, Any]:
    """A rule's compiled regex, and `re`'s parse tree of it (None: one it cannot parse back)."""
    pattern: Any = getattr(match, "__self__", None)
    try:
        return pattern, sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:
        return pattern, None


@cache
def _probe_of(match: _Match) -> Optional[_Probe]:
    """The probe of the rule whose regex's `match` this is (None: it reads no further than the
    end of its line, so in complete lines it cannot reach the end of the text)."""
    pattern, parsed = _parsed(match)
    if parsed is None:
        return _Probe(pattern, None)
    flags = parsed.state.flags | pattern.flags
    if not _reads_newline(parsed.data, bool(flags & sre.SRE_FLAG_DOTALL), bool(flags & sre.SRE_FLAG_MULTILINE)):
        return None
    return _Probe(pattern, parsed)


def _reach(items: Sequence[tuple[Any, Any]]) -> Optional[int]:
    """How many characters from its start this part of a regex may read (None: no bound)."""
    consumed, extent = 0, 0
    for op, av in items:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            width: Optional[int] = 1
        elif op is sre.AT:
            width = 0
        elif op is sre.SUBPATTERN:
            width = _reach(av[3].data)
        elif op is _ATOMIC:
            width = _reach(av.data)
        elif op is sre.BRANCH:
            widths = [_reach(alt.data) for alt in av[1]]
            width = None if None in widths else max(w for w in widths if w is not None)
        elif op in _REPEATS:
            inner = _reach(av[2].data)
            width = None if inner is None or (inner and av[1] >= sre.MAXREPEAT) else av[1] * inner
        elif op in _LOOKS:
            if av[0] < 0:
                continue  # a lookbehind reads backwards
            ahead = _reach(av[1].data)
            if ahead is None:
                return None
            extent = max(extent, consumed + ahead)
            continue
        else:
            return None
        if width is None:
            return None
        consumed += width
        extent = max(extent, consumed)
    return extent


_NEWLINE_CATEGORIES = {sre.CATEGORY_SPACE, sre.CATEGORY_NOT_DIGIT, sre.CATEGORY_NOT_WORD, sre.CATEGORY_LINEBREAK}


def _reads_newline(items: Sequence[tuple[Any, Any]], dotall: bool, multiline: bool = True) -> bool:
    """Can this part of a regex read past the newline that ends the line it starts on?

    It can if it can consume a newline; and `$` without MULTILINE looks past the text's last one.
    """
    for op, av in items:
        if op is sre.LITERAL:
            if av == 10:
                return True
        elif op is sre.NOT_LITERAL:
            if av != 10:
                return True
        elif op is sre.ANY:
            if dotall:
                return True
        elif op is sre.IN:
            if _set_has_newline(av):
                return True
        elif op is sre.AT:
            if av == sre.AT_END and not multiline:
                return True
        elif op is sre.BRANCH:
            if any(_reads_newline(alt.data, dotall, multiline) for alt in av[1]):
                return True
        elif op is sre.SUBPATTERN:
            _group, add, remove, sub = av
            inner = (dotall or bool(add & sre.SRE_FLAG_DOTALL)) and not remove & sre.SRE_FLAG_DOTALL
            lines = (multiline or bool(add & sre.SRE_FLAG_MULTILINE)) and not remove & sre.SRE_FLAG_MULTILINE
            if _reads_newline(sub.data, inner, lines):
                return True
        elif op in _REPEATS:
            if av[1] > 0 and _reads_newline(av[2].data, dotall, multiline):
                return True
        elif op is _ATOMIC:
            if _reads_newline(av.data, dotall, multiline):
                return True
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            if av[0] > 0 and _reads_newline(av[1].data, dotall, multiline):
                return True
        else:  # a backreference, a conditional, anything new: assume it can
            return True
    return False


def _set_has_newline(items: Sequence[tuple[Any, Any]]) -> bool:
    negate, hit = False, False
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit = hit or av == 10
        elif op is sre.RANGE:
            hit = hit or av[0] <= 10 <= av[1]
        elif op is sre.CATEGORY:
            hit = hit or av in _NEWLINE_CATEGORIES
        else:
            return True
    return hit != negate


class _Twin:
    """Rewrites a parsed regex into its probe: the same search, in the same order, except that
    wherever the regex would read past the end of the text, the twin sets group 1 and matches.

    Each character read (a literal, a class, `.`) and each test of the end (`$`, `\\b`, `\\Z`)
    becomes `(?(1)|(?:(?=END)()|read))`: once the end was reached nothing more is tried, at the
    end the twin says so, elsewhere it reads what the regex reads. Lookbehinds read backwards
    only and stay; a negative lookahead that reaches the end counts as reaching it.
    """

    def __init__(self, state: Any, hit: int) -> None:
        self._state = state
        self._hit = hit

    def _sub(self, items: list[tuple[Any, Any]]) -> Any:
        return sre_parse.SubPattern(self._state, items)

    def seq(self, items: Sequence[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        out: list[tuple[Any, Any]] = []
        for op, av in items:
            out.extend(self._node(op, av))
        return out

    def _unless_hit(self, items: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        return [(sre.GROUPREF_EXISTS, (self._hit, self._sub([]), self._sub(items)))]

    def _reading(self, node: tuple[Any, Any], end: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        mark = (sre.SUBPATTERN, (self._hit, 0, 0, self._sub([])))
        at_end = [(sre.ASSERT, (1, self._sub(end))), mark]
        return self._unless_hit([(sre.BRANCH, (None, [self._sub(at_end), self._sub([node])]))])

    def _node(self, op: Any, av: Any) -> list[tuple[Any, Any]]:
        end = [(sre.AT, sre.AT_END_STRING)]
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            return self._reading((op, av), end)
        if op is sre.AT:
            if av in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING, sre.AT_BEGINNING_LINE):
                return self._unless_hit([(op, av)])  # reads the character before only
            if av in (sre.AT_END, sre.AT_END_LINE):  # `$` also looks past a final newline
                end = [(sre.MAX_REPEAT, (0, 1, self._sub([(sre.LITERAL, 10)]))), (sre.AT, sre.AT_END_STRING)]
            return self._reading((op, av), end)
        if op is sre.SUBPATTERN:
            _group, add, remove, sub = av
            return [(sre.SUBPATTERN, (None, add, remove, self._sub(self.seq(sub.data))))]
        if op is sre.BRANCH:
            return [(sre.BRANCH, (None, [self._sub(self.seq(alt.data)) for alt in av[1]]))]
        if op in _REPEATS:
            low, high, sub = av
            return [(op, (low, high, self._sub(self.seq(sub.data))))]
        if op is _ATOMIC:
            return [(op, self._sub(self.seq(av.data)))]
        if op is sre.ASSERT and av[0] > 0:
            return [(op, (1, self._sub(self.seq(av[1].data))))]
        if op is sre.ASSERT_NOT and av[0] > 0:
            # Reached the end while looking ahead: a hit. Else as the lookahead itself.
            looked = [
                (sre.ASSERT, (1, self._sub(self.seq(av[1].data)))),
                *self._unless_hit([(sre.ASSERT_NOT, (1, self._sub([])))]),
            ]
            return self._unless_hit([(sre.BRANCH, (None, [self._sub(looked), self._sub([(op, av)])]))])
        if op in (sre.ASSERT, sre.ASSERT_NOT):  # lookbehind: reads backwards only
            return self._unless_hit([(op, av)])
        raise ValueError(f"cannot probe {op}")
