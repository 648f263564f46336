"""A script: everything the demo model will stream for one request, in no particular dialect.

Scenarios (`_scenarios`) make scripts; each API's writer (`apis/`) turns one into that API's
bytes. Token pieces are `Pieces`, made while they are written, so a
script costs the same memory whatever its length; its text is joined only by a writer that
needs it whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Optional

from .._edge import Cutoff, Pacing, Rejection, Stall, Step, Steps
from ._tokens import NO_PIECES, Pieces, TextPieces, joined

__all__ = [
    "Script",
    "ScriptError",
    "ScriptUsage",
    "TextBlock",
    "Citation",
    "WebSource",
    "ScriptedToolCall",
    "Pacing",
    "DEFAULT_KEEPALIVE",
    "FIXED_CREATED",
]

DEFAULT_KEEPALIVE = 1.0
FIXED_CREATED = 1_700_000_000
_DEFAULT_PACING = Pacing(80.0, 0.3, DEFAULT_KEEPALIVE)


@dataclass(frozen=True)
class WebSource:
    title: str
    url: str


@dataclass(frozen=True)
class Citation:
    """A `[n]` marker in the text: which source, where the marker is, what passage it backs."""

    source: int
    start: int
    end: int
    cited_text: str


@dataclass(frozen=True)
class TextBlock:
    """A run of answer text; searched answers have one block per cited passage."""

    tokens: Pieces
    citations: tuple[Citation, ...] = ()

    @classmethod
    def of(cls, text: str, citations: tuple[Citation, ...] = ()) -> TextBlock:
        return cls(TextPieces(text), citations)

    @property
    def text(self) -> str:
        return self.tokens.text


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    argument_tokens: Pieces

    @property
    def arguments(self) -> str:
        return self.argument_tokens.text


@dataclass(frozen=True)
class ScriptError:
    """An error that arrives inside a 200 stream; `kind` is `server_error` or `insufficient_balance`."""

    kind: str
    message: str


@dataclass(frozen=True)
class ScriptUsage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Script:
    """Everything the server will stream for one request, in no particular dialect.

    `ending` is how the stream ends: `stop`, `length` or `tool_calls` (proper ends), `error`
    (an error event), `cutoff` (the connection closes without a terminator) or `stall`
    (silence until the client leaves). `text` and `reasoning` are exactly what is streamed.
    `label` says what answered, for the `X-Demo-Script` header: a lesson's title, `none` (no
    lesson fits the question), or the scenario's name when its answer is not a lesson.
    """

    scenario: str
    model: str
    label: str = ""
    reasoning_tokens: Pieces = NO_PIECES
    blocks: tuple[TextBlock, ...] = ()
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    sources: tuple[WebSource, ...] = ()
    search_query: Optional[str] = None
    ending: str = "stop"
    error: Optional[ScriptError] = None
    malformed_after: Optional[int] = None
    usage: ScriptUsage = ScriptUsage(0, 0, 0, 0)
    pacing: Pacing = _DEFAULT_PACING
    nonce: str = "0"
    created: int = FIXED_CREATED
    include_usage: bool = False
    cutoff_abort: bool = False
    #: Alternatives per token when the request asked for log-probabilities (simulated, see
    #: `_logprobs`), else None; `temperature` is the one it asked for (None: the default).
    logprobs: Optional[int] = None
    temperature: Optional[float] = None
    #: The reasoning is spent and counted but not sent (the request asked not to see it).
    reasoning_hidden: bool = False
    rejection: Optional[Rejection] = field(default=None, compare=False)

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.blocks)

    @property
    def reasoning(self) -> str:
        return self.reasoning_tokens.text

    @property
    def text_tokens(self) -> Pieces:
        """Every text piece, block after block (lazy: `len()` and iteration)."""
        return joined(block.tokens for block in self.blocks) if self.blocks else NO_PIECES

    @property
    def completion_tokens(self) -> int:
        """Reasoning, text and tool-argument pieces: what usage reports and the limit cuts."""
        return (
            len(self.reasoning_tokens)
            + len(self.text_tokens)
            + sum(len(call.argument_tokens) for call in self.tool_calls)
        )


def ended(
    script: Script, error: Callable[[ScriptError], Iterable[Step]], proper: Callable[[], Iterable[Step]]
) -> Steps:
    """How a scripted stream ends, the same in every API: its error in the API's own shape, a
    cut-off, a stall, or the API's proper end."""
    if script.ending == "error":
        assert script.error is not None
        yield from error(script.error)
    elif script.ending == "cutoff":
        yield Cutoff(script.cutoff_abort)
    elif script.ending == "stall":
        yield Stall()
    else:
        yield from proper()
