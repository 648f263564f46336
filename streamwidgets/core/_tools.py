"""Tools the model may call: a Python function as a schema, its arguments checked, its result sent.

Pure: nothing here runs a tool (that is `net/_tool_runner.py`, which has the clock and the
threads). `Tool.from_function(fn)` reads the name, the docstring (its first paragraph is the
description, its `Args:` section each parameter's) and the signature; pydantic turns the type
hints into the JSON schema the model sees, and the same pydantic model checks the arguments the
model sends, so the schema and the check can never disagree. A wrong argument comes back as words
that name the field, which the loop sends to the model as an error result so that it can recover.

pydantic is imported on first use: most answers call no tool, and importing it costs more than
the rest of the package.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

__all__ = [
    "Tool",
    "ToolResult",
    "ToolInputError",
    "as_tools",
    "encode_result",
    "MAX_RESULT_CHARS",
    "DECLINED",
]

#: The most characters of one tool result sent to the model (and shown); the rest is cut, with a
#: note saying so. A search tool that returns a whole page must not fill the context window.
MAX_RESULT_CHARS = 16_000
#: The most characters of arguments a call may have to be run, and sent back in the next request
#: (each tool step sends the conversation again: a model's megabytes of arguments would be sent at
#: every step after). A call over it is an error result, its arguments sent back as `{}`.
MAX_ARGUMENT_CHARS = 65_536

#: What a call the person chose not to run (`confirm=True`, Skip) sends back as its result.
DECLINED = "The user declined to run this tool."

#: The names every API accepts for a function (OpenAI's rule, the strictest of the three).
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ARGS_HEADING = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")

ResultStatus = Literal["waiting", "running", "done", "error", "declined", "cancelled"]


class ToolInputError(ValueError):
    """The model's arguments for a call do not fit the tool: the message says which field, and why."""


@dataclass
class ToolResult:
    """What became of one call: while it waits for a click or runs, and then its result.

    `content` is what the model is sent; `error` the error in words (the model is sent it too, as
    an error result); `note` what changed on the way (cut to `MAX_RESULT_CHARS`, sent as `str()`);
    `seconds` how long the tool ran; `received` the arguments exactly as the function receives
    them, once they were checked against its signature (`"yes"` from the model may be `True`).
    """

    status: ResultStatus = "running"
    content: str = ""
    error: Optional[str] = None
    note: Optional[str] = None
    seconds: Optional[float] = None
    received: Optional[dict[str, Any]] = None

    @property
    def is_error(self) -> bool:
        return self.status in ("error", "cancelled")

    @property
    def done(self) -> bool:
        return self.status not in ("waiting", "running")


@dataclass(frozen=True)
class Tool:
    """A function the model may call: its name, description, JSON schema, and the function.

    Make one with `Tool.from_function(fn)`; `show(..., tools=[fn])` does so for you. `validate`
    checks the model's arguments (a JSON text) against the same model the schema came from.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: Callable[..., Any] = field(repr=False)
    #: The pydantic model of the parameters (None for a tool given as a schema).
    model: Any = field(default=None, repr=False, compare=False)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    @property
    def spec(self) -> dict[str, Any]:
        """The tool as the dialects take it: name, description, parameters."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_function(
        cls, function: Callable[..., Any], *, name: Optional[str] = None, description: Optional[str] = None
    ) -> Tool:
        """A tool from a function's name, docstring and type hints (str, int, float, bool,
        `Literal`, `Enum`, `list` / `dict`, `TypedDict`, pydantic models, `Optional`, defaults)."""
        from pydantic import Field, create_model

        if not callable(function):
            raise TypeError(f"a tool is a function, not {type(function).__name__}")
        tool_name: str = name or str(getattr(function, "__name__", ""))
        if not _NAME.match(tool_name):
            raise ValueError(
                f"tool name {tool_name!r} is not one the APIs accept: letters, digits, _ and -, at most 64; "
                "pass name= (or wrap the function in a def)"
            )
        summary, arg_docs = _read_docstring(inspect.getdoc(function) or "")
        try:
            hints = _type_hints(function)
        except Exception as exc:  # a hint that names something not importable
            raise TypeError(f"tool {tool_name!r}: its type hints cannot be read ({exc})") from None
        fields: dict[str, Any] = {}
        for param in inspect.signature(function).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue  # *args / **kwargs: nothing the model can be told to fill
            if param.kind is param.POSITIONAL_ONLY:
                raise TypeError(
                    f"tool {tool_name!r}: parameter {param.name!r} is positional-only; the model names them"
                )
            annotation = hints.get(param.name, Any)
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (annotation, Field(default, description=arg_docs.get(param.name)))
        try:
            model = create_model(f"{tool_name}_arguments", **fields)
            schema = model.model_json_schema()
        except Exception as exc:  # pydantic cannot describe a type (a bare class, a callable...)
            raise TypeError(f"tool {tool_name!r}: its parameters cannot be described as JSON ({exc})") from None
        return cls(tool_name, description or summary, _tidy(schema), function, model)

    def validate(self, arguments: str) -> dict[str, Any]:
        """The keyword arguments to call the function with, from the model's JSON text; a
        `ToolInputError` that names the field when they do not fit."""
        text = arguments.strip()
        try:
            value = json.loads(text) if text else {}
        except ValueError as exc:
            raise ToolInputError(f"the arguments are not valid JSON ({exc.args[0] if exc.args else exc})") from None
        if not isinstance(value, dict):
            raise ToolInputError(f"the arguments must be a JSON object, not {type(value).__name__}")
        if self.model is None:
            return value
        from pydantic import ValidationError

        try:
            checked = self.model.model_validate(value)
        except ValidationError as exc:
            raise ToolInputError(_validation_words(exc)) from None
        return {name: getattr(checked, name) for name in type(checked).model_fields}


def as_tools(tools: Iterable[Any]) -> tuple[Tool, ...]:
    """`tools=` as tools: each a function or a `Tool`; names must be unique."""
    if callable(tools) or isinstance(tools, (str, Tool)):
        raise TypeError("tools= is a list of functions: tools=[get_weather]")
    out = tuple(t if isinstance(t, Tool) else Tool.from_function(t) for t in tools)
    seen: set[str] = set()
    for tool in out:
        if tool.name in seen:
            raise ValueError(f"two tools are named {tool.name!r}: a model could not tell them apart")
        seen.add(tool.name)
    return out


def encode_result(value: Any, *, limit: int = MAX_RESULT_CHARS) -> tuple[str, Optional[str]]:
    """(what the model is sent, a note or None): a string as it is, anything else as JSON, and
    what JSON cannot hold as its `str()`; cut to `limit` characters, with a note saying so."""
    note = None
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(_plain(value), ensure_ascii=False)
        except (TypeError, ValueError):
            text = str(value)
            note = f"the result ({type(value).__name__}) is not JSON; it was sent as str()"
    if len(text) > limit:
        cut = f"the result had {len(text):,} characters; the first {limit:,} were sent"
        text = text[:limit] + f"\n[… cut: {cut}]"
        note = f"{note}; {cut}" if note else cut
    return text, note


def _plain(value: Any) -> Any:
    """A pydantic model or a dataclass as plain data, so that a tool may return one."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    import typing

    target = function if inspect.isfunction(function) or inspect.ismethod(function) else type(function).__call__
    return typing.get_type_hints(target, include_extras=True)


def _read_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(the first paragraph, {parameter: its description}) from a Google-style docstring."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _ARGS_HEADING.match(line):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    inside, current, indent = False, None, 0
    for line in lines:
        if _ARGS_HEADING.match(line):
            inside, current = True, None
            continue
        if not inside:
            continue
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(line.strip())
        if match and (current is None or depth <= indent):
            current, indent = match.group(1).lstrip("*"), depth
            args[current] = match.group(3).strip()
        elif current is not None and depth > indent:
            args[current] = f"{args[current]} {line.strip()}".strip()
        else:
            break  # the next section (Returns:, Raises:) ends the arguments
    return " ".join(summary), {k: v for k, v in args.items() if v}


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema without the titles it makes up from names (noise to a model)."""
    schema = dict(schema)
    schema.pop("title", None)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema["properties"] = {
            name: {k: v for k, v in prop.items() if k != "title"} if isinstance(prop, dict) else prop
            for name, prop in properties.items()
        }
    schema.setdefault("properties", {})
    return schema


def _validation_words(exc: Any) -> str:
    """pydantic's errors as one line a model (and a person) reads: each field and what is wrong."""
    said = []
    for error in exc.errors(include_url=False)[:5]:
        where = ".".join(str(part) for part in error.get("loc", ())) or "the arguments"
        said.append(f"{where}: {error.get('msg', 'invalid')}")
    more = exc.error_count() - len(said)
    return "invalid arguments — " + "; ".join(said) + (f" (and {more} more)" if more > 0 else "")


def tool_index(tools: Iterable[Tool]) -> Mapping[str, Tool]:
    return {tool.name: tool for tool in tools}
