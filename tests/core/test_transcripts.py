"""The transcript oracle: recorded provider streams and the result the wire-format guide says they must give.

Each `transcripts/<dialect>/<case>.sse` holds the exact bytes a server sends; the `.json` beside it
says which quirk it pins down and what the normalized result must be, derived by hand from
`docs/wire-formats.md` (the providers' own documentation), never from the implementation. A network read can
end anywhere, so every transcript is parsed whole, byte by byte, in random chunkings and from a
file, and every way must give the same, expected, state.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwidgets import parse
from streamwidgets.core._state import StreamState

TRANSCRIPTS = Path(__file__).parent / "transcripts"
DIALECTS = ("chat", "responses", "messages", "gemini")
EXPECT_KEYS = (
    "text",
    "reasoning",
    "refusal",
    "citations",
    "tool_calls",
    "usage",
    "finish_reason",
    "finish",
    "status",
    "error",
)
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens", "cost")


@dataclass(frozen=True)
class Transcript:
    """One recorded stream and the normalized result it must give."""

    name: str
    path: Path
    wire: bytes
    description: str
    provider: Optional[str]
    dialect: Optional[str]
    expect: dict[str, Any]

    def parse(self, source: Any) -> StreamState:
        return parse(source, provider=self.provider, api=self.dialect)


def _load() -> list[Transcript]:
    cases = []
    for sse in sorted(TRANSCRIPTS.glob("*/*.sse")):
        meta = json.loads(sse.with_suffix(".json").read_text(encoding="utf-8"))
        cases.append(
            Transcript(
                name=f"{sse.parent.name}/{sse.stem}",
                path=sse,
                wire=sse.read_bytes(),
                description=meta["description"],
                provider=meta["provider"],
                dialect=meta["dialect"],
                expect=meta["expect"],
            )
        )
    return cases


CASES = _load()
ids = [case.name for case in CASES]


def observe(state: StreamState) -> dict[str, Any]:
    """The state in the expectation's own vocabulary, so that the two compare as plain data."""
    error = state.error
    return {
        "text": state.text,
        "reasoning": state.reasoning,
        "refusal": state.refusal,
        "citations": [{"title": s.title, "url": s.url} for s in state.citations],
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in state.tool_calls],
        "usage": None if state.usage is None else dataclasses.asdict(state.usage),
        "finish_reason": state.finish_reason,
        "finish": state.finish,
        "status": state.status,
        "error": None
        if error is None
        else {"message": error.message, "code": error.code, "http_status": error.http_status},
    }


def _show(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def mismatches(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """A field-by-field account of what differs; empty when nothing does.

    `1 == 1.0` and `True == 1` in Python, so types are compared too: a code that should stay the
    number 502 must not come back as "502", and a count must not become a bool.
    """
    report = []
    for key in EXPECT_KEYS:
        want, got = expected[key], actual[key]
        if want == got and _types(want) == _types(got):
            continue
        if isinstance(want, str) and isinstance(got, str):
            diff = difflib.unified_diff(
                want.splitlines(keepends=True) or [""],
                got.splitlines(keepends=True) or [""],
                "expected",
                "actual",
                lineterm="",
            )
            detail = "\n".join(line.rstrip("\n") for line in diff)
            report.append(f"- {key}:\n    expected {want!r}\n    actual   {got!r}\n{detail}")
        else:
            report.append(f"- {key}:\n  expected {_show(want)}\n  actual   {_show(got)}")
    return "\n".join(report)


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


def check(case: Transcript, state: StreamState, how: str) -> None:
    problems = mismatches(case.expect, observe(state))
    if problems:
        pytest.fail(f"{case.name} ({how}): {case.description}\n{problems}", pytrace=False)


def chunked(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    """Cut `data` into pieces whose lengths cycle through `sizes`."""
    i, k = 0, 0
    while i < len(data):
        size = sizes[k % len(sizes)]
        yield data[i : i + size]
        i += size
        k += 1


# ---------------------------------------------------------------- the fixtures themselves


def test_transcripts_exist() -> None:
    assert len(CASES) >= 60
    assert {case.path.parent.name for case in CASES} == set(DIALECTS)
    orphans = [p for p in TRANSCRIPTS.glob("*/*.json") if not p.with_suffix(".sse").exists()]
    assert not orphans, f"expectations without a transcript: {orphans}"


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_expectation_is_well_formed(case: Transcript) -> None:
    """A typo in an expectation would otherwise test nothing, or fail for the wrong reason."""
    expect = case.expect
    assert tuple(expect) == EXPECT_KEYS
    assert case.dialect in (None, *DIALECTS)
    assert case.wire, "empty transcript"
    assert isinstance(expect["text"], str) and isinstance(expect["reasoning"], str)
    assert expect["refusal"] is None or isinstance(expect["refusal"], str)
    assert all(tuple(s) == ("title", "url") for s in expect["citations"])
    urls = [s["url"] for s in expect["citations"]]
    assert len(urls) == len(set(urls)), "sources are de-duplicated by URL"
    assert all(tuple(c) == ("id", "name", "arguments") for c in expect["tool_calls"])
    assert expect["usage"] is None or tuple(expect["usage"]) == USAGE_KEYS
    assert expect["status"] in ("complete", "incomplete", "error")
    assert (expect["status"] == "error") == (expect["error"] is not None)
    assert expect["error"] is None or tuple(expect["error"]) == ("message", "code", "http_status")
    assert (expect["finish_reason"] is None) == (expect["finish"] is None)


# ---------------------------------------------------------------- the library against them


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_whole(case: Transcript) -> None:
    check(case, case.parse(case.wire), "whole bytes")


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_byte_by_byte(case: Transcript) -> None:
    wire = case.wire
    check(case, case.parse([wire[i : i + 1] for i in range(len(wire))]), "fed byte by byte")


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_file_path(case: Transcript) -> None:
    check(case, case.parse(case.path), "from a pathlib.Path")
    check(case, case.parse(str(case.path)), "from a str path")


@pytest.mark.parametrize("case", CASES, ids=ids)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 64), min_size=1, max_size=40))
def test_random_chunking(case: Transcript, sizes: list[int]) -> None:
    """Chunk boundaries fall in lines, JSON strings, CRLF pairs and UTF-8 characters alike."""
    state = case.parse(chunked(case.wire, sizes))
    whole = observe(case.parse(case.wire))
    got = observe(state)
    assert not mismatches(whole, got), f"chunking {sizes} changed the result:\n{mismatches(whole, got)}"
    check(case, state, f"chunk sizes {sizes}")
