"""The class log: every answer of a kernel as a JSON line, never a key, and the page a teacher
reads — in a real kernel, against the embedded provider and a loopback server that echoes the key."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from classroom_harness import Kernel, running_kernel
from test_kernel import SENTINEL

from streamwidgets.classlog import LogReport, conversation_markdown, log_report
from streamwidgets.server import DemoServer, scripted_answer


class _EchoKey(BaseHTTPRequestHandler):
    """A provider that streams the key it was sent back in its answer (some proxies do, in errors)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        key = self.headers.get("authorization", "").removeprefix("Bearer ")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for piece in ("You sent the key ", key, " — keep it secret."):
            chunk = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoKey)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, demo_server: DemoServer) -> Iterator[Kernel]:
    yield from running_kernel(tmp_path_factory.mktemp("kernel"), demo_server, "%load_ext streamwidgets")


def test_the_log_holds_every_answer_of_a_session_and_no_key(kernel: Kernel, tmp_path: Path, echo_server: str):
    log = tmp_path / "class.jsonl"
    mine = tmp_path / "mine.jsonl"
    kernel.execute(f"sw.log_to({str(log)!r})\nECHO = {echo_server!r}\nimport os")
    kernel.execute(
        """
        a = sw.show('Explain recursion', model='demo', base_url=BASE, system='Be brief.', demo={'tokens_per_second': 0})
        b = sw.show('Explain recursion', model='demo-error', base_url=BASE)
        k = sw.show('Echo my key', base_url=ECHO, model='echo', api_key=os.environ['SW_TEST_KEY'])
        """
    )
    kernel.value("[(await h).status for h in (a, b, k)]")
    kernel.execute(f"%%stream --base-url {{BASE}} --model demo-fast --log {mine}\nWhat is SSE?")
    kernel.value("(await _).status")
    kernel.execute("cmp = sw.compare('What is Big-O?', ['demo-fast', 'demo-deep'], base_url=BASE)")
    kernel.value("[s.status for s in await cmp]")
    kernel.execute("panel = sw.ChatPanel(base_url=BASE, model='demo-fast')\nchat = panel.send('What is Jupyter?')")
    kernel.value("(await chat).status")
    time.sleep(0.2)

    raw = log.read_text(encoding="utf-8")
    assert SENTINEL not in raw and "***" in raw  # the echoed key is gone, in every line
    entries = [json.loads(line) for line in raw.splitlines()]
    questions = sorted(e["question"] for e in entries)  # in the order they ended
    assert questions == sorted(
        [
            "Explain recursion",
            "Explain recursion",
            "Echo my key",
            "What is SSE?",
            "What is Big-O?",
            "What is Big-O?",
            "What is Jupyter?",
        ]
    )
    by_model = {(e["question"], e["model"]): e for e in entries}
    first = by_model["Explain recursion", "demo"]
    assert first["system"] == "Be brief." and first["model"] == "demo" and first["api"] == "chat"
    assert first["status"] == "complete" and first["finish"] == "stop"
    assert first["text"] == scripted_answer("demo", "Explain recursion").text
    assert first["usage"]["completion_tokens"] > 0 and first["usage"]["estimated"] is False
    assert first["time_to_first_token"] is not None and first["seconds"] >= first["time_to_first_token"]
    failed = by_model["Explain recursion", "demo-error"]
    assert failed["status"] == "error" and "stopped unexpectedly" in failed["message"] and failed["text"]
    assert by_model["Echo my key", "echo"]["text"] == "You sent the key *** — keep it secret."
    assert ("What is Big-O?", "demo-deep") in by_model and ("What is Big-O?", "demo-fast") in by_model
    # --log adds the one answer to its own file too.
    [own] = [json.loads(line) for line in mine.read_text().splitlines()]
    assert own["question"] == "What is SSE?" and own["model"] == "demo-fast"
    # The chat panel exports its conversation.
    exported = kernel.value("panel.to_markdown()")
    assert exported.startswith("# Conversation") and "> What is Jupyter?" in exported
    assert scripted_answer("demo-fast", "What is Jupyter?").text.strip() in exported


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
