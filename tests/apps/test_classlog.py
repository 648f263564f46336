"""The class log's report, the page a teacher reads, and a conversation as markdown. The log of a
real kernel's answers (every one a JSON line, never a key) is `tests/kernel/test_classroom.py`."""

from __future__ import annotations

import json
from pathlib import Path

from streamwidgets.apps._classlog import LogReport, log_report
from streamwidgets.markdown import conversation_markdown


def test_the_report_is_a_page_a_teacher_reads_and_runs_no_script(tmp_path: Path):
    hostile = '<img src=x onerror="window.__xss=1"> [click](javascript:alert(1))'
    log = tmp_path / "class.jsonl"
    entries = [
        {
            "time": "2026-12-01T10:00:00Z",
            "question": "Explain recursion " + hostile,
            "system": None,
            "provider": "demo",
            "model": "demo-deep",
            "status": "complete",
            "message": "Complete.",
            "time_to_first_token": 1.2,
            "seconds": 9.5,
            "usage": {"completion_tokens": 300, "estimated": False, "cost": None},
            "tries": 2,
            "text": "## Recursion\n\nA function that calls itself. " + hostile,
        },
        {
            "time": "2026-12-01T10:01:00Z",
            "question": "Hi",
            "model": "demo",
            "status": "cancelled",
            "message": "Cancelled by you.",
            "usage": {"completion_tokens": 3, "estimated": True},
            "text": "Hel",
        },
    ]
    log.write_text("\n".join(json.dumps(e) for e in entries) + "\nnot json\n", encoding="utf-8")
    report = log_report(log)
    assert isinstance(report, LogReport) and len(report.entries) == 2
    md = report.markdown
    assert "2 answers (1 complete)" in md and "303 output tokens" in md and "1 unreadable line" in md
    assert "## 1. demo-deep — Explain recursion" in md and "2 tries" in md and "first token 1.20 s" in md
    assert "> ⚠ Cancelled by you." in md and "≈3 tokens" in md
    html = report.html
    assert "<img" not in html and 'href="javascript' not in html and "<h2>Recursion</h2>" in html
    saved = report.save(tmp_path / "report.html")
    assert saved.read_text().startswith("<!doctype html>")
    assert report.save(tmp_path / "report.md").read_text() == md


def test_a_conversation_as_markdown():
    md = conversation_markdown(
        [
            {"role": "system", "content": "Be kind."},
            {"role": "user", "content": "What is SSE?\nIn short."},
            {"role": "assistant", "content": "**SSE** is one-way streaming."},
        ]
    )
    assert md.splitlines() == [
        "# Conversation",
        "",
        "**System:** Be kind.",
        "",
        "**You:**",
        "",
        "> What is SSE?",
        "> In short.",
        "",
        "**Answer:**",
        "",
        "**SSE** is one-way streaming.",
        "",
        "---",
    ]


def test_every_line_that_does_not_fit_is_skipped_and_named_and_the_rest_reported(tmp_path: Path):
    """A student edits `"tries": "two"`: one wrong type made `log_report()` raise, and nothing was
    reported. Each line that does not fit is skipped and named; every other line is reported."""
    good = {
        "time": "2026-12-01T10:00:00Z",
        "question": "What is recursion?",
        "model": "demo",
        "status": "complete",
        "usage": {"completion_tokens": 30, "estimated": False},
        "tries": 1,
        "text": "A function that calls itself.",
    }
    misfits = [
        {**good, "tries": "two"},
        {**good, "usage": {"completion_tokens": "lots"}},
        {**good, "usage": {"cost": [1]}},
        {**good, "usage": "free"},
        {**good, "question": ["a", "list"]},
        {**good, "time_to_first_token": "fast"},
        {**good, "model": {"name": "demo"}},
        {**good, "offline": "yes"},
        {**good, "parts": 1.5},
        {**good, "usage": {"completion_tokens": True}},
    ]
    lines = [json.dumps(good).encode(), *(json.dumps(m).encode() for m in misfits)]
    lines += [
        b"[" * 100_000,
        b'{"text": "caf\xe9"}',
        b"[1, 2]",
        b"not json",
        json.dumps({**good, "question": "Last"}).encode(),
    ]
    log = tmp_path / "class.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    report = log_report(log)
    assert [e["question"] for e in report.entries] == ["What is recursion?", "Last"]
    assert report.skipped == [
        "line 2: `tries` is text, not a whole number",
        "line 3: `usage.completion_tokens` is text, not a whole number",
        "line 4: `usage.cost` is a list, not a number",
        "line 5: usage is not an object",
        "line 6: `question` is a list, not text",
        "line 7: `time_to_first_token` is text, not a number",
        "line 8: `model` is an object, not text",
        "line 9: `offline` is text, not true or false",
        "line 10: `parts` is a number, not a whole number",
        "line 11: `usage.completion_tokens` is true or false, not a whole number",
        "line 12: not JSON",
        "line 13: not UTF-8 text",
        "line 14: JSON but not an object (list)",
        "line 15: not JSON",
    ]
    md = report.markdown
    assert md.startswith("# Class log (14 unreadable lines skipped)")
    assert "2 answers (2 complete)" in md and "60 output tokens" in md
    assert "line 2: `tries` is text, not a whole number" in md and "line 15: not JSON" in md
    assert "<script" not in report.html
