"""A class log: every question and answer of a kernel as JSON lines, and a page to read them.

    sw.log_to("class-log.jsonl")        # from now on, every answer of this kernel is appended
    sw.show("...", log="mine.jsonl")    # or just this one (the magic: %%stream --log FILE)
    sw.log_report("class-log.jsonl")    # a page a teacher can read (markdown and HTML)

One line per answer, written when it ends (complete, cut off, cancelled or failed): when, the
question (and system prompt), provider, API, model, status and its message in words, finish
reason, timings, usage, tries, and the final text across Continue parts. Never a key: the
request's own redaction (the key as sent, URL-encoded, JSON-escaped) and the key-shape scrub run
over the whole line before it is written, so a key the provider echoed back stays out too.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from ..core import formatting, scrub
from ..markdown import escape_html, quote_block, render_markdown
from ..net import Live, Stream, on_every_part

__all__ = ["log_to", "log_parts", "log_entry", "log_report", "LogReport"]

PathLike = Union[str, "os.PathLike[str]"]

#: The skipped lines a report names one by one; past them, it counts the rest.
_SKIPPED_SHOWN = 20

#: Where `log_to()` sends every answer of the kernel (None: nowhere).
_KERNEL_LOG: Optional[Path] = None


def log_to(path: Optional[PathLike]) -> Optional[Path]:
    """Append every answer of this kernel (every `show()`, `%%stream`, `compare`, `ChatPanel`,
    `arun()`) to `path` as JSON lines from now on; `None` stops. Returns the file."""
    global _KERNEL_LOG
    _KERNEL_LOG = Path(path) if path is not None else None
    on_every_part(_append_to_kernel_log)
    return _KERNEL_LOG


def log_parts(stream: Stream, path: PathLike) -> Stream:
    """Append this one answer to `path` when it ends (each part, after a Continue, again)."""
    target = Path(path)
    stream.on_end.append(lambda done: append(target, log_entry(done)))
    return stream


def _append_to_kernel_log(stream: Stream) -> None:
    if _KERNEL_LOG is not None:
        append(_KERNEL_LOG, log_entry(stream))


def append(path: Path, entry: Mapping[str, Any]) -> None:
    """One JSON line, written and flushed at once (a kernel that dies keeps what was logged)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def log_entry(stream: Stream) -> dict[str, Any]:
    """What the log keeps of one answer; every string goes through the source's redaction."""
    state = stream.state
    source = stream.source
    request = source.request if isinstance(source, Live) else None
    labels = source.labels()
    usage = state.usage
    tokens, estimated = state.completion_tokens
    question, system = _question(request.messages if request is not None else [])
    entry: dict[str, Any] = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "question": question,
        "system": system,
        "provider": state.provider or labels.provider,
        "api": labels.api,
        "model": state.model or labels.model,
        "offline": state.origin == "offline demo",
        "status": state.status,
        "message": state.message,
        "finish": state.finish,
        "time_to_first_token": _round(state.time_to_first_token),
        "seconds": _round(state.elapsed),
        "tokens_per_second": _round(state.tokens_per_second),
        "usage": {
            "prompt_tokens": usage.prompt_tokens if usage is not None else None,
            "completion_tokens": tokens,
            "estimated": estimated,
            "reasoning_tokens": usage.reasoning_tokens if usage is not None else None,
            "cost": usage.cost if usage is not None else None,
        },
        "tries": state.retry.tries if state.retry is not None else 1,
        "parts": len(state.parts),
        "text": state.text,
    }
    # The key, in every form the request knows, and anything shaped like one: out of every string.
    return json.loads(scrub(source.redact(json.dumps(entry, ensure_ascii=False))))


def _question(messages: Iterable[Mapping[str, Any]]) -> tuple[Optional[str], Optional[str]]:
    question = system = None
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if message.get("role") == "system":
            system = text
        elif message.get("role") == "user" and not str(text).startswith("Continue exactly where"):
            question = text
    return question, system


def _round(value: Optional[float]) -> Optional[float]:
    return round(value, 3) if value is not None else None


# --------------------------------------------------------------------------- reading it back


@dataclass
class LogReport:
    """A class log as a page: `markdown`, `html` (safe: model output is untrusted), and in a
    notebook it shows itself. `entries` are the log's lines; `save(path)` writes .md or .html."""

    entries: list[dict[str, Any]]
    title: str = "Class log"
    #: The lines of the log that did not fit, each as "line N: why" (`log_report`).
    skipped: list[str] = field(default_factory=list)

    @property
    def markdown(self) -> str:
        lines = [f"# {self.title}", "", _summary(self.entries), ""]
        if self.skipped:
            shown = self.skipped[:_SKIPPED_SHOWN]
            more = len(self.skipped) - len(shown)
            said = "; ".join(shown) + (f"; and {more:,} more" if more else "")
            lines += [f"*Skipped, as they did not fit: {said}.*", ""]
        for n, entry in enumerate(self.entries, 1):
            lines += [f"## {n}. {_heading(entry)}", "", f"*{_facts(entry)}*", ""]
            if entry.get("system"):
                lines += ["**System:** " + formatting.one_line(entry["system"]), ""]
            lines += ["**Question:**", "", quote_block(entry.get("question") or "(no question recorded)"), ""]
            lines += ["**Answer:**", "", quote_block(entry.get("text") or "(no text)"), ""]
            if entry.get("status") != "complete":
                lines += [f"> ⚠ {formatting.one_line(entry.get('message') or '')}", ""]
        return "\n".join(lines).rstrip() + "\n"

    @property
    def html(self) -> str:
        # One renderer for the whole page: the project's safe markdown (no raw HTML, safe links).
        return f'<div class="sw-static sw-log-report">{render_markdown(self.markdown)}</div>'

    def save(self, path: PathLike) -> Path:
        target = Path(path)
        if target.suffix.lower() in (".html", ".htm"):
            page = f"<!doctype html><meta charset='utf-8'><title>{escape_html(self.title)}</title>{self.html}"
            target.write_text(page, encoding="utf-8")
        else:
            target.write_text(self.markdown, encoding="utf-8")
        return target

    def _repr_markdown_(self) -> str:
        return self.markdown

    def _repr_html_(self) -> str:
        return self.html


def log_report(path: PathLike, *, title: str = "Class log") -> LogReport:
    """Read a class log (`log_to`) into a page a teacher can read. A log is a file anyone can
    edit: every line that does not fit — not UTF-8, not JSON, not an object, or a field of the
    wrong type (`"tries": "two"`) — is skipped, counted in the title and named in the report
    (which line, and why); every other line is reported."""
    entries = []
    skipped: list[str] = []
    for number, raw in enumerate(Path(path).read_bytes().splitlines(), 1):
        if not raw.strip():
            continue
        entry, why = _read_line(raw)
        if entry is not None:
            entries.append(entry)
        else:
            skipped.append(f"line {number:,}: {why}")
    report = LogReport(entries, title, skipped)
    if skipped:
        n = len(skipped)
        report.title = f"{title} ({n} unreadable line{'s' if n != 1 else ''} skipped)"
    return report


#: What each field of a log line may hold (every one may also be null, or missing).
_TEXT, _WHOLE, _NUMBER, _FLAG = "text", "a whole number", "a number", "true or false"
_ENTRY_FIELDS = {
    **dict.fromkeys(
        ("time", "question", "system", "provider", "api", "model", "status", "message", "finish", "text"), _TEXT
    ),
    **dict.fromkeys(("time_to_first_token", "seconds", "tokens_per_second"), _NUMBER),
    **dict.fromkeys(("tries", "parts"), _WHOLE),
    "offline": _FLAG,
}
_USAGE_FIELDS = {
    **dict.fromkeys(("prompt_tokens", "completion_tokens", "reasoning_tokens"), _WHOLE),
    "estimated": _FLAG,
    "cost": _NUMBER,
}


def _read_line(raw: bytes) -> tuple[Optional[dict[str, Any]], str]:
    """(the entry, "") for a line that fits, else (None, why not — in words that quote nothing
    of the line: a field's name, and what it should hold)."""
    try:
        entry = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(entry, dict):
        return None, f"JSON but not an object ({type(entry).__name__})"
    why = _misfit(entry, _ENTRY_FIELDS, "")
    usage = entry.get("usage")
    if why is None and usage is not None:
        why = _misfit(usage, _USAGE_FIELDS, "usage.") if isinstance(usage, dict) else "usage is not an object"
    return (entry, "") if why is None else (None, why)


def _misfit(obj: Mapping[str, Any], fields: Mapping[str, str], prefix: str) -> Optional[str]:
    for name, kind in fields.items():
        value = obj.get(name)
        if value is not None and not _fits(value, kind):
            return f"`{prefix}{name}` is {_kind_of(value)}, not {kind}"
    return None


def _fits(value: Any, kind: str) -> bool:
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _FLAG:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, int) if kind == _WHOLE else isinstance(value, (int, float))


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def _summary(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return "No answers logged yet."
    models = sorted({str(e.get("model")) for e in entries if e.get("model")})
    done = sum(1 for e in entries if e.get("status") == "complete")
    tokens = sum(int((e.get("usage") or {}).get("completion_tokens") or 0) for e in entries)
    return (
        f"{len(entries)} answer{'s' if len(entries) != 1 else ''} ({done} complete) · {tokens:,} output tokens · "
        f"models: {', '.join(models) or 'unknown'} · {entries[0].get('time')} to {entries[-1].get('time')}"
    )


def _heading(entry: Mapping[str, Any]) -> str:
    question = formatting.one_line(entry.get("question") or "", 80)
    return f"{formatting.one_line(str(entry.get('model') or 'unknown model'), 60)} — {question or 'no question'}"


def _facts(entry: Mapping[str, Any]) -> str:
    facts = [str(entry.get("time", "")), str(entry.get("status", ""))]
    if entry.get("provider"):
        facts.append(f"via {entry['provider']}" + (" (offline demo)" if entry.get("offline") else ""))
    if entry.get("time_to_first_token") is not None:
        facts.append(f"first token {entry['time_to_first_token']:.2f} s")
    if entry.get("seconds") is not None:
        facts.append(f"{entry['seconds']:.1f} s")
    usage = entry.get("usage") or {}
    if usage.get("completion_tokens") is not None:
        facts.append(f"{'≈' if usage.get('estimated') else ''}{usage['completion_tokens']:,} tokens")
    if usage.get("cost") is not None:
        facts.append(f"${usage['cost']:.4f}")
    if (entry.get("tries") or 1) > 1:
        facts.append(f"{entry['tries']} tries")
    return " · ".join(formatting.one_line(f, 80).replace("*", "\\*") for f in facts if f)
