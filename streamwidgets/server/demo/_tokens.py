"""Splitting text into token-sized pieces, the way a model's tokenizer roughly would.

The pieces only need to look and pace like real tokens (about four characters, a word with its
leading space, punctuation on its own), but they must be lossless: joined again they give the
text back byte for byte, because the server streams exactly these pieces and reports their count
as completion tokens.

Both functions are linear in the text, whatever its shape: prompts are untrusted, and the server
runs in the user's kernel, so one 2 MB "word" must cost milliseconds, not seconds. The pattern
never backtracks over more than one run of the same kind of character, a long word is cut by
index (never by re-slicing its rest), and `count_tokens` counts without cutting them.

A script holds its pieces as `Pieces`: a count known up front and pieces made only while they
are written, so a million-token answer costs the server what one paragraph does.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property

__all__ = ["tokenize", "count_tokens", "Pieces", "TextPieces", "MadePieces", "NO_PIECES", "joined"]

_PIECE = re.compile(
    r" ?[^\W\d_]+"  # a word (letters of any script) with its leading space
    r"| ?\d{1,3}"  # numbers in groups of three digits, as BPE vocabularies do
    r"| ?(?:[^\w\s]|_)"  # one punctuation mark, symbol or emoji code point
    r"|\n+"  # a run of newlines
    r"|[ \t]+?(?= ?\S)"  # indentation, leaving one space for the word that follows
    r"|[ \t]+"  # trailing spaces
    r"|\s"  # any other whitespace, one at a time
)
_LONGEST_WORD = 10  # letters; longer words come out in pieces of five
_WORD_PIECE = 5
_LAST_PIECE = _LONGEST_WORD - 2  # the last piece of a long word holds up to this many letters


def tokenize(text: str) -> list[str]:
    """The token pieces of `text`; `"".join(tokenize(text)) == text` always holds."""
    return list(_pieces(text))


def count_tokens(text: str) -> int:
    """How many pieces `tokenize` would make, for prompt-token estimates (one scan, no pieces cut)."""
    matches = _PIECE.findall(text)
    return len(matches) + sum(_long_word(piece) - 1 for piece in matches if len(piece) > _LONGEST_WORD)


def _pieces(text: str) -> Iterator[str]:
    for piece in _PIECE.findall(text):
        if len(piece) > _LONGEST_WORD and _long_word(piece) > 1:
            # Long words come out of a BPE vocabulary in several sub-word pieces, cut by index.
            cut = len(piece) - len(piece.lstrip(" ")) + _WORD_PIECE
            yield piece[:cut]
            while len(piece) - cut > _LAST_PIECE:
                yield piece[cut : cut + _WORD_PIECE]
                cut += _WORD_PIECE
            yield piece[cut:]
        else:
            yield piece


def _long_word(piece: str) -> int:
    """How many pieces a matched piece is cut into: more than one for a word of letters only
    (with its leading space) that is longer than `_LONGEST_WORD`."""
    letters = len(piece.lstrip(" "))
    if letters <= _LONGEST_WORD or not piece[-letters:].isalpha():
        return 1
    middle = max(0, -(-(letters - _WORD_PIECE - _LAST_PIECE) // _WORD_PIECE))
    return 2 + middle


class Pieces:
    """Token pieces made on demand: `len()` without cutting them, a fresh iterator on each pass.

    `take(n)` is the first `n` pieces, lazily too; `text` joins them (a writer that needs the
    whole text, such as a non-streamed answer, pays for it then and only then).
    """

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator[str]:
        raise NotImplementedError

    @property
    def text(self) -> str:
        # Joined a few thousand pieces at a time: `"".join` of a generator would first list
        # every piece, a million small strings for the longest answer.
        pieces = iter(self)
        parts = []
        while chunk := list(itertools.islice(pieces, 4096)):
            parts.append("".join(chunk))
        return "".join(parts)

    def take(self, count: int) -> Pieces:
        return self if count >= len(self) else _Prefix(self, max(0, count))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Pieces):
            return NotImplemented
        if len(self) != len(other):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return len(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {len(self):,} pieces>"


class TextPieces(Pieces):
    """The pieces of a text that is at hand (a lesson, a tool's arguments): cut while written."""

    def __init__(self, text: str) -> None:
        self._text = text

    @cached_property
    def _count(self) -> int:
        return count_tokens(self._text)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        return _pieces(self._text)

    @property
    def text(self) -> str:
        return self._text


class MadePieces(Pieces):
    """Pieces that a generator makes (the long answer): `make()` yields exactly `count` of them."""

    def __init__(self, make: Callable[[], Iterable[str]], count: int) -> None:
        self._make = make
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        return iter(self._make())


class _Prefix(Pieces):
    def __init__(self, source: Pieces, count: int) -> None:
        self._source = source
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        return itertools.islice(self._source, self._count)


class _Joined(Pieces):
    def __init__(self, parts: tuple[Pieces, ...]) -> None:
        self._parts = parts

    def __len__(self) -> int:
        return sum(len(part) for part in self._parts)

    def __iter__(self) -> Iterator[str]:
        return itertools.chain.from_iterable(self._parts)


def joined(parts: Iterable[Pieces]) -> Pieces:
    """The pieces of `parts` one after the other (a script's text blocks), still lazy."""
    kept = tuple(parts)
    return kept[0] if len(kept) == 1 else _Joined(kept)


NO_PIECES: Pieces = TextPieces("")
