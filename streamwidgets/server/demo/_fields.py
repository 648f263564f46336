"""Checking a body's fields as the real APIs check them: unknown names and values out of range.

A typo'd keyword (`show("hi", modle="demo-fast")`) goes into the body as it is. The demo server
used to ignore it, so the cell ran with the default model and nobody noticed; a real provider
answers 400 and names the field. So does this server now, worded as each provider words it
(each API spec has its words: OpenAI's `Unrecognized request argument supplied: modle`,
Anthropic's `modle: Extra inputs are not permitted`), with the closest accepted field
suggested. Out-of-range and wrongly typed sampling fields (`temperature` 5, -1 or `"hot"`,
`max_tokens` 0, `n` 500, `stream` "yes") get the provider's own 400 too, instead of being
ignored.

This module holds what every API checks alike: a field's bound (`Bound`), the hints that name
the field meant (`unknown_fields`), and the check of values against their bounds
(`check_values`). The field lists are the providers' API references (`FIELDS`, shared with the
client), each spec's own. Pure: a body in, a `Rejection` raised or nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from ...core import FIELDS, STAND_IN_EXTRAS
from .._edge import Rejection

__all__ = [
    "FIELDS",
    "STAND_IN_EXTRAS",
    "Bound",
    "BOOLEAN",
    "Unknown",
    "Words",
    "unknown_fields",
    "check_values",
    "number_text",
]


@dataclass(frozen=True)
class Bound:
    """A field's JSON type (`decimal`, `integer` or `boolean`) and, for numbers, its range."""

    kind: str
    low: Optional[float] = None
    high: Optional[float] = None


BOOLEAN = Bound("boolean")


@dataclass(frozen=True)
class Unknown:
    """Fields a body holds that the API does not have: the first few, each as (the name as
    quoted, the hint after it), and how many there were in all."""

    parts: tuple[tuple[str, str], ...]
    count: int

    @property
    def more(self) -> str:
        """`" and N more"` when more were found than are named."""
        return f" and {self.count - len(self.parts)} more" if self.count > len(self.parts) else ""


class Words(Protocol):
    """How an API words the 400 of a value (each spec has its own)."""

    def wrong_type(self, name: str, kind: str, value: Any) -> Rejection: ...

    def out_of_range(self, name: str, bound: Bound, value: Any, *, above: bool) -> Rejection: ...


#: Unknown fields named in one message; a body with more gets "and N more".
_NAMED = 5


def unknown_fields(
    names: Sequence[str],
    accepted: Iterable[str],
    *,
    prefix: str = "",
    home: Optional[Callable[[str], Optional[str]]] = None,
) -> Unknown:
    """`names`, each with the closest of `accepted` suggested, else (`home`) the API whose
    field it is: "(did you mean model?)", "(a field of the Responses API (/v1/responses), not
    of this one)"."""
    choices = sorted(accepted)
    parts = []
    for name in names[:_NAMED]:
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.7)
        elsewhere = home(name) if home is not None and not prefix else None
        if close:
            hint = f" (did you mean {prefix}{close[0]}?)"
        elif elsewhere:
            hint = f" (a field of the {elsewhere}, not of this one)"
        else:
            hint = ""
        parts.append((f"{prefix}{name if len(name) <= 60 else name[:60] + '...'}", hint))
    return Unknown(tuple(parts), len(names))


def check_values(words: Words, data: Mapping[str, Any], bounds: Mapping[str, Bound], prefix: str = "") -> None:
    """Raise the 400 of the first value of `data` (named `prefix` + its name) that is of the
    wrong type or out of its bound; a `null` is the API's default and passes."""
    for name, bound in bounds.items():
        value = data.get(name)
        if value is None:
            continue
        if bound.kind == "boolean":
            if not isinstance(value, bool):
                raise words.wrong_type(prefix + name, "boolean", value)
            continue
        integral = isinstance(value, int) and not isinstance(value, bool)
        if not (integral or (bound.kind == "decimal" and isinstance(value, float))):
            raise words.wrong_type(prefix + name, bound.kind, value)
        if bound.low is not None and value < bound.low:
            raise words.out_of_range(prefix + name, bound, value, above=False)
        if bound.high is not None and value > bound.high:
            raise words.out_of_range(prefix + name, bound, value, above=True)


def number_text(value: Any) -> str:
    """A number as a person writes it: 5, 2.5, -1 (never 5.0)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)
