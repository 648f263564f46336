"""`ApiSpec`: everything the demo server knows about one wire API, in one class.

An API owns both directions, the way a dialect of the client does: where it lives (its path
under a flavor's `/v1/`), how a body is read (its fields and their bounds, the conversation,
the tools, the token limit, the log-probabilities asked for), how it words a 400 and a 404, its
error envelope and request-id header, and how a script is written as its stream (with its
heartbeat) or as one whole answer. The router reads all of it from the spec it looked up in the
table (`apis.APIS`), never from a branch on the API's name. The defaults here are what most of
the APIs share; each spec overrides what is its own.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from ..._edge import Rejection, Steps
from .._fields import Bound, Unknown, check_values
from .._flavors import Flavor
from .._frames import comment
from .._script import Script
from .._tokens import count_tokens
from .._tools import ToolUse

__all__ = ["ApiSpec", "Endpoint", "Turn", "SSE", "text_of"]

#: The content type of an event stream.
SSE = "text/event-stream; charset=utf-8"
#: A turn of the conversation: (role, the text the demo model reads, the tokens it bills).
Turn = tuple[str, str, int]
_IMAGE_TOKENS = 85


@dataclass(frozen=True)
class Endpoint:
    """What a request's path says besides its API: the model and whether to stream (None:
    the body says, as it does for every API but Gemini, which names both in its path), and
    the content type of the stream."""

    model: Optional[str] = None
    stream: Optional[bool] = None
    content_type: str = SSE


class ApiSpec(ABC):
    """One wire API of the demo server; one instance per API, listed in `apis.APIS`."""

    #: The API's name (`chat`, `messages`...), as requests, records and `script_for_request` spell it.
    name: ClassVar[str]
    #: Its path after a flavor's version segment, a regular expression matched whole.
    path: ClassVar[str]
    #: The version segments it is served under (`/v1/...`, and Gemini's `/v1beta/...`).
    versions: ClassVar[tuple[str, ...]] = ("v1",)
    #: How another API's 400 names it when a body holds one of its fields (None: it is not named).
    title: ClassVar[Optional[str]] = None
    #: The header that carries the request id on its answers.
    request_id_header: ClassVar[str] = "x-request-id"
    #: The values it checks (the others are read as they come, or not at all).
    bounds: ClassVar[Mapping[str, Bound]] = {}
    #: The fields it cannot do without (besides the conversation, checked where it is read).
    required: ClassVar[tuple[str, ...]] = ("model",)

    # ------------------------------------------------------------------ routing

    def served_on(self, flavor: Flavor) -> bool:
        """Whether `flavor`'s route has this API."""
        return True

    def endpoint(self, match: re.Match[str], query: Mapping[str, list[str]]) -> Endpoint:
        """What the path (`match`, of `path`) and the query say about the request."""
        return Endpoint()

    # ------------------------------------------------------------------ reading

    @abstractmethod
    def documented(self) -> frozenset[str]:
        """The body fields of its reference."""

    def fields(self, flavor: str) -> frozenset[str]:
        """The body fields it accepts on `flavor`'s route."""
        return self.documented()

    def check(self, data: Mapping[str, Any], endpoint: Endpoint) -> None:
        """Raise the provider's 400 for the first thing wrong with `data`'s known fields: a
        missing model (or other required field), a value of the wrong type or out of range."""
        for name in self.required:
            value = data.get(name)
            if value is None or (isinstance(value, str) and not value.strip()):
                raise self.missing(name)
        if not isinstance(data["model"], str):
            raise self.wrong_type("model", "string", data["model"])
        check_values(self, data, self.bounds)

    def model(self, data: Mapping[str, Any], endpoint: Endpoint) -> str:
        return str(data["model"])

    def streaming(self, data: Mapping[str, Any], endpoint: Endpoint) -> bool:
        return data.get("stream") is True

    @abstractmethod
    def turns(self, data: Mapping[str, Any]) -> list[Turn]:
        """The conversation, oldest first (the system prompt a turn of its own), refusing a
        missing or malformed one."""

    def tool_use(self, data: Mapping[str, Any]) -> ToolUse:
        """The tools declared, the tool choice, and the tool results that end the conversation."""
        return ToolUse()

    def tool_tokens(self, data: Mapping[str, Any]) -> int:
        """What the declared tools cost in prompt tokens."""
        tools = data.get("tools")
        return count_tokens(json.dumps(tools)) if isinstance(tools, list) and tools else 0

    def max_tokens(self, data: Mapping[str, Any]) -> Optional[int]:
        """The answer's token limit, in whichever spelling the API has (its value was checked)."""
        for key in ("max_completion_tokens", "max_tokens", "max_output_tokens"):
            value = data.get(key)
            if isinstance(value, int):
                return value
        return None

    def include_usage(self, data: Mapping[str, Any]) -> bool:
        stream_options = data.get("stream_options")
        return isinstance(stream_options, Mapping) and stream_options.get("include_usage") is True

    def thinking_disabled(self, data: Mapping[str, Any]) -> bool:
        """Anthropic's (and DeepSeek's) `thinking: {"type": "disabled"}`."""
        thinking = data.get("thinking")
        return isinstance(thinking, Mapping) and thinking.get("type") == "disabled"

    def reasoning_hidden(self, data: Mapping[str, Any]) -> bool:
        """Whether the request asks not to be sent the reasoning (it is still spent and counted)."""
        return False

    def logprobs(self, data: Mapping[str, Any]) -> Optional[int]:
        """Alternatives per token when the request asks for log-probabilities, else None."""
        return None

    def temperature(self, data: Mapping[str, Any]) -> Optional[float]:
        value = data.get("temperature")
        return float(value) if isinstance(value, (int, float)) else None

    def check_stream(self, stream: bool) -> None:
        """Refuse a stream where the API has none (checked once the model is known)."""
        return None

    # ------------------------------------------------------------------ its words

    @abstractmethod
    def unrecognized(self, unknown: Unknown) -> Rejection:
        """The 400 for fields the API does not have."""

    @abstractmethod
    def missing(self, name: str) -> Rejection:
        """The 400 for a required field that is missing."""

    @abstractmethod
    def wrong_type(self, name: str, kind: str, value: Any) -> Rejection:
        """The 400 for a value of the wrong JSON type (`kind`: decimal, integer, boolean, string...)."""

    @abstractmethod
    def out_of_range(self, name: str, bound: Bound, value: Any, *, above: bool) -> Rejection:
        """The 400 for a number past its bound."""

    @abstractmethod
    def model_not_found(self, model: str, hint: str) -> str:
        """The message of the 404 for a model name it does not serve (`model` quoted briefly)."""

    # ------------------------------------------------------------------ writing

    @abstractmethod
    def stream(self, script: Script, flavor: Flavor, endpoint: Endpoint) -> Steps:
        """The steps of `script` as this API streams it in `flavor`'s spelling."""

    @abstractmethod
    def whole(self, script: Script, flavor: Flavor) -> dict[str, Any]:
        """`script` as one whole JSON answer (a request that does not stream)."""

    def heartbeat(self, flavor: Flavor) -> bytes:
        """What is sent while nothing else is: the flavor's SSE comment."""
        return comment(flavor.heartbeat)

    @abstractmethod
    def error_body(self, rejection: Rejection, request_id: str) -> bytes:
        """The JSON body of a rejection in this API's error envelope."""


def text_of(content: Any) -> tuple[str, int]:
    """The readable text of a content value (a string or a list of parts) and its token count."""
    if isinstance(content, str):
        return content, count_tokens(content)
    texts: list[str] = []
    tokens = 0
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                kind = part.get("type")
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif kind == "tool_result":
                    inner, inner_tokens = text_of(part.get("content", ""))
                    texts.append(inner)
                    tokens += inner_tokens - count_tokens(inner)
                elif kind in ("image", "image_url", "input_image", "document", "input_file"):
                    tokens += _IMAGE_TOKENS
    text = "\n".join(texts)
    return text, tokens + count_tokens(text)
