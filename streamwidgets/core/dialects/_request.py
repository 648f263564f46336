"""The request side shared by the dialects: the pieces of a body that only differ by name.

Each dialect declares its own path, auth style, token-limit name and body shape next to its
reader (`ChatDialect.build_body`, ...); these helpers keep the three writers small.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "fields",
    "Messages",
    "TOKEN_LIMIT_NAMES",
    "rename_token_limit",
    "split_system",
    "ask_to_continue",
    "assistant_turn",
    "CallResult",
    "ToolSpecs",
    "arguments_object",
]

Messages = Sequence[Mapping[str, Any]]


def fields(text: str) -> frozenset[str]:
    """A list of body fields, written as words."""
    return frozenset(text.split())


#: The tools a request offers, as `Tool.spec` gives them: name, description, parameters (a JSON schema).
ToolSpecs = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class CallResult:
    """One tool call the model made and what running it gave, as every dialect's result turns
    need it: the call as the model sent it, and the text (or error) sent back."""

    id: str
    name: str
    arguments: str
    content: str
    is_error: bool = False


def arguments_object(arguments: str) -> dict[str, Any]:
    """The call's arguments as an object, for an API that sends them as one (Messages' `input`):
    arguments that were not a JSON object are sent as an empty one (the error result says why)."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


#: What users call the answer's token limit; each dialect sends it under its own name.
TOKEN_LIMIT_NAMES = ("max_tokens", "max_completion_tokens", "max_output_tokens")

#: The user turn that asks a chat or responses model to carry on from a partial answer.
ASK_TO_CONTINUE = "Continue exactly where you stopped, without repeating anything."


def ask_to_continue(
    partial: str, prefill: bool, turn: Callable[[str], dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """The continuation of Chat, Responses and Gemini: (the text the next part starts from, the
    turns that ask for the rest), `turn(text)` being the dialect's assistant turn.

    Where the server continues a final assistant turn (`prefill`: llama.cpp's server, the
    embedded demo), the partial answer is that turn, trimmed of trailing white space as a
    Messages prefill is (the model puts it back: sent, it came back doubled). Elsewhere the model
    answers a final assistant turn anew, so a short user instruction asks it to carry on (its
    next part is a new text: `StreamState.next_part(joins=True)`)."""
    if prefill:
        partial = partial.rstrip()
        return partial, [turn(partial)]
    return partial, [turn(partial), {"role": "user", "content": ASK_TO_CONTINUE}]


def assistant_turn(text: str) -> dict[str, Any]:
    """An assistant turn of text, as Chat Completions (and Messages) spell it."""
    return {"role": "assistant", "content": text}


def rename_token_limit(params: Mapping[str, Any], name: str, *, keep: Sequence[str] = ()) -> dict[str, Any]:
    """`params` with any token-limit spelling sent as `name` (spellings in `keep` pass as they are)."""
    out = dict(params)
    for alias in TOKEN_LIMIT_NAMES:
        if alias != name and alias not in keep and alias in out:
            value = out.pop(alias)
            out.setdefault(name, value)
    return out


def split_system(messages: Messages) -> tuple[list[dict[str, Any]], str]:
    """(the conversation without system turns, the system turns joined) — for Messages' `system`."""
    system = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    return rest, "\n\n".join(system)
