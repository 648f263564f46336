"""What the `demo-tools` model does with the tools it is sent: pick the ones that fit the
question, call them with arguments that fit their schemas, and answer from their results.

It behaves like a real function-calling model, only predictably. On a user turn it scores each
declared tool against the question's words (its name, description and parameter names, a few
synonyms, numbers for numeric parameters, a known city for a `city`), calls the best one, or
the two best when two fit (a parallel call), or one tool twice when the question names two
cities for it. Arguments are made from the schema: required properties always, optional ones
when the question holds a value for them, enums respected, numbers clamped to their bounds,
values taken from the question's words where it can (the numbers for a calculator's `a` and
`b`, a city for `city`, the question itself for a `query`), else a plausible default. On a turn
that ends with tool results it quotes them ("The sum is 42.", "In Paris it is 18 °C and
sunny."), and says so when one failed; a failed call is tried once more when the error message
leads to other arguments ("unknown city 'Pariss'; did you mean Paris?"). Pure and deterministic: the same request, the same
calls and text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from ._answers import CITIES
from ._tools import Tool, ToolChoice, ToolResult, ToolUse

__all__ = [
    "PlannedCall",
    "plan_calls",
    "plan_retry",
    "arguments_for",
    "answer_results",
    "failure_sentence",
    "calling_words",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that say nothing about which tool a question wants.
_STOP = _words(
    "a an and are as at be by can do does for from get give how i in is it me my of on or please set "
    "show tell the this to what whats when where which who will with you your current now today"
)
#: Words that mean the same thing to a question and a tool description.
_SYNONYMS = (
    _words("weather temperature forecast rain sunny warm cold hot degrees climate"),
    _words("calculate calculator compute add sum plus total math arithmetic multiply times product")
    | _words("subtract minus difference divide divided quotient"),
    _words("search find look lookup query web google news"),
    _words("time clock hour timezone"),
    _words("stock price quote share ticker"),
    _words("email mail send message"),
    _words("translate translation language"),
)
_PLACE_NAMES = ("city", "location", "place", "town", "destination", "origin", "where", "address", "region")
_QUERY_NAMES = ("query", "search", "question", "prompt", "text", "topic", "keyword", "term", "input", "message", "q")
_EXPRESSION_NAMES = ("expression", "expr", "formula", "equation", "math")
_COUNT_NAMES = ("days", "count", "limit", "n", "num_results", "max_results", "top_k", "results", "hours")
_OPERATIONS = {
    "add": ("+", "plus", "sum", "add", "total", "added"),
    "sub": ("-", "minus", "subtract", "difference", "less"),
    "mul": ("*", "×", "x", "times", "multiply", "multiplied", "product"),
    "div": ("/", "÷", "divide", "divided", "quotient", "over"),
}
#: Bounds on what a schema can ask for (`minItems: 1e60` is valid JSON Schema, and hostile).
_MOST_ITEMS = 100
#: Characters of an error message the model reads again when it retries a call.
_HINT_CHARS = 500
_LONGEST_STRING = 1000
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*[a-zA-Z])")
_WORD = re.compile(r"[^\W_]+|[+*/×÷-]")


@dataclass(frozen=True)
class PlannedCall:
    """A call the model makes in this answer: the tool and the JSON text of its arguments."""

    tool: Tool
    arguments: str

    @property
    def parsed(self) -> dict[str, Any]:
        value = json.loads(self.arguments)
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class _Question:
    """What the question offers to fill arguments with."""

    text: str
    words: frozenset[str]
    cities: tuple[str, ...]
    numbers: tuple[float, ...]

    @classmethod
    def of(cls, prompt: str) -> _Question:
        lowered = prompt.lower()
        words = frozenset(_stem(w) for w in _WORD.findall(lowered))
        found = sorted(
            (match.start(), city)
            for city in CITIES
            if (match := re.search(rf"(?<!\w){re.escape(city.lower())}(?!\w)", lowered)) is not None
        )
        numbers = tuple(n for m in _NUMBER.finditer(prompt) if math.isfinite(n := float(m.group())))
        return cls(prompt.strip(), words, tuple(city for _, city in found), numbers)

    def city(self, slot: int) -> tuple[str, bool]:
        if self.cities:
            return self.cities[min(slot, len(self.cities) - 1)], True
        match = re.search(r"\b(?:in|for|at|of)\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)?)", self.text)
        if match:
            return match.group(1), True
        return ("Paris", "Tokyo")[slot % 2], False

    @property
    def query(self) -> str:
        text = re.sub(r"\s+", " ", self.text).strip(" ?!.")
        return text[:200] or "example"

    def operation(self) -> Optional[str]:
        for key, spellings in _OPERATIONS.items():
            if any(_stem(s) in self.words for s in spellings):
                return key
        return None

    def expression(self) -> tuple[str, bool]:
        match = re.search(r"-?\d+(?:\.\d+)?(?:\s*[-+*/×÷^]\s*\(?-?\d+(?:\.\d+)?\)?)+", self.text)
        if match:
            return match.group().replace("×", "*").replace("÷", "/"), True
        if len(self.numbers) >= 2:
            symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/"}.get(self.operation() or "add", "+")
            return f"{_number_text(self.numbers[0])} {symbol} {_number_text(self.numbers[1])}", True
        return "2 + 2", False


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def calling_words(tool: Tool) -> frozenset[str]:
    """The words a tool answers to: its name split at `_`/`-`/case, its description and
    parameter names, and the synonyms of each."""
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", tool.name).replace("_", " ").replace("-", " ")
    properties = tool.parameters.get("properties")
    names = " ".join(str(key) for key in properties) if isinstance(properties, Mapping) else ""
    words = {_stem(w) for w in _WORD.findall(f"{name} {tool.description} {names}".lower()) if len(w) > 1}
    words -= _STOP
    for group in _SYNONYMS:
        if words & group:
            words |= group
    return frozenset(words)


def _fit(tool: Tool, question: _Question) -> int:
    """How well `tool` fits the question: shared words, and a value the question holds for
    one of its parameters (a known city, two numbers)."""
    points = len(calling_words(tool) & question.words)
    properties = _properties(tool.parameters)
    if question.cities and any(_is_named(key, _PLACE_NAMES) for key in properties):
        points += 2
    numeric = [key for key, spec in properties.items() if _type_of(spec) in ("number", "integer")]
    if len(question.numbers) >= 2 and (len(numeric) >= 2 or any(_is_named(k, _EXPRESSION_NAMES) for k in properties)):
        points += 2
    return points


def plan_calls(prompt: str, tools: Sequence[Tool], choice: ToolChoice) -> tuple[PlannedCall, ...]:
    """The calls the model makes for `prompt`: none under `tool_choice: none`, the named tool
    when one is named, else the tools that fit best (at least the first tool, at most two
    calls, one when parallel calls are off)."""
    if not tools or choice.mode == "none":
        return ()
    question = _Question.of(prompt)
    if choice.mode == "named":
        chosen = [tool for tool in tools if tool.name == choice.name][:1]
    else:
        points = [_fit(tool, question) for tool in tools]
        ranked = sorted((i for i, p in enumerate(points) if p > 0), key=lambda i: (-points[i], i))[:2]
        chosen = [tools[i] for i in sorted(ranked)] or [tools[0]]
    if (
        len(chosen) == 1
        and len(question.cities) >= 2
        and any(_is_named(key, _PLACE_NAMES) for key in _properties(chosen[0].parameters))
    ):
        chosen = [chosen[0], chosen[0]]  # the same lookup for two places, at the same time
    calls = tuple(
        PlannedCall(tool, json.dumps(arguments_for(tool.parameters, question, slot), ensure_ascii=False))
        for slot, tool in enumerate(chosen)
    )
    return calls if choice.parallel else calls[:1]


# ---------------------------------------------------------------------------- arguments


def arguments_for(schema: Mapping[str, Any], question: _Question | str, slot: int = 0) -> dict[str, Any]:
    """Arguments for a tool whose parameters are `schema`, from the question's words where it
    can; `slot` is which call of a parallel pair this is (the first city or the second)."""
    asked = question if isinstance(question, _Question) else _Question.of(question)
    value, _ = _object(schema, asked, slot)
    return value


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def _is_named(name: str, names: Sequence[str]) -> bool:
    lowered = name.lower()
    parts = set(re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", name.strip()))
    return lowered in names or any(part.lower() in names for part in parts if len(part) > 1)


def _type_of(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return "string"
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _object(schema: Mapping[str, Any], question: _Question, slot: int) -> tuple[dict[str, Any], bool]:
    properties = _properties(schema)
    required = (
        [str(n) for n in schema.get("required", ()) if isinstance(n, str)]
        if isinstance(schema.get("required"), list)
        else []
    )
    result: dict[str, Any] = {}
    numbers = iter(question.numbers)
    told = False
    for name, spec in properties.items():
        value, from_question = _value(str(name), spec, question, slot, numbers)
        if name in required or from_question:
            result[str(name)] = value
            told = told or from_question
    for name in required:
        if name not in result:
            result[name] = _value(name, {}, question, slot, numbers)[0]
    return result, told


def _value(name: str, schema: Any, question: _Question, slot: int, numbers: Any) -> tuple[Any, bool]:
    """A value for the property `name` of `schema`, and whether the question gave it."""
    if not isinstance(schema, Mapping):
        schema = {}
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            usable = [o for o in options if isinstance(o, Mapping) and _type_of(o) != "null"]
            if usable:
                return _value(
                    name, {**usable[0], **{k: v for k, v in schema.items() if k != key}}, question, slot, numbers
                )
    if "const" in schema:
        return schema["const"], False
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return _enum(name, enum, question)
    kind = _type_of(schema)
    if kind == "object":
        return _object(schema, question, slot)
    if kind == "array":
        return _array(name, schema, question, slot, numbers)
    if kind == "null":
        return None, False
    if kind == "boolean":
        default = schema.get("default")
        return (default if isinstance(default, bool) else False), False
    if kind in ("number", "integer"):
        return _numeric(name, schema, kind, numbers)
    return _string(name, schema, question, slot)


def _enum(name: str, enum: list[Any], question: _Question) -> tuple[Any, bool]:
    for option in enum:
        if isinstance(option, str) and _stem(option.lower()) in question.words:
            return option, True
    operation = question.operation()
    if operation is not None:
        for option in enum:
            if isinstance(option, str) and option.lower()[:3] == operation:
                return option, True
    return enum[0], _is_named(name, ("unit", "units"))  # a unit is worth saying even by default


def _array(name: str, schema: Mapping[str, Any], question: _Question, slot: int, numbers: Any) -> tuple[Any, bool]:
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
    assert isinstance(items, Mapping)
    least: int = schema["minItems"] if isinstance(schema.get("minItems"), int) else 0
    most: Optional[int] = schema["maxItems"] if isinstance(schema.get("maxItems"), int) else None
    if _type_of(items) == "string" and _is_named(name, (*_PLACE_NAMES, "cities", "locations", "places")):
        values: list[Any] = list(question.cities) or [question.city(slot)[0]]
        told = bool(question.cities)
    elif _type_of(items) in ("number", "integer") and question.numbers:
        values = [_numeric(name, items, _type_of(items), iter([n]))[0] for n in question.numbers]
        told = True
    else:
        value, told = _value(name.rstrip("s"), items, question, slot, numbers)
        values = [value]
    while len(values) < min(least, _MOST_ITEMS):
        values.append(values[-1])
    return (values if most is None else values[:most]), told


def _numeric(name: str, schema: Mapping[str, Any], kind: str, numbers: Any) -> tuple[Any, bool]:
    taken = next(numbers, None)
    told = taken is not None
    if taken is None:
        default = _finite(schema.get("default"))
        if default is not None:
            taken = default
        elif _is_named(name, _COUNT_NAMES):
            taken = 3.0
        else:
            taken = 1.0
    low, high = _finite(schema.get("minimum")), _finite(schema.get("maximum"))
    above, below = _finite(schema.get("exclusiveMinimum")), _finite(schema.get("exclusiveMaximum"))
    if above is not None:
        low = above + (1 if kind == "integer" else 0.001)
    if below is not None:
        high = below - (1 if kind == "integer" else 0.001)
    if low is not None and taken < low:
        taken = low
    if high is not None and taken > high:
        taken = high
    if kind == "integer":
        whole = round(taken)
        if low is not None and whole < low:
            whole = math.ceil(low)
        if high is not None and whole > high:
            whole = math.floor(high)
        return whole, told
    return (int(taken) if taken.is_integer() else taken), told


def _finite(value: Any) -> Optional[float]:
    """A schema's bound as a float, or None when there is none (or it is `1e400`: infinite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _string(name: str, schema: Mapping[str, Any], question: _Question, slot: int) -> tuple[Any, bool]:
    form = schema.get("format")
    if _is_named(name, _PLACE_NAMES):
        value, told = question.city(slot)
    elif _is_named(name, _EXPRESSION_NAMES):
        value, told = question.expression()
    elif _is_named(name, ("unit", "units")):
        value, told = ("fahrenheit", True) if "fahrenheit" in question.words else ("celsius", False)
    elif form == "date" or _is_named(name, ("date", "day")):
        value, told = "2025-06-01", False
    elif form == "date-time":
        value, told = "2025-06-01T12:00:00Z", False
    elif form == "email" or _is_named(name, ("email",)):
        value, told = "ada@example.com", False
    elif form in ("uri", "url") or _is_named(name, ("url", "link", "uri")):
        value, told = "https://example.com/", False
    elif _is_named(name, ("language", "lang", "locale")):
        value, told = "en", False
    elif _is_named(name, ("currency",)):
        value, told = "EUR", False
    elif _is_named(name, ("timezone", "tz")):
        value, told = "Europe/Paris", False
    elif _is_named(name, _QUERY_NAMES):
        value, told = question.query, True
    else:
        value, told = question.query, False
    longest = schema.get("maxLength")
    if isinstance(longest, int) and longest >= 0:
        value = value[:longest]
    shortest = schema.get("minLength")
    if isinstance(shortest, int) and len(value) < shortest:
        value = value.ljust(min(shortest, _LONGEST_STRING), ".")
    return value, told


def plan_retry(use: ToolUse) -> Optional[tuple[PlannedCall, ToolResult]]:
    """A second try of a failed call, its arguments corrected by what the error message says
    ("unknown city 'Pariss'; did you mean Paris?"), and the result it retries. None when no call
    failed, its tool failed in an earlier round already (a model retries once), the tool is no
    longer offered, calls are forbidden, or the message suggests nothing new."""
    if use.choice.mode == "none":
        return None
    for result in use.results:
        tool = next((t for t in use.tools if t.name == result.call.name), None)
        if not result.failed or tool is None or tool.name in use.failed_before:
            continue
        # Responses input has no turns: there a retry and the failure it retries come together.
        if sum(1 for r in use.results if r.failed and r.call.name == tool.name) > 1:
            continue
        try:
            before = json.loads(result.call.arguments or "{}")
        except json.JSONDecodeError:
            continue
        if not isinstance(before, dict):
            continue
        fixed = {**before, **_corrections(tool.parameters, _Question.of(result.content[:_HINT_CHARS]))}
        if fixed != before:
            return PlannedCall(tool, json.dumps(fixed, ensure_ascii=False)), result
    return None


def _corrections(schema: Mapping[str, Any], hint: _Question) -> dict[str, Any]:
    """The top-level arguments an error message suggests: an enum value it names, the last city
    it names (the suggestion comes last: "no Pariss; did you mean Paris?"), the last number it
    gives for a parameter it names ("days must be at most 7")."""
    fixes: dict[str, Any] = {}
    for name, spec in _properties(schema).items():
        enum = spec.get("enum") if isinstance(spec, Mapping) else None
        kind = _type_of(spec)
        if isinstance(enum, list) and enum:
            hit = next((o for o in enum if isinstance(o, str) and _stem(o.lower()) in hint.words), None)
            if hit is not None:
                fixes[str(name)] = hit
        elif kind == "string" and _is_named(str(name), _PLACE_NAMES) and hint.cities:
            fixes[str(name)] = max(hint.cities, key=lambda city: hint.text.lower().rfind(city.lower()))
        elif kind in ("number", "integer") and _stem(str(name).lower()) in hint.words and hint.numbers:
            fixes[str(name)] = _numeric(str(name), spec, kind, iter(hint.numbers[-1:]))[0]
    return fixes


# ---------------------------------------------------------------------------- answering


def answer_results(results: Sequence[ToolResult]) -> str:
    """The answer written from the tool results that end the conversation: each result quoted
    in a sentence, each failure said plainly."""
    sentences = [failure_sentence(r) if r.failed else _sentence(r) for r in results]
    failed = sum(1 for r in results if r.failed)
    if failed == len(results):
        closing = "\n\nI cannot answer that part without the tool; try again, or check its arguments."
    elif failed:
        closing = "\n\nI answered with the results that did come back."
    else:
        closing = ""
    if len(sentences) == 1:
        return sentences[0] + closing + "\n"
    return "Here is what the tools returned:\n\n" + "\n".join(f"- {s}" for s in sentences) + closing + "\n"


def _clip(text: str, size: int = 300) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= size else text[: size - 1] + "…"


def failure_sentence(result: ToolResult) -> str:
    """ "The call to `get_weather` failed: unknown city." (the message without its "Error:")."""
    name = result.call.name or "the tool"
    message = re.sub(r"^\s*error\s*[:\-]?\s*", "", _clip(result.content, 200), flags=re.IGNORECASE)
    message = message.rstrip(" .") or "it returned an error"
    return f"The call to `{name}` failed: {message}{'' if message[-1] in '?!' else '.'}"


def _call_arguments(result: ToolResult) -> Mapping[str, Any]:
    try:
        value = json.loads(result.call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _sentence(result: ToolResult) -> str:
    arguments = _call_arguments(result)
    name = result.call.name or "the tool"
    try:
        value: Any = json.loads(result.content)
    except json.JSONDecodeError:
        value = result.content.strip()
    if isinstance(value, str):
        number = re.fullmatch(r"-?\d+(?:\.\d+)?", value)
        if number is None:
            place = next((str(v) for k, v in arguments.items() if _is_named(k, _PLACE_NAMES)), "")
            where = f" for {place}" if place and place.lower() not in value.lower() else ""
            return f"`{name}`{where} says: {_clip(value) or '(nothing)'}"
        value = float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"The {_result_word(result, arguments)} is {_number_text(float(value))}."
    if isinstance(value, Mapping):
        weather = _weather(value, arguments)
        if weather:
            return weather
        for key in ("result", "value", "answer", "sum", "total"):
            if isinstance(value.get(key), (int, float)) and not isinstance(value.get(key), bool):
                return f"The {_result_word(result, arguments)} is {_number_text(float(value[key]))}."
        shown = ", ".join(f"{k}: {_scalar(v)}" for k, v in list(value.items())[:6])
        return f"`{name}` returned {shown or 'an empty object'}."
    if isinstance(value, list):
        shown = "; ".join(_scalar(v) for v in value[:3])
        more = f" (and {len(value) - 3} more)" if len(value) > 3 else ""
        return f"`{name}` returned {len(value)} item{'s' if len(value) != 1 else ''}: {shown}{more}."
    return f"`{name}` returned {json.dumps(value)}."


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _clip(value, 80)
    return _clip(json.dumps(value, ensure_ascii=False), 80)


def _result_word(result: ToolResult, arguments: Mapping[str, Any]) -> str:
    words = set(_WORD.findall(f"{result.call.name} {' '.join(str(v) for v in arguments.values())}".lower()))
    words |= set(result.call.name.lower().replace("-", "_").split("_"))
    for word, spellings in (
        ("sum", _OPERATIONS["add"]),
        ("difference", _OPERATIONS["sub"]),
        ("product", _OPERATIONS["mul"]),
        ("quotient", _OPERATIONS["div"]),
    ):
        if words & set(spellings) - {"x", "over", "less"}:
            return word
    return "result"


def _weather(value: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    key = next((k for k in value if str(k).lower() in ("temperature", "temp", "temp_c", "temp_f", "degrees")), None)
    if key is None or isinstance(value[key], bool) or not isinstance(value[key], (int, float, str)):
        return ""
    place = next(
        (str(v) for k, v in (*value.items(), *arguments.items()) if _is_named(str(k), _PLACE_NAMES) and v), "there"
    )
    unit = str(value.get("unit", arguments.get("unit", "celsius"))).lower()
    symbol = "°F" if unit.startswith("f") or str(key).endswith("_f") else "°C"
    reading = value[key] if isinstance(value[key], str) else _number_text(float(value[key]))
    condition = next(
        (str(value[k]) for k in ("condition", "conditions", "description", "summary", "weather", "sky") if k in value),
        "",
    )
    where = "there" if place == "there" else f"in {place}"
    sentence = f"{where[0].upper()}{where[1:]} it is {reading} {symbol}"
    return f"{sentence} and {condition.lower()}." if condition else f"{sentence}."
