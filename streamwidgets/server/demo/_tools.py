"""The tools of a request, whatever API spelled them: the tools declared, the tool choice, and
the calls and results of the conversation.

Each API spells function calling its own way, and its spec (`apis/`) reads its spelling into
these same facts (`ToolUse`), refusing with the provider's own 400 wording what the provider
refuses: a tool without a name, a schema that is not an object, a tool choice naming no declared
tool, a result answering no call, a call left without its result. `demo-tools` (`_calling`) then
reads only these facts. Pure data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["Tool", "ToolChoice", "PastCall", "ToolResult", "ToolUse", "Rounds", "NO_SCHEMA", "plain_text"]


@dataclass(frozen=True)
class Tool:
    """A function the client declared: its name, what it is for, and the JSON schema of its
    arguments (an empty object schema when none was given)."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ToolChoice:
    """How the request lets the model call: `auto`, `none`, `required` (Anthropic's `any`) or
    `named` (then `name`); `parallel` is False under `parallel_tool_calls: false` or Anthropic's
    `disable_parallel_tool_use`."""

    mode: str = "auto"
    name: Optional[str] = None
    parallel: bool = True


@dataclass(frozen=True)
class PastCall:
    """A call the assistant made earlier in the conversation, as the client sent it back."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolResult:
    """What the client's tool returned for `call`; `is_error` as Anthropic's flag says it."""

    call: PastCall
    content: str
    is_error: bool = False

    @property
    def failed(self) -> bool:
        """Whether the call failed: Anthropic's `is_error`, or a result that says it is an error
        (its text starts with "Error", or it is an `{"error": ...}` object)."""
        head = self.content.lstrip()[:16].lower()  # a result may be megabytes: read only its start
        return self.is_error or head.startswith("error") or re.match(r'\{\s*"error"', head) is not None


@dataclass(frozen=True)
class ToolUse:
    """The tool facts of one request: what may be called, how, and the results that end the
    conversation (the model is expected to use them now; empty when a person spoke last)."""

    tools: tuple[Tool, ...] = ()
    choice: ToolChoice = ToolChoice()
    results: tuple[ToolResult, ...] = ()
    #: The tools whose calls failed in an earlier round of tool calls since the last question
    #: (a model retries a failed call once, not forever).
    failed_before: frozenset[str] = frozenset()


class Rounds:
    """The rounds of tool results since the last question, as a conversation is walked."""

    def __init__(self) -> None:
        self.results: list[ToolResult] = []
        self.failed: set[str] = set()

    def add(self, result: ToolResult) -> None:
        self.results.append(result)

    def close(self, *, question: bool) -> None:
        """A turn that is not a tool result: the current round is over (and with a new
        question, everything before it)."""
        self.failed.update(r.call.name for r in self.results if r.failed)
        self.results = []
        if question:
            self.failed.clear()

    def done(self) -> tuple[tuple[ToolResult, ...], frozenset[str]]:
        return tuple(self.results), frozenset(self.failed)


#: The arguments schema of a tool declared without one.
NO_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


def plain_text(content: Any) -> str:
    """The text of a tool result: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or (isinstance(part, Mapping) and isinstance(part.get("text"), str))
        )
    return "" if content is None else json.dumps(content, ensure_ascii=False)
