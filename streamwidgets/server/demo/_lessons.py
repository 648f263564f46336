"""The lessons: what the `demo` model answers a question with, and how it chooses one.

Offline, with no key, the toolkit streams from the embedded provider, and a teacher shows its
answers to a class. So an answer must be about the question that was asked, or say plainly that
the demo has none: never a well-written answer to another question. A lesson is chosen by the
words of the question (stems and a few synonyms, the same question always gets the same lesson),
a small sum is worked out exactly, a greeting gets a greeting, and anything else gets the short
`NO_LESSON` reply. The chosen lesson's title travels in the `X-Demo-Script` header, so that a
client can say "a prepared lesson about binary search, picked by words in your question".

Each lesson answers its question properly, in the markdown a chat model would use; some carry
accented letters and emoji so that every client's UTF-8 handling is exercised. The reasoning
texts are what a model would plausibly think before writing the answer. The texts are package
data, one markdown file each in `lessons/` (read with `importlib.resources`); the choosing is
here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from importlib.resources import files
from typing import Optional

__all__ = ["Lesson", "LESSONS", "GREETING", "NO_LESSON", "choose_lesson", "score", "lesson_titles"]


@dataclass(frozen=True)
class Lesson:
    """One scripted answer and the words that ask for it.

    `title` is plain ASCII of at most 60 characters: it is sent as the `X-Demo-Script` header.
    `keywords` are written in a small syntax (see `score`): `recurs*` is a stem, `binary search`
    a phrase, `list` a whole word (its plural too).
    """

    title: str
    keywords: tuple[str, ...]
    text: str
    reasoning: str


# ---------------------------------------------------------------------------- choosing


def choose_lesson(prompt: str) -> Lesson:
    """The lesson for a question: a small sum worked out, else the lesson whose keywords the
    question matches best (the first in `LESSONS` on a tie), else a greeting for a greeting,
    else `NO_LESSON`. Deterministic: no hash, no randomness."""
    sum_ = _arithmetic(prompt)
    if sum_ is not None:
        return sum_
    text = prompt.lower()
    best, best_score = NO_LESSON, 0
    for lesson in LESSONS:
        points = score(text, lesson.keywords)
        if points > best_score:
            best, best_score = lesson, points
    if best_score == 0 and _greets(text):
        return _told(GREETING)
    return _told(best)


#: Where a lesson says how to get real answers offline (`real_answers`).
_REAL = "{real_answers}"


def _told(lesson: Lesson) -> Lesson:
    return replace(lesson, text=lesson.text.replace(_REAL, real_answers())) if _REAL in lesson.text else lesson


def real_answers() -> str:
    """How to get real answers offline on this machine, as a sentence: install the `[local]`
    extra (only where it is missing), pull a model, or ask the one that is here; nothing in a
    browser, where none can run."""
    from ..local import local_model_missing, real_answers_hint

    hint = real_answers_hint()
    if hint is None:
        here = local_model_missing() is None
        return 'For real answers offline, ask the local model on this machine: `provider="local"`.' if here else ""
    if hint.startswith("pip install"):
        return 'For real answers offline, install a local model: `pip install ".[local]"`, then `streamwidgets pull`.'
    return "For real answers offline, fetch a local model once, with a network: `streamwidgets pull`."


def _greets(text: str) -> bool:
    """The question is a greeting: it starts with one ("good morning!", "hi there"), not one that
    only mentions a greeting ("translate 'good morning' into French")."""
    opening = text.lstrip(" \t\n\"'¡¿!,.-")
    return len(text.split()) <= 8 and any(_pattern(keyword).match(opening) for keyword in GREETING.keywords)


def score(text: str, keywords: Iterable[str]) -> int:
    """How strongly a lower-cased `text` asks for a topic: the words of each keyword it contains.

    A keyword is one or more words. In the text they may be joined by spaces, hyphens, slashes
    or underscores (`server sent` finds "server-sent"). A word ending in `*` is a stem
    (`recurs*` finds "recursion" and "recursive"); any other word is matched whole, or with a
    plural `s`/`es` when it has three letters or more (`list` finds "lists", `hi` never "his").
    A phrase weighs its number of words, so "binary search on a sorted list" is about binary
    search (4) rather than lists (1).
    """
    return sum(len(keyword.split()) for keyword in keywords if _pattern(keyword).search(text))


@cache
def _pattern(keyword: str) -> re.Pattern[str]:
    words = []
    for word in keyword.split():
        if word.endswith("*"):
            words.append(re.escape(word[:-1]) + r"\w*")
        else:
            plural = "(?:e?s)?" if len(word) >= 3 and word[-1].isalpha() else ""
            words.append(re.escape(word) + plural)
    return re.compile(r"(?<!\w)" + r"[\s\-_/]+".join(words) + r"(?!\w)")


def lesson_titles() -> list[str]:
    """The topics `demo` has a lesson about, in the order the lessons are tried (small sums,
    which are worked out, come before them all)."""
    return [lesson.title for lesson in LESSONS]


# ---------------------------------------------------------------------------- small sums

#: "What is 2+2?", "compute 3 x (4 - 1)", "12 / 5 =": a question that is only a sum.
_SUM = re.compile(
    r"\s*(?:(?:what|how\s+much)\s+(?:is|are|'s|does)|what's|calculate|compute|evaluate|work\s+out)?\s*"
    r"(?P<expression>[\d\s.,+\-*/×x÷^()]*\d[\d\s.,+\-*/×x÷^()]*?)\s*(?:=|equals?|make)?\s*\?*[.!?]*\s*",
    re.IGNORECASE,
)
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_LARGEST = 10**30  # a result longer than this is not a small sum


#: A sum said in words ("What is 12 times 7?", "twelve times seven"): its operators and numbers.
_OPERATOR_WORDS = {
    "times": "*",
    "multiplied by": "*",
    "plus": "+",
    "added to": "+",
    "minus": "-",
    "divided by": "/",
    "over": "/",
    "to the power of": "^",
    "squared": "^2",
    "cubed": "^3",
}
_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_NUMBER_WORD = re.compile(
    rf"\b(?:({'|'.join(_TENS)})(?:[\s-]({'|'.join(_UNITS[1:10])}))?|({'|'.join(_UNITS)}))\b", re.IGNORECASE
)
_OPERATOR_WORD = re.compile(rf"\b({'|'.join(sorted(_OPERATOR_WORDS, key=len, reverse=True))})\b", re.IGNORECASE)


def _in_figures(text: str) -> str:
    """`text` with the numbers (up to ninety-nine) and operators said in words written as a sum."""

    def number(match: re.Match[str]) -> str:
        tens, unit, alone = match.groups()
        if alone:
            return str(_UNITS.index(alone.lower()))
        return str(20 + 10 * _TENS.index(tens.lower()) + (_UNITS.index(unit.lower()) if unit else 0))

    text = _NUMBER_WORD.sub(number, text)
    return _OPERATOR_WORD.sub(lambda m: f" {_OPERATOR_WORDS[m.group(1).lower()]} ", text)


def _arithmetic(prompt: str) -> Optional[Lesson]:
    """A lesson that works out a question made only of a small sum, or None."""
    if len(prompt) > 120:
        return None
    match = _SUM.fullmatch(_in_figures(prompt.replace("\u2019", "'")))  # What’s 2+2?
    if match is None:
        return None
    source = match.group("expression").strip()
    python = re.sub(r"(?<=\d),(?=\d{3}\b)", "", source)  # 1,000 is a thousand
    python = python.replace("×", "*").replace("x", "*").replace("X", "*").replace("÷", "/").replace("^", "**")
    try:
        tree = ast.parse(python, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.BinOp) or not _is_sum(tree):
        return None
    shown = _show(tree)
    try:
        steps = _steps(tree)
        value = _value(tree)
    except ZeroDivisionError:
        return Lesson(
            title="arithmetic",
            keywords=(),
            text=f"**{shown} has no value.** Dividing by zero is undefined in ordinary arithmetic: a ÷ b is the "
            "number that gives a when multiplied by b, and every number multiplied by 0 gives 0, so there is no "
            "such number (or, for 0 ÷ 0, no single one).\n\n*Worked out by the offline demo, not by a language "
            "model.*\n",
            reasoning=f"This is a small sum, {shown}, but it divides by zero, which is undefined. I should say "
            "so instead of giving a number.",
        )
    except OverflowError:
        return None
    result = _number(value)
    equals = f"{shown} {result}"
    lines = [f"**{equals}**", ""]
    if len(steps) > 1:
        lines += [
            "Brackets first, then powers, then × and ÷, then + and −, each from left to right:",
            "",
            " = ".join([shown, *steps]),
            "",
        ]
    if value.denominator != 1 and not _terminates(value):
        lines += [f"As a fraction that is exactly {value.numerator}/{value.denominator}.", ""]
    lines.append("*Worked out by the offline demo, not by a language model.*")
    order = f" Step by step: {' = '.join([shown, *steps])}." if len(steps) > 1 else ""
    return Lesson(
        title="arithmetic",
        keywords=(),
        text="\n".join(lines) + "\n",
        reasoning=f"This is a small arithmetic question: {shown}.{order} So {equals}.",
    )


def _is_sum(node: ast.AST) -> bool:
    """Only numbers, the four operations, powers with small exponents and signs."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.UAdd, ast.USub)) and _is_sum(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _OPERATORS):
        if isinstance(node.op, ast.Pow) and not (
            isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) and node.right.value <= 64
        ):
            return False
        return _is_sum(node.left) and _is_sum(node.right)
    return False


def _value(node: ast.AST) -> Fraction:
    """The exact value (decimals as typed: 0.1 is one tenth)."""
    if isinstance(node, ast.Constant):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp):
        inner = _value(node.operand)
        return -inner if isinstance(node.op, ast.USub) else inner
    assert isinstance(node, ast.BinOp)
    left, right = _value(node.left), _value(node.right)
    if isinstance(node.op, ast.Add):
        value = left + right
    elif isinstance(node.op, ast.Sub):
        value = left - right
    elif isinstance(node.op, ast.Mult):
        value = left * right
    elif isinstance(node.op, ast.Div):
        value = left / right
    else:
        value = left ** int(right)
    if abs(value) > _LARGEST or value.denominator > _LARGEST:
        raise OverflowError
    return value


def _steps(tree: ast.BinOp) -> list[str]:
    """The expression after each operation, in the order they are done; empty when a value on
    the way is not a whole number (a step like 1/3 could only be shown rounded)."""
    steps: list[str] = []
    node: ast.expr = tree
    try:
        while isinstance(node, ast.BinOp):
            node = _reduced(node)
            steps.append(_show(node))
    except _NotWhole:
        return []
    return steps


class _NotWhole(Exception):
    pass


def _reduced(node: ast.BinOp) -> ast.expr:
    """`node` with its first operation (left to right, innermost first) replaced by its value."""
    if isinstance(node.left, ast.BinOp):
        return ast.BinOp(_reduced(node.left), node.op, node.right)
    if isinstance(node.right, ast.BinOp):
        return ast.BinOp(node.left, node.op, _reduced(node.right))
    value = _value(node)
    if value.denominator != 1:
        raise _NotWhole
    return ast.Constant(int(value))


def _show(node: ast.expr) -> str:
    """The expression as a class writes it: ×, ÷, −, 2^10, and a negative number in brackets."""
    text = ast.unparse(node).replace(" ** ", "^").replace("*", "×").replace("/", "÷")
    text = re.sub(r"(?<=[×÷^+-] )-(\d[\d.]*)|(?<=\^)-(\d[\d.]*)", lambda m: f"(−{m.group(1) or m.group(2)})", text)
    text = re.sub(r"(?<=[\d)]) - ", " − ", text)
    return re.sub(r"(?<![\w)])-(?=[\d(])", "−", text)


def _number(value: Fraction) -> str:
    """`= 4`, `= 0.3`, or `≈ 2.333333333` for a fraction that has no exact decimal."""
    if value.denominator == 1:
        digits = str(value.numerator)
    elif _terminates(value):
        digits = f"{float(value):.15g}"
    else:
        return f"≈ {float(value):.10g}".replace("-", "−")
    return f"= {digits}".replace("-", "−")


def _terminates(value: Fraction) -> bool:
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    return denominator == 1


# ---------------------------------------------------------------------------- the lessons

#: The folder of the lesson files, package data of this package.
_FOLDER = files(__name__.rpartition(".")[0]) / "lessons"
#: Where a lesson's text says which topics the demo has lessons about (the greeting, the reply
#: that says there is none).
_TOPICS = "{topics}"


#: The first line of a lesson file: it keeps formatters (ruff formats the Python blocks of
#: markdown files) from changing the text, which is streamed byte for byte.
_GUARD = "<!-- fmt:off -->\n"


def _read(name: str, topics: str = "") -> Lesson:
    """The lesson in `lessons/<name>`: after the guard line, a front matter of `title:`,
    `keywords:` (separated by commas) and `reasoning:` lines between `---` lines, then the text,
    exactly as it is streamed."""
    source = (_FOLDER / name).read_text(encoding="utf-8")
    head, separator, text = source.removeprefix(_GUARD).removeprefix("---\n").partition("\n---\n")
    fields = dict(line.partition(":")[::2] for line in head.splitlines())
    if not separator or set(fields) != {"title", "keywords", "reasoning"}:
        raise ValueError(f"lessons/{name} does not start with its title, keywords and reasoning")
    keywords = fields["keywords"].strip()
    return Lesson(
        title=fields["title"].strip(),
        keywords=tuple(keyword.strip() for keyword in keywords.split(",")) if keywords else (),
        text=text.replace(_TOPICS, topics),
        reasoning=fields["reasoning"].strip(),
    )


def _numbered() -> list[str]:
    """The numbered lesson files (`01-server-sent-events.md`...), in their order."""
    names = (entry.name for entry in _FOLDER.iterdir())
    return sorted(name for name in names if name[:1].isdigit() and name.endswith(".md"))


#: The lessons, in the order they are tried (the first wins a tie): `lessons/NN-*.md`.
LESSONS: tuple[Lesson, ...] = tuple(_read(name) for name in _numbered())


def _topics() -> str:
    titles = lesson_titles()
    return ", ".join(f"*{title}*" for title in titles[:-1]) + f" and *{titles[-1]}*"


#: Chosen only when no lesson fits: "Hi! What is a closure?" is about closures.
GREETING = _read("greeting.md", _topics())

#: What `demo` says to a question it has no lesson for (the `X-Demo-Script` header is `none`).
NO_LESSON = _read("none.md", _topics())
