"""`Chat`: a conversation of several turns, each answer (complete or partial) kept in its history."""

from __future__ import annotations

from typing import Any, Optional

from ..core import StreamState
from ._pipeline import Notify, RunOptions, Stream
from ._request import Secret, StreamRequest, make_request
from ._sources import Live

__all__ = ["Chat"]


class Chat:
    """A multi-turn conversation: each answer, complete or partial, is appended to the history.

    The keywords are those of `make_request()` (provider, model, api, base_url, api_key, system,
    offline, limits, and request-body parameters such as `max_tokens`).
    """

    def __init__(self, *, system: Optional[str] = None, **options: Any) -> None:
        if isinstance(options.get("api_key"), str):  # kept only as a Secret: no repr, vars() or pickle shows it
            options["api_key"] = Secret(options["api_key"])
        self.options = options
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []

    def request(self, text: str) -> StreamRequest:
        """Add the user's turn and build the request for the answer."""
        self.messages.append({"role": "user", "content": text})
        return make_request(list(self.messages), **self.options)

    def record(self, state: StreamState) -> None:
        """Add the answer (what arrived of it) to the history; a Continue's part replaces the
        turn of the part before it, so the history holds the whole answer once."""
        if not state.text:
            return
        if len(state.parts) > 1 and self.messages and self.messages[-1].get("role") == "assistant":
            self.messages[-1] = {"role": "assistant", "content": state.text}
        else:
            self.messages.append({"role": "assistant", "content": state.text})

    async def send(self, text: str, *, notify: Optional[Notify] = None, parts: int = 1) -> StreamState:
        stream = Stream(Live(self.request(text)), RunOptions(parts=parts), notify=notify)
        try:
            await stream.run()
        finally:
            self.record(stream.state)
        return stream.state

    def __repr__(self) -> str:
        return f"<Chat {len(self.messages)} messages, options={sorted(self.options)}>"
