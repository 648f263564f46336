"""Splitting text into token-sized pieces, the way a model's tokenizer roughly would.

The pieces only need to look and pace like real tokens (about four characters, a word with its
leading space, punctuation on its own), but they must be lossless: joined again they give the
text back byte for byte, because the server streams exactly these pieces and reports their count
as completion tokens.
"""

from __future__ import annotations

import re

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


def tokenize(text: str) -> list[str]:
    """The token pieces of `text`; `"".join(tokenize(text)) == text` always holds."""
    pieces: list[str] = []
    for match in _PIECE.finditer(text):
        piece = match.group()
        if len(piece.lstrip()) > _LONGEST_WORD and piece.strip().isalpha():
            # Long words come out of a BPE vocabulary in several sub-word pieces.
            head = len(piece) - len(piece.lstrip()) + _WORD_PIECE
            pieces.append(piece[:head])
            rest = piece[head:]
            while len(rest) > _LONGEST_WORD - 2:
                pieces.append(rest[:_WORD_PIECE])
                rest = rest[_WORD_PIECE:]
            if rest:
                pieces.append(rest)
        else:
            pieces.append(piece)
    return pieces


def count_tokens(text: str) -> int:
    """How many pieces `tokenize` would make, for prompt-token estimates."""
    return len(tokenize(text))
