"""Splitting text into token-sized pieces, the way a model's tokenizer roughly would.

The pieces only need to look and pace like real tokens (about four characters, a word with its
leading space, punctuation on its own), but they must be lossless: joined again they give the
text back byte for byte, because the server streams exactly these pieces and reports their count
as completion tokens.

Both functions are linear in the text, whatever its shape: prompts are untrusted, and the server
runs in the user's kernel, so one 2 MB "word" must cost milliseconds, not seconds. The pattern
never backtracks over more than one run of the same kind of character, a long word is cut by
index (never by re-slicing its rest), and `count_tokens` counts without cutting them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["tokenize", "count_tokens"]

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
