"""OpenAI's legacy completions (`/completions`), on the flavors that have it (Engy): a `prompt`,
answered whole as a `text_completion`; a stream is refused with a 400, as Engy refuses it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..._edge import Rejection, Steps
from .._fields import BOOLEAN, Bound
from .._flavors import Flavor
from .._frames import ident
from .._script import Script
from .._tokens import count_tokens
from ._openai import PENALTIES, SAMPLING, OpenAIApi
from ._spec import Endpoint, Turn
from .chat import FINISH_REASONS, chat_stream, chat_usage

__all__ = ["Completions", "COMPLETIONS", "text_completion"]


class Completions(OpenAIApi):
    name = "completions"
    path = "completions"
    bounds: ClassVar[Mapping[str, Bound]] = {
        **SAMPLING,
        **PENALTIES,
        "max_tokens": Bound("integer", 0),
        "n": Bound("integer", 1, 128),
        "best_of": Bound("integer", 0, 20),
        "logprobs": Bound("integer", 0, 5),
        "echo": BOOLEAN,
        "stream": BOOLEAN,
    }

    def served_on(self, flavor: Flavor) -> bool:
        return flavor.legacy_completions

    def turns(self, data: Mapping[str, Any]) -> list[Turn]:
        prompt = data.get("prompt")
        if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
            prompt = prompt[0]
        if not isinstance(prompt, str):
            raise Rejection(400, "'prompt' must be a string.", param="prompt", code="invalid_value")
        return [("user", prompt, count_tokens(prompt))]

    def check_stream(self, stream: bool) -> None:
        if stream:
            raise Rejection(
                400,
                "The /v1/completions endpoint does not support streaming.",
                param="stream",
                code="stream_not_supported",
            )

    def stream(self, script: Script, flavor: Flavor, endpoint: Endpoint) -> Steps:
        return chat_stream(script, flavor)  # never asked for: `check_stream` refuses it

    def whole(self, script: Script, flavor: Flavor) -> dict[str, Any]:
        return text_completion(script)


COMPLETIONS = Completions()


def text_completion(script: Script) -> dict[str, Any]:
    """The legacy non-streaming `text_completion` object."""
    return {
        "id": ident("cmpl-", script.nonce),
        "object": "text_completion",
        "created": script.created,
        "model": script.model,
        "choices": [
            {
                "text": script.text,
                "index": 0,
                "logprobs": None,
                "finish_reason": FINISH_REASONS.get(script.ending, "stop"),
            }
        ],
        "usage": chat_usage(script, "plain"),
    }
