"""Sources: where a stream comes from, as values that every sink takes.

A prompt (or a ready `StreamRequest`) is a live source; `replay(path, speed=)` plays a recording
(or a raw SSE body) at its pace; `sdk(stream)` reads a stream opened with the `openai` or
`anthropic` SDK. `show()`, `run()`, `arun()` and `astream()` take any of them, and every one goes
through the same feed loop (`_pipeline.py`), so what the pipeline does — limits, the deadline,
recording, Continue, the end rules — reaches every source and every sink at once.

A source knows how to open its items (bytes per network read, or ready-made events), how to label
a view before the stream names its model, how to redact what it shows, and what its next part is
(Continue: a live source asks again; a recording plays the part it recorded next). While it hands
out its items it sees only a `SourceContext`, never the feed: the few things it reports beside
its items go through it, and the feed loop decides what they become in the state.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

import httpx

from ..core import (
    CUSTOM,
    DEFAULT_LIMITS,
    LIMIT_NAMES,
    RECORDING_ENDED,
    ErrorEvent,
    Item,
    Limits,
    Origin,
    PathLike,
    Problem,
    Recording,
    Redactor,
    Started,
    StreamState,
    as_recording,
    formatting,
)
from ..core.dialects import Normalizer
from ._context import SourceContext
from ._inprocess import IN_PROCESS_BASE, in_process_base, in_process_reason, remember
from ._recording import paced, timed_items
from ._request import Prompt, StreamRequest, make_request
from ._retry import RetryPolicy, retrying
from ._sdk import sdk_error, sdk_items, sdk_provider
from ._transport import http_client, response_items

__all__ = ["Source", "SourceContext", "Live", "heard_script", "Replay", "Sdk", "Labels", "as_source", "replay", "sdk"]

#: What a tool step's next part starts with after the answer so far (a new paragraph).
TOOL_STEP_BREAK = "\n\n"
#: The longest lesson label taken from the demo's `X-Demo-Script` header.
SCRIPT_LABEL_CHARS = 60


@dataclass(frozen=True)
class Labels:
    """What a view's header says about a stream until the stream names its own model."""

    model: Optional[str] = None
    provider: Optional[str] = None
    api: Optional[str] = None
    max_tokens: Optional[int] = None
    citation_markers: bool = False
    #: A line under the header (an offline stand-in, a replay) and the badge beside the title.
    note: Optional[str] = None
    badge: Optional[str] = None


class Source:
    """Where a stream comes from. Subclasses say how to open it; the feed loop does the rest."""

    limits: Limits = DEFAULT_LIMITS
    origin: Origin = "live"
    #: Its next parts play without being asked for (a recording of a continued answer).
    follows = False
    #: Why a stream ended that simply ran out of items (None: the state's own words).
    ended: Optional[str] = None
    #: A warning for sinks that show no badge: who answers (a stand-in for this one, the local model).
    stand_in: Optional[str] = None

    def labels(self) -> Labels:
        return Labels()

    def normalizer(self) -> Normalizer:
        return Normalizer(None, None)

    def resolved(self) -> Source:
        """This source, ready to open (a live one learns the embedded provider's address)."""
        return self

    def stamp(self, state: StreamState) -> None:
        """Say on a new state where it comes from (model, provider, origin)."""
        state.origin = state.origin or self.origin

    def recording_meta(self) -> dict[str, Any]:
        """What a recording of this source says in its header (never a key)."""
        labels = self.labels()
        return {"provider": labels.provider, "api": labels.api, "model": labels.model}

    def redact(self, text: str) -> str:
        return text

    def redactor(self) -> Optional[Redactor]:
        """What removes this source's key from what a peer says and from a recording of its
        bytes; None when it has no key."""
        return None

    def items(self, context: SourceContext) -> AsyncIterator[Item]:
        """What the feed loop reads: bytes, or events. `context` is what the source may read and
        report meanwhile (`SourceContext`); a source with no network ignores its pause."""
        raise NotImplementedError

    def describe(self, exc: Exception) -> ErrorEvent:
        """An exception out of the items (a bug or a surprise), as the state's error."""
        return ErrorEvent(self.redact(f"{type(exc).__name__}: {exc}"), "internal_error")

    def then(self, state: StreamState) -> Optional[Source]:
        """The source of the next part of the answer that ended as `state` (Continue), or None."""
        return None

    def carried(self, state: StreamState) -> Optional[str]:
        """The answer so far as this source's part starts from it (None: all of `state.text`)."""
        return None

    def joins(self) -> bool:
        """This source's part is a new text joined to the answer so far at a word boundary."""
        return False

    def bounded(self, limits: Optional[Limits] = None, **options: Any) -> Source:
        """This source within `limits` (default: its own), with the limits named in `options`
        changed (`deadline=`, `max_answer_chars=`, ...: the fields of `Limits`)."""
        unknown = sorted(set(options) - set(LIMIT_NAMES))
        if unknown:
            raise TypeError(_not_an_option(self, unknown))
        if limits is None and not options:
            return self
        return self._with_limits(replace(limits if limits is not None else self.limits, **options))

    def _with_limits(self, limits: Limits) -> Source:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Live(Source):
    """A request sent to a provider now (or to the embedded one, standing in)."""

    request: StreamRequest

    @property
    def limits(self) -> Limits:  # type: ignore[override]
        return self.request.limits

    @property
    def origin(self) -> Origin:  # type: ignore[override]
        request = self.request
        if request.local:
            return "live"  # a real model, on this machine; its badge and note say which
        return "offline demo" if request.embedded is not None or request.provider.name == "demo" else "live"

    @property
    def stand_in(self) -> Optional[str]:  # type: ignore[override]
        """Who answers, for sinks that show no badge: a stand-in, or the local model asked for by
        name (a 135M model's note says its answers are often wrong)."""
        request = self.request
        return request.offline_note or (local_note(request) if request.weights is not None else None)

    def labels(self) -> Labels:
        request = self.request
        labels = Labels(
            model=request.model,
            provider=provider_label(request),
            api=request.api,
            max_tokens=request.max_tokens,
            citation_markers=request.provider.citation_markers,
            note=request.offline_note or local_note(request),
            badge="local model"
            if request.weights is not None
            else "scripted demo"
            if request.embedded is not None
            else None,
        )
        if request.local and request.weights is None and local_model_missing() is not None:
            return replace(labels, note=None, badge=None)  # it cannot run here: the error's one line says so
        why = self.in_process()
        if why is None:
            return labels
        note = f"The scripted demo ran in-process: {why}."
        return replace(labels, note=" ".join(n for n in (labels.note, note) if n))

    def in_process(self) -> Optional[str]:
        """Why the scripted demo answers in-process (no socket), None when it does not: known
        before the stream starts when the environment says so, or a start failed before."""
        request = self.request
        if request.embedded is None or request.local:
            return None
        if request.base_url is not None and not request.base_url.startswith(IN_PROCESS_BASE):
            return None
        return in_process_reason() or "the embedded server could not open a socket"

    def normalizer(self) -> Normalizer:
        return Normalizer(self.request.api, self.request.provider, alternatives=self.request.alternatives)

    def resolved(self) -> Live:
        """This source with its address: the embedded provider started, or — where no socket can
        be opened — the demo's in-process address, which the client answers with no socket
        (`_inprocess.InProcessTransport`). The one place that decides."""
        request = self.request
        if request.embedded is None or request.base_url is not None or request.local:
            return self
        if in_process_reason() is None:
            try:
                return Live(request.resolved())
            except OSError as exc:  # binding refused (a locked-down hub), no loopback at all
                remember(exc)
        return Live(replace(request, base_url=in_process_base(request.embedded)))

    def stamp(self, state: StreamState) -> None:
        state.model = state.model or self.request.model
        state.provider = state.provider or ("local" if self.request.local else self.request.provider.name)
        state.origin = state.origin or self.origin

    def recording_meta(self) -> dict[str, Any]:
        request = self.request
        meta: dict[str, Any] = {
            "provider": request.provider.name,
            "api": request.api,
            "model": request.model,
            "base_url": request.base_url,
        }
        if request.alternatives is not None:  # `logprobs=N`: a replay keeps as many as the answer did
            meta["logprobs"] = request.alternatives
        return meta

    def redact(self, text: str) -> str:
        return self.request.redact(text)

    def redactor(self) -> Optional[Redactor]:
        return self.request.redactor or None

    async def items(self, context: SourceContext) -> AsyncIterator[Item]:
        request = self.request
        if request.local and request.base_url is None:
            try:
                request, takes_tools = await request.started()  # the local model, found or started
            except (ImportError, RuntimeError) as exc:  # it cannot run here, or it did not start
                words = formatting.one_line(str(exc)).rstrip(".")
                # no Retry for a model that cannot run here (`StreamState.can_continue`)
                code = "local_model_missing" if isinstance(exc, ImportError) else "local_model_unavailable"
                yield [ErrorEvent(f"{words[:1].upper()}{words[1:]}.", code)]
                return
            if (request.tools or "tools" in request.params) and not takes_tools and request.weights is not None:
                yield [Problem(formatting.local_no_tools(request.weights.title))]

        heard = heard_script(context)
        async with http_client(request) as http:
            tries = retrying(
                lambda: response_items(http, request, context, heard=heard), RetryPolicy(request.retries), context
            )
            try:
                async for item in tries:
                    yield item
            finally:
                await tries.aclose()  # closes the response, and so the connection, now

    def describe(self, exc: Exception) -> ErrorEvent:
        return ErrorEvent(self.request.redact(f"{type(exc).__name__}: {exc}"), "client_error")

    def then(self, state: StreamState) -> Optional[Live]:
        return Live(self.request.continued(state.text)) if state.can_continue else None

    def carried(self, state: StreamState) -> Optional[str]:
        return self.request.carried if self.request.part > 1 and self.request.carried else None

    def joins(self) -> bool:
        return self.request.part > 1 and self.request.joins

    def _with_limits(self, limits: Limits) -> Live:
        return Live(replace(self.request, limits=limits))


@dataclass(frozen=True, eq=False)
class Replay(Source):
    """A recording (`show(..., record=path)`), or a raw SSE body, played at its pace times `speed`."""

    recording: Optional[Recording]
    body: Optional[bytes] = None
    speed: float = 1.0
    tokens_per_second: float = 40.0
    model: Optional[str] = None
    provider: Optional[str] = None
    api: Optional[str] = None
    citation_markers: bool = False
    limits: Limits = DEFAULT_LIMITS
    origin: Origin = "replay"
    follows = True
    ended: Optional[str] = RECORDING_ENDED

    def labels(self) -> Labels:
        meta = self.recording.meta if self.recording is not None else {}
        when = meta.get("recorded_at")
        made = f" made {str(when).replace('T', ' ').rstrip('Z')} UTC" if when else ""
        return Labels(
            model=self.model or meta.get("model"),
            provider=self.provider or meta.get("provider"),
            api=self.api or meta.get("api"),
            citation_markers=self.citation_markers,
            note=f"Replay of a recording{made}.",
            badge="replay",
        )

    def normalizer(self) -> Normalizer:
        recording = self.recording
        return Normalizer(
            self.api or (recording.dialect if recording else None),
            self.provider or (recording.provider if recording else None),
            alternatives=recording.alternatives if recording else None,
        )

    def stamp(self, state: StreamState) -> None:
        labels = self.labels()
        state.model = state.model or labels.model
        state.provider = state.provider or labels.provider or "replay"
        state.origin = state.origin or "replay"

    def items(self, context: SourceContext) -> AsyncIterator[Item]:
        what: Union[Recording, bytes] = self.recording if self.recording is not None else (self.body or b"")
        _, items = timed_items(what, self.tokens_per_second)
        return paced(items, self.speed)

    def then(self, state: StreamState) -> Optional[Replay]:
        following = self.recording.following if self.recording is not None else None
        return replace(self, recording=following) if following is not None else None

    def joins(self) -> bool:
        return self.recording is not None and self.recording.joins

    def carried(self, state: StreamState) -> Optional[str]:
        n = self.recording.carried if self.recording is not None else None
        if n is None:
            return None
        text = state.text
        # A part that starts past the answer so far follows a tool step, which starts its next
        # part on a new paragraph (`Stream._tool_step`); a Continue only ever starts within it.
        return text[:n] if n <= len(text) else text + TOOL_STEP_BREAK[: n - len(text)]

    def _with_limits(self, limits: Limits) -> Replay:
        return replace(self, limits=limits)


@dataclass(frozen=True, eq=False)
class Sdk(Source):
    """A stream opened with the official `openai` or `anthropic` SDK (sync or async, raw or a
    stream helper, entered or not)."""

    stream: Any
    provider: Optional[str] = None
    model: Optional[str] = None
    api: Optional[str] = None
    limits: Limits = DEFAULT_LIMITS
    origin: Origin = "sdk"
    ended: Optional[str] = "the SDK stream ended before its terminator."

    def labels(self) -> Labels:
        return Labels(model=self.model, provider=self.provider, api=self.api)

    def normalizer(self) -> Normalizer:
        return Normalizer(None, self.provider)

    def stamp(self, state: StreamState) -> None:
        state.model = state.model or self.model
        state.provider = state.provider or self.provider or sdk_provider(self.stream)
        state.origin = state.origin or "sdk"

    async def items(self, context: SourceContext) -> AsyncIterator[Item]:
        async for data in sdk_items(self.stream):
            yield data
        # The SDKs swallow chat's `data: [DONE]`: the SDK's own end stands for it, and the feed
        # loop gives it back (`Feed.implied_end`) — to the state, and to a recording of the stream.
        context.ended()

    def describe(self, exc: Exception) -> ErrorEvent:
        return sdk_error(exc)

    def _with_limits(self, limits: Limits) -> Sdk:
        return replace(self, limits=limits)


def replay(
    source: Union[PathLike, bytes],
    speed: float = 1.0,
    *,
    tokens_per_second: float = 40.0,
    model: Optional[str] = None,
    provider: Optional[str] = None,
    api: Optional[str] = None,
    citation_markers: bool = False,
) -> Replay:
    """A recording (`record=path`) or a raw `text/event-stream` body (a file or bytes), played at
    its recorded pace times `speed` (0: no waiting; a raw body: one event per 1/`tokens_per_second`
    s). `model`, `provider` and `api` label it (a recording names its own)."""
    if speed < 0:
        raise ValueError("speed is 1 for the recorded pace, 2 for twice as fast, 0 for no waiting")
    recording = as_recording(source) if isinstance(source, (str, os.PathLike, Recording)) else None
    body = None
    if recording is None:
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                body = f.read()
        else:
            body = bytes(source)
    return Replay(
        recording,
        body,
        speed=speed,
        tokens_per_second=tokens_per_second,
        model=model,
        provider=provider,
        api=api,
        citation_markers=citation_markers,
    )


def sdk(stream: Any, *, provider: Optional[str] = None, model: Optional[str] = None, api: Optional[str] = None) -> Sdk:
    """A stream you opened with the `openai` or `anthropic` SDK, as a source for any sink. Cancel
    closes the SDK stream, and so its connection. `provider`, `model` and `api` label it."""
    return Sdk(stream, provider=provider, model=model, api=api)


def as_source(what: Union[Source, StreamRequest, Prompt], *, limits: Optional[Limits] = None, **options: Any) -> Source:
    """Any sink's first argument as a source: a source as it is, a ready request, or a prompt (a
    string or a list of messages) and the options of `make_request`. `limits` bounds it (a
    source's own limits, or the request's defaults, when None), with the limits named in
    `options` (`deadline=`, `max_answer_chars=`...) changed; a source takes no other option, and a
    ready request none at all."""
    if isinstance(what, Source):
        return what.bounded(limits, **options)
    if isinstance(what, StreamRequest):
        if options or limits is not None:
            named = sorted([*options, *(["limits"] if limits is not None else [])])
            raise TypeError(f"{', '.join(named)}: a ready request carries its options; pass them to make_request()")
        return Live(what)
    if limits is None:
        return Live(make_request(what, **options))
    changed = {name: options.pop(name) for name in LIMIT_NAMES if name in options}
    return Live(make_request(what, **options)).bounded(limits, **changed)


def heard_script(context: SourceContext) -> Callable[[Mapping[str, str]], None]:
    """What a live source does with a 2xx's headers: the scripted demo — embedded, in-process, or
    served on a port for a class — read no question; it names the lesson that answers
    (`X-Demo-Script`), and the source says it through its context, so that the view can say so."""

    def heard(headers: Mapping[str, str]) -> None:
        script = headers.get("x-demo-script")
        if script:
            context.say(Started(script=script[:SCRIPT_LABEL_CHARS]))

    return heard


def script_note(state: StreamState) -> Optional[str]:
    """What to say about a scripted answer, with how to get real answers offline on this machine."""
    if not state.script:
        return None
    from ..server.local import real_answers_hint

    return formatting.script_note(state.script, real_answers_hint())


def local_model_missing() -> Optional[str]:
    """Why the local model cannot run here (`server.local_model_missing`), None when it can."""
    from ..server import local_model_missing as missing

    return missing()


def local_note(request: StreamRequest) -> Optional[str]:
    """The note of an answer that the local model gives when asked for by name."""
    if not request.local:
        return None
    if request.weights is None:  # nothing can answer: say why (no badge says a model does)
        from ..server.local import NO_WEIGHTS_MESSAGE, local_model_missing

        why = local_model_missing() or NO_WEIGHTS_MESSAGE
        return f"No local model answers here: {why}."
    weights = request.weights
    return formatting.local_note(weights.describe(), small=not weights.class_quality, where=weights.where)


def provider_label(request: StreamRequest) -> str:
    """What the header says the answer came from: the preset, or the host of a custom server."""
    if request.local:
        return "local"
    if request.provider is not CUSTOM or request.base_url is None:
        return request.provider.name
    url = httpx.URL(request.base_url)
    return url.host + (f":{url.port}" if url.port else "")


def _not_an_option(source: Source, unknown: list[str]) -> str:
    kind = type(source).__name__.lower()
    return (
        f"{', '.join(unknown)}: not an option of a {kind} source (it takes limits, {', '.join(LIMIT_NAMES)}); "
        "request options go with a prompt"
    )
