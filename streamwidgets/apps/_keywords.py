"""The keywords every sink takes — `show()`, `run()`, `arun()`, `astream()`, `compare()` — read once.

Each sink lists its keywords in its own signature, so that `help(sw.show)` and an editor show
them all, grouped as they are read here:

- the request a prompt becomes: `make_request`'s keywords (`REQUEST_KEYWORDS`), and the body
  fields (`temperature`, `max_tokens`...) in `**params`, which `core._options.check_options`
  checks against the API's documented fields;
- the limits: `limits=Limits(...)` and, spelled the same, one keyword per limit
  (`max_answer_chars=`, `deadline=`...), which change the fields of `limits`;
- the tool loop: `max_steps`, `tool_timeout`, `confirm`;
- the run: `record`, `log`, `parts`.

`SinkKeywords.read` takes them once, at the sink's door, and makes the source (`source()`) and
the one value the run carries (`run()`, a `RunOptions`) from them. A keyword that is a near miss
of one of the sink's own (`recrod=`) is a `TypeError` that names it, as Python's own for any
keyword it does not know; a keyword of another sink (`arun(max_fps=...)`) is Python's own
`TypeError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

from ..core import LIMIT_NAMES, PACKAGE_OPTIONS, Limits, accepted, closest
from ..net import (
    DEFAULT_RETRIES,
    DEFAULT_STALL_TIMEOUT,
    PAUSE,
    Confirm,
    PathLike,
    Pause,
    Prompt,
    RunOptions,
    Source,
    Stream,
    StreamRequest,
    ToolLoop,
    as_source,
)

__all__ = ["AnySource", "REQUEST_KEYWORDS", "SinkKeywords", "logged"]

AnySource = Union[Source, StreamRequest, Prompt]

#: The keywords of `make_request` a sink passes on for a prompt (a ready source takes none).
REQUEST_KEYWORDS = (
    "provider",
    "model",
    "api",
    "base_url",
    "api_key",
    "system",
    "offline",
    "local_model",
    "tools",
    "logprobs",
    "extra_body",
    "include_usage",
    "retries",
    "stall_timeout",
)
#: What a request keyword is when it was not given: None, or `make_request`'s own default.
_NOT_GIVEN: dict[str, Any] = {"retries": DEFAULT_RETRIES, "stall_timeout": DEFAULT_STALL_TIMEOUT}
#: Every body field some API or server documents: these pass through to the request's own check.
_BODY_FIELDS = accepted("chat", "custom")


@dataclass(frozen=True)
class SinkKeywords:
    """A sink's keywords, read once (`read`), and what they make: the source and the run."""

    sink: str
    #: The request keywords given, and the body fields (for a prompt: `make_request`'s).
    request: Mapping[str, Any]
    #: `limits=`, and the limits given one by one (they change its fields).
    limits: Optional[Limits]
    changed_limits: Mapping[str, Any]
    max_steps: int
    tool_timeout: float
    confirm: bool
    record: Optional[PathLike]
    log: Optional[PathLike]
    parts: int

    @classmethod
    def read(cls, sink: str, given: Mapping[str, Any]) -> SinkKeywords:
        """`given` is the sink's arguments as its signature names them (`locals()` at its door),
        body fields in `params`; `sink` its name, for the messages."""
        params: Mapping[str, Any] = given.get("params", {})
        _check(sink, params, own=set(given) - {"params"})
        limits = given.get("limits")
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(
                f"limits= is a Limits(...) (sw.Limits), not {type(limits).__name__}; "
                "or pass each limit as its keyword (max_answer_chars=..., deadline=...)"
            )
        request = {name: given[name] for name in REQUEST_KEYWORDS if _was_given(name, given.get(name))}
        return cls(
            sink=sink,
            request={**request, **params},
            limits=limits,
            changed_limits={name: given[name] for name in LIMIT_NAMES if given.get(name) is not None},
            max_steps=given["max_steps"],
            tool_timeout=given["tool_timeout"],
            confirm=bool(given["confirm"]),
            record=given["record"],
            log=given["log"],
            parts=given["parts"],
        )

    def source(self, what: AnySource) -> Source:
        """The sink's first argument as a source, within the limits asked for."""
        return as_source(what, limits=self.limits, **self.changed_limits, **self.request)

    def run(self, *, pause: Pause = PAUSE, ask: Optional[Confirm] = None) -> RunOptions:
        """What the run carries: the recording, the class log, the parts, the tool loop (asking
        `ask`, a view's Run / Skip, when `confirm=True`: with none, that is an error), and how
        long a network read may pause (`pause`: the sink's pace)."""
        loop = ToolLoop(max_steps=self.max_steps, timeout=self.tool_timeout)
        if self.confirm:
            loop = loop.asking(ask)
        return RunOptions(record=self.record, log=self.log, parts=self.parts, tool_loop=loop, pause=pause)


def logged(stream: Stream) -> Stream:
    """`stream`, appending each of its parts to the run's class log (`log=`) when it ends."""
    log = stream.run_options.log
    if log is not None:
        from ._classlog import log_parts

        log_parts(stream, log)
    return stream


def _was_given(name: str, value: Any) -> bool:
    return value is not None and not (name in _NOT_GIVEN and value == _NOT_GIVEN[name])


def _check(sink: str, params: Mapping[str, Any], *, own: set[str]) -> None:
    """Refuse a keyword in `params` that is no body field but the package's: another sink's
    (Python's own words), or a near miss of one of this sink's (naming the one meant). The rest
    go to the request, whose check names a misspelled body field (`temprature=`)."""
    for name in params:
        if name in _BODY_FIELDS:
            continue
        if name in PACKAGE_OPTIONS:
            raise TypeError(f"{sink}() got an unexpected keyword argument {name!r}")
        meant = closest(name, sorted(own | _BODY_FIELDS))
        if meant is not None and meant in own:
            raise TypeError(f"unknown option {name}=: did you mean {meant}=?")
