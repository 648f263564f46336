"""Writing a script as an Anthropic Messages stream: indexed content blocks between
`message_start` and `message_stop`.

Blocks come in Anthropic's order: a `server_tool_use` web search and its
`web_search_tool_result` (when searching), a `thinking` block closed by a `signature_delta`,
text blocks (a cited passage opens with `citations: []` and gets a `citations_delta` before its
text), then `tool_use` blocks whose arguments arrive as `input_json_delta` fragments, the first
one empty. A stream cut by `max_tokens` leaves its last block open, as the API does.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from ._flavors import Flavor
from ._frames import Cutoff, Frame, Stall, Steps, dumps, ident, sse
from ._script import Citation, Script, ScriptError, TextBlock

__all__ = ["messages_stream", "message_object", "STOP_REASONS"]

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def messages_stream(script: Script, flavor: Flavor) -> Steps:
    """The steps of a Messages stream for `script`."""
    out = _Blocks(script)
    if script.ending == "error" and not script.text_tokens:
        assert script.error is not None
        yield Frame(out.error(script.error))
        return
    yield Frame(out.event("message_start", message=out.message([], None, start=True)))
    yield Frame(out.event("ping"))
    yield from out.content()
    if script.ending == "error":
        assert script.error is not None
        yield Frame(out.error(script.error))
    elif script.ending == "cutoff":
        yield Cutoff(script.cutoff_abort)
    elif script.ending == "stall":
        yield Stall()
    else:
        delta = {"stop_reason": STOP_REASONS[script.ending], "stop_sequence": None}
        yield Frame(out.event("message_delta", delta=delta, usage=out.usage(final=True)))
        yield Frame(out.event("message_stop"))


def message_object(script: Script, flavor: Flavor) -> dict[str, Any]:
    """The non-streaming Message object for `script`."""
    out = _Blocks(script)
    return out.message(out.final_blocks(), STOP_REASONS.get(script.ending, "end_turn"), start=False)


class _Blocks:
    """Numbers the content blocks of one message and spells its events."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.index = 0

    def event(self, kind: str, **fields: Any) -> bytes:
        return sse(dumps({"type": kind, **fields}), event=kind)

    def usage(self, final: bool) -> dict[str, Any]:
        usage = self.script.usage
        body: dict[str, Any] = {
            "input_tokens": usage.prompt_tokens - usage.cached_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage.cached_tokens,
            "output_tokens": usage.completion_tokens if final else 1,
        }
        if self.script.search_query is not None:
            body["server_tool_use"] = {"web_search_requests": 1}
        return body

    def message(self, content: list[dict[str, Any]], stop_reason: Any, *, start: bool) -> dict[str, Any]:
        return {
            "id": ident("msg_", self.script.nonce),
            "type": "message",
            "role": "assistant",
            "model": self.script.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": self.usage(final=not start),
        }

    def error(self, error: ScriptError) -> bytes:
        kind = "overloaded_error" if error.kind == "server_error" else "billing_error"
        return self.event(
            "error",
            error={"type": kind, "message": error.message},
            request_id=ident("req_", self.script.nonce, "error"),
        )

    # -------------------------------------------------------------- blocks

    def _search_blocks(self) -> tuple[dict[str, Any], dict[str, Any]]:
        tool_id = ident("srvtoolu_", self.script.nonce, "search")
        results = [
            {
                "type": "web_search_result",
                "title": source.title,
                "url": source.url,
                "encrypted_content": _opaque(f"{self.script.nonce}:content:{source.url}"),
                "page_age": None,
            }
            for source in self.script.sources
        ]
        use = {
            "type": "server_tool_use",
            "id": tool_id,
            "name": "web_search",
            "input": {"query": self.script.search_query},
        }
        return use, {"type": "web_search_tool_result", "tool_use_id": tool_id, "content": results}

    def _citation(self, citation: Citation) -> dict[str, Any]:
        source = self.script.sources[citation.source]
        return {
            "type": "web_search_result_location",
            "cited_text": citation.cited_text,
            "url": source.url,
            "title": source.title,
            "encrypted_index": _opaque(f"{self.script.nonce}:index:{citation.source}:{citation.start}"),
        }

    def final_blocks(self) -> list[dict[str, Any]]:
        """The content blocks of the finished message (non-streaming)."""
        blocks: list[dict[str, Any]] = []
        if self.script.search_query is not None:
            blocks.extend(self._search_blocks())
        if self.script.reasoning_tokens:
            blocks.append({"type": "thinking", "thinking": self.script.reasoning, "signature": self._signature()})
        for block in self.script.blocks:
            text: dict[str, Any] = {"type": "text", "text": block.text}
            if block.citations:
                text["citations"] = [self._citation(c) for c in block.citations]
            blocks.append(text)
        for i, call in enumerate(self.script.tool_calls):
            blocks.append(
                {"type": "tool_use", "id": self._tool_id(i), "name": call.name, "input": _parsed(call.arguments)}
            )
        return blocks

    def _signature(self) -> str:
        return _opaque(f"{self.script.nonce}:signature:{self.script.reasoning}", 96)

    def _tool_id(self, index: int) -> str:
        return ident("toolu_", self.script.nonce, f"call{index}")

    def _open(self, block: dict[str, Any]) -> bytes:
        return self.event("content_block_start", index=self.index, content_block=block)

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return self.event("content_block_delta", index=self.index, delta=delta)

    def _close(self) -> bytes:
        data = self.event("content_block_stop", index=self.index)
        self.index += 1
        return data

    def content(self) -> Iterator[Frame]:
        script = self.script
        proper = script.ending in STOP_REASONS
        if script.search_query is not None:
            use, result = self._search_blocks()
            yield Frame(self._open({**use, "input": {}}))
            query = json.dumps(use["input"], ensure_ascii=False)
            for fragment in ("", query[: len(query) // 2], query[len(query) // 2 :]):
                yield Frame(self._delta({"type": "input_json_delta", "partial_json": fragment}))
            yield Frame(self._close())
            # The search takes the first-token delay; its results come on the clock.
            yield Frame(self._open(result), on_clock=True)
            yield Frame(self._close())
        if script.reasoning_tokens:
            yield Frame(self._open({"type": "thinking", "thinking": "", "signature": ""}))
            for token in script.reasoning_tokens:
                yield Frame(self._delta({"type": "thinking_delta", "thinking": token}), 1)
            yield Frame(self._delta({"type": "signature_delta", "signature": self._signature()}))
            yield Frame(self._close())
        blocks = script.blocks
        written = 0
        for number, block in enumerate(blocks):
            last = number == len(blocks) - 1 and not script.tool_calls
            yield from self._text_block(block, written)
            written += len(block.tokens)
            if not (last and script.ending == "length") and (proper or not last):
                yield Frame(self._close())
        for i, call in enumerate(script.tool_calls):
            yield Frame(self._open({"type": "tool_use", "id": self._tool_id(i), "name": call.name, "input": {}}))
            yield Frame(self._delta({"type": "input_json_delta", "partial_json": ""}))
            for token in call.argument_tokens:
                yield Frame(self._delta({"type": "input_json_delta", "partial_json": token}), 1)
            if not (i == len(script.tool_calls) - 1 and script.ending == "length"):
                yield Frame(self._close())

    def _text_block(self, block: TextBlock, written: int) -> Iterator[Frame]:
        opening: dict[str, Any] = {"type": "text", "text": ""}
        if block.citations:
            opening["citations"] = []
        yield Frame(self._open(opening))
        for citation in block.citations:
            yield Frame(self._delta({"type": "citations_delta", "citation": self._citation(citation)}))
        for count, token in enumerate(block.tokens, written + 1):
            yield Frame(self._delta({"type": "text_delta", "text": token}), 1)
            if count == self.script.malformed_after:
                yield Frame(self._malformed())

    def _malformed(self) -> bytes:
        """An event cut off inside its JSON."""
        head = dumps({"type": "content_block_delta", "index": self.index})[:-1]
        return f'event: content_block_delta\ndata: {head},"delta":{{"type":"text_delta","text":"\\u00\n\n'.encode()


def _opaque(seed: str, size: int = 48) -> str:
    """A stand-in for Anthropic's encrypted fields: stable, base64, meaningless."""
    digest = b""
    counter = 0
    while len(digest) < size:
        digest += hashlib.sha256(f"{seed}:{counter}".encode("utf-8", "surrogatepass")).digest()
        counter += 1
    return base64.b64encode(digest[:size]).decode()


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return {}
