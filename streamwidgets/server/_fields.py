"""The body fields each API accepts and the values they may take, checked as the real APIs check them.

A typo'd keyword (`show("hi", modle="demo-fast")`) goes into the body as it is. The demo server
used to ignore it, so the cell ran with the default model and nobody noticed; a real provider
answers 400 and names the field. So does this server now, worded as each provider words it:
OpenAI's `Unrecognized request argument supplied: modle` on the chat, Responses and legacy
completions routes, Anthropic's `modle: Extra inputs are not permitted` on `/messages`, each
with the closest accepted field suggested. Out-of-range and wrongly typed sampling fields
(`temperature` 5, -1 or `"hot"`, `max_tokens` 0, `n` 500, `stream` "yes") get the provider's own
400 too, instead of being ignored.

The field lists are the providers' API references (and their SDKs' parameters), plus this
server's own `demo` object. The default route also stands in for the presets that have no flavor
of their own (Perplexity, Mistral, Groq, OpenRouter, DeepSeek, Gemini and the local servers), so
on its chat route it accepts their documented extras as well. The seed providers document no
extra request fields: their flavor routes accept the standard ones. Pure: a body in, a
`Rejection` raised or nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from ..core._options import FIELDS, STAND_IN_EXTRAS
from ._errors import Rejection, json_kind

__all__ = ["FIELDS", "STAND_IN_EXTRAS", "accepted_fields", "check_body", "unrecognized"]


@dataclass(frozen=True)
class _Bound:
    """A field's JSON type (`decimal`, `integer` or `boolean`) and, for numbers, its range."""

    kind: str
    low: Optional[float] = None
    high: Optional[float] = None


_BOOLEAN = _Bound("boolean")
_SAMPLING = {"temperature": _Bound("decimal", 0, 2), "top_p": _Bound("decimal", 0, 1)}
_PENALTIES = {"frequency_penalty": _Bound("decimal", -2, 2), "presence_penalty": _Bound("decimal", -2, 2)}

#: The values each API checks (the others are read as they come, or not at all).
_BOUNDS: dict[str, dict[str, _Bound]] = {
    "chat": {
        **_SAMPLING,
        **_PENALTIES,
        "max_tokens": _Bound("integer", 1),
        "max_completion_tokens": _Bound("integer", 1),
        "n": _Bound("integer", 1, 128),
        "top_logprobs": _Bound("integer", 0, 20),
        "stream": _BOOLEAN,
        "logprobs": _BOOLEAN,
        "parallel_tool_calls": _BOOLEAN,
        "store": _BOOLEAN,
    },
    "responses": {
        **_SAMPLING,
        "max_output_tokens": _Bound("integer", 16),
        "max_tool_calls": _Bound("integer", 1),
        "top_logprobs": _Bound("integer", 0, 20),
        "stream": _BOOLEAN,
        "background": _BOOLEAN,
        "parallel_tool_calls": _BOOLEAN,
        "store": _BOOLEAN,
    },
    "messages": {
        "temperature": _Bound("decimal", 0, 1),
        "top_p": _Bound("decimal", 0, 1),
        "top_k": _Bound("integer", 0),
        "max_tokens": _Bound("integer", 1),
        "stream": _BOOLEAN,
    },
    "completions": {
        **_SAMPLING,
        **_PENALTIES,
        "max_tokens": _Bound("integer", 0),
        "n": _Bound("integer", 1, 128),
        "best_of": _Bound("integer", 0, 20),
        "logprobs": _Bound("integer", 0, 5),
        "echo": _BOOLEAN,
        "stream": _BOOLEAN,
    },
}

#: Fields the API cannot do without (besides the conversation, checked where it is read).
_REQUIRED = {"messages": ("model", "max_tokens")}


def accepted_fields(api: str, flavor: str) -> frozenset[str]:
    """The body fields `api` accepts on `flavor`'s route."""
    fields = FIELDS[api]
    if flavor == "demo" and api == "chat":
        fields = fields.union(*STAND_IN_EXTRAS.values())
    return fields


def check_body(api: str, flavor: str, data: Mapping[str, Any]) -> None:
    """Raise the provider's 400 for the first thing wrong with `data`'s fields: unknown fields, a
    missing model (or Messages' `max_tokens`), a value of the wrong type or out of range."""
    accepted = accepted_fields(api, flavor)
    unknown = [name for name in data if name not in accepted]
    if unknown:
        raise unrecognized(api, unknown, accepted)
    for name in _REQUIRED.get(api, ("model",)):
        value = data.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if api != "messages":
                raise Rejection(
                    400, "You must provide a model parameter.", param=name, code="missing_required_parameter"
                )
            raise Rejection(400, f"{name}: Field required", param=name, code="missing_required_parameter")
    if not isinstance(data["model"], str):
        raise _type_error(api, "model", "string", data["model"])
    for name, bound in _BOUNDS[api].items():
        value = data.get(name)
        if value is not None:
            _check_value(api, name, bound, value)
    if api == "responses" and data.get("include") is not None:
        _check_include(data["include"])


#: What a Responses `include` may list (its API reference).
INCLUDABLE = (
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
)


def _check_include(include: Any) -> None:
    """OpenAI's 400s for `include`: an array of the values it lists, each named when wrong."""
    if not isinstance(include, list):
        raise _type_error("responses", "include", "array", include)
    for index, value in enumerate(include):
        if not isinstance(value, str):
            raise _type_error("responses", f"include[{index}]", "string", value)
        if value not in INCLUDABLE:
            shown = value if len(value) <= 60 else value[:60] + "..."
            listed = ", ".join(f"'{v}'" for v in INCLUDABLE[:-1]) + f", and '{INCLUDABLE[-1]}'"
            raise Rejection(
                400,
                f"Invalid value: '{shown}'. Supported values are: {listed}.",
                param=f"include[{index}]",
                code="invalid_value",
            )


_API_NAMES = {
    "chat": "Chat Completions API (/v1/chat/completions)",
    "responses": "Responses API (/v1/responses)",
    "messages": "Messages API (/v1/messages)",
}
#: Unknown fields named in one message; a body with more gets "and N more".
_NAMED = 5


def unrecognized(api: str, names: Sequence[str], accepted: Iterable[str], prefix: str = "") -> Rejection:
    """The 400 for fields `api` does not know, each with the closest of `accepted` suggested."""
    choices = sorted(accepted)
    parts = []
    for name in names[:_NAMED]:
        close = difflib.get_close_matches(name, choices, n=1, cutoff=0.7)
        elsewhere = [other for other, label in _API_NAMES.items() if other != api and name in FIELDS[other]]
        if close:
            hint = f" (did you mean {prefix}{close[0]}?)"
        elif elsewhere and not prefix:
            hint = f" (a field of the {_API_NAMES[elsewhere[0]]}, not of this one)"
        else:
            hint = ""
        parts.append((f"{prefix}{name if len(name) <= 60 else name[:60] + '...'}", hint))
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    if api == "messages":
        message = "; ".join(f"{field}: Extra inputs are not permitted{hint}" for field, hint in parts) + more
    else:
        listed = ", ".join(field + hint for field, hint in parts) + more
        message = f"Unrecognized request argument{'s' if len(names) > 1 else ''} supplied: {listed}"
    return Rejection(400, message)


# ---------------------------------------------------------------------------- values


def _check_value(api: str, name: str, bound: _Bound, value: Any) -> None:
    if bound.kind == "boolean":
        if not isinstance(value, bool):
            raise _type_error(api, name, "boolean", value)
        return
    integral = isinstance(value, int) and not isinstance(value, bool)
    if not (integral or (bound.kind == "decimal" and isinstance(value, float))):
        raise _type_error(api, name, bound.kind, value)
    if bound.low is not None and value < bound.low:
        raise _range_error(api, name, bound, value, above=False)
    if bound.high is not None and value > bound.high:
        raise _range_error(api, name, bound, value, above=True)


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _type_error(api: str, name: str, kind: str, value: Any) -> Rejection:
    if api == "messages":
        anthropic = {"decimal": "number"}.get(kind, kind)
        return Rejection(400, f"{name}: Input should be a valid {anthropic}", param=name, code="invalid_type")
    message = f"Invalid type for '{name}': expected {_a(kind)}, but got {json_kind(value)} instead."
    return Rejection(400, message, param=name, code="invalid_type")


def _range_error(api: str, name: str, bound: _Bound, value: Any, *, above: bool) -> Rejection:
    limit = bound.high if above else bound.low
    if api == "messages":
        if bound.low is not None and bound.high is not None:
            message = f"{name}: range: {_number(bound.low)}..{_number(bound.high)}"
        else:
            relation = "less than" if above else "greater than"
            message = f"{name}: Input should be {relation} or equal to {_number(limit)}"
        return Rejection(400, message, param=name, code="invalid_value")
    side, relation, short = ("above maximum", "<=", "above_max") if above else ("below minimum", ">=", "below_min")
    message = (
        f"Invalid '{name}': {bound.kind} {side} value. Expected a value {relation} {_number(limit)}, "
        f"but got {_number(value)} instead."
    )
    return Rejection(400, message, param=name, code=f"{bound.kind}_{short}_value")


def _number(value: Any) -> str:
    """A number as a person writes it: 5, 2.5, -1 (never 5.0)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)
