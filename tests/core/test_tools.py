"""Tools from Python functions: the schema the model sees, the check of what it sends back, and
each dialect's tools field and result turns."""

from __future__ import annotations

import enum
from typing import Literal, Optional

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from streamwidgets.core._tools import MAX_RESULT_CHARS, Tool, ToolInputError, as_tools, encode_result
from streamwidgets.core.dialects import ChatDialect, MessagesDialect, ResponsesDialect
from streamwidgets.core.dialects._request import CallResult


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Place(TypedDict):
    city: str
    country: str


class Window(BaseModel):
    days: int
    hourly: bool = False


def forecast(
    place: Place,
    unit: Unit = Unit.CELSIUS,
    window: Optional[Window] = None,
    detail: Literal["short", "long"] = "short",
    tags: list[str] = [],  # noqa: B006 - a default the schema shows
    weights: Optional[dict[str, float]] = None,
    ratio: float = 0.5,
    loud: bool = False,
    count: int = 1,
    note: str = "",
) -> str:
    """Forecast the weather
    for one place.

    A second paragraph that is not the description.

    Args:
        place: Where, as a city and its country.
        unit (Unit): The temperature unit,
            celsius by default.
        window: How far ahead.

    Returns:
        The forecast.
    """
    return ""


def test_the_schema_comes_from_the_signature_and_docstring():
    tool = Tool.from_function(forecast)
    assert tool.name == "forecast"
    assert tool.description == "Forecast the weather for one place."
    params = tool.parameters
    assert params["type"] == "object" and params["required"] == ["place"]
    props = params["properties"]
    assert props["place"]["description"] == "Where, as a city and its country."
    assert props["unit"] == {
        "$ref": "#/$defs/Unit",
        "default": "celsius",
        "description": "The temperature unit, celsius by default.",
    }
    assert params["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]
    assert params["$defs"]["Place"]["required"] == ["city", "country"]
    assert params["$defs"]["Window"]["properties"]["days"]["type"] == "integer"
    assert props["detail"] == {"default": "short", "enum": ["short", "long"], "type": "string"}
    assert props["tags"] == {"default": [], "items": {"type": "string"}, "type": "array"}
    assert {"type": "null"} in props["weights"]["anyOf"]
    assert [props[n]["type"] for n in ("ratio", "loud", "count", "note")] == ["number", "boolean", "integer", "string"]
    assert "title" not in params and all("title" not in p for p in props.values())
    assert "Returns" not in str(params)


def test_arguments_are_checked_by_the_same_model():
    tool = Tool.from_function(forecast)
    kwargs = tool.validate('{"place": {"city": "Oslo", "country": "NO"}, "unit": "fahrenheit", "window": {"days": 2}}')
    assert kwargs["unit"] is Unit.FAHRENHEIT and kwargs["window"] == Window(days=2)
    assert kwargs["place"] == {"city": "Oslo", "country": "NO"} and kwargs["count"] == 1
    with pytest.raises(ToolInputError, match=r"place\.country: Field required"):
        tool.validate('{"place": {"city": "Oslo"}}')
    with pytest.raises(ToolInputError, match="detail: Input should be 'short' or 'long'"):
        tool.validate('{"place": {"city": "a", "country": "b"}, "detail": "medium"}')
    with pytest.raises(ToolInputError, match="not valid JSON"):
        tool.validate('{"place": ')
    with pytest.raises(ToolInputError, match="a JSON object, not str"):
        tool.validate('"Oslo"')
    with pytest.raises(ToolInputError, match="place: Field required"):
        tool.validate("")  # no arguments at all: the required one is missing


def test_a_tool_with_no_parameters_takes_empty_arguments():
    def now() -> str:
        """The time."""
        return "noon"

    tool = Tool.from_function(now)
    assert tool.parameters == {"properties": {}, "type": "object"}
    assert tool.validate("") == {} and tool.validate("{}") == {}


def test_tool_names_and_lists_are_checked():
    with pytest.raises(ValueError, match="not one the APIs accept"):
        Tool.from_function(lambda: None)
    with pytest.raises(TypeError, match="a list of functions"):
        as_tools(forecast)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="two tools are named 'forecast'"):
        as_tools([forecast, forecast])
    renamed = Tool.from_function(forecast, name="weather", description="Weather.")
    assert (renamed.name, renamed.description) == ("weather", "Weather.")
    assert as_tools([renamed, forecast])[0] is renamed


def test_results_are_json_or_str_and_cut_with_a_note():
    assert encode_result("plain") == ("plain", None)
    assert encode_result({"a": [1, "é"]}) == ('{"a": [1, "é"]}', None)
    assert encode_result(Window(days=3)) == ('{"days": 3, "hourly": false}', None)
    text, note = encode_result({1, 2})
    assert text == "{1, 2}" and note is not None and "sent as str()" in note
    text, note = encode_result("y" * (MAX_RESULT_CHARS + 5))
    assert text.startswith("y" * MAX_RESULT_CHARS) and "cut" in text and note is not None
    assert f"{MAX_RESULT_CHARS + 5:,} characters" in note


SPEC = {"name": "add", "description": "Add.", "parameters": {"type": "object", "properties": {}}}
CALLS = [CallResult("c1", "add", '{"a": 1}', "2"), CallResult("c2", "add", "{bad", "Error: not JSON", True)]


def test_each_dialect_writes_its_tools_field():
    assert ChatDialect.tools_field([SPEC]) == [{"type": "function", "function": SPEC}]
    assert ResponsesDialect.tools_field([SPEC]) == [{"type": "function", **SPEC}]
    assert MessagesDialect.tools_field([SPEC]) == [
        {"name": "add", "description": "Add.", "input_schema": SPEC["parameters"]}
    ]


def test_each_dialect_writes_its_result_turns():
    assert ChatDialect.tool_turns("Let me add.", CALLS) == [
        {
            "role": "assistant",
            "content": "Let me add.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}},
                {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{bad"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: not JSON"},
    ]
    assert ResponsesDialect.tool_turns("", CALLS) == [
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "add", "arguments": "{bad"},
        {"type": "function_call_output", "call_id": "c1", "output": "2"},
        {"type": "function_call_output", "call_id": "c2", "output": "Error: not JSON"},
    ]
    assert ResponsesDialect.tool_turns("Hm.", CALLS)[0] == {"type": "message", "role": "assistant", "content": "Hm."}
    assert MessagesDialect.tool_turns("Let me add. ", CALLS) == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}},
                {"type": "tool_use", "id": "c2", "name": "add", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "2"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "Error: not JSON", "is_error": True},
            ],
        },
    ]
