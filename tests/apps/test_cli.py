"""The command line as a person runs it: `python -m streamwidgets ...` in a child process.

Every run gets an environment without any `*_API_KEY`, so each answer comes from the embedded
offline provider (the CLI starts it in its own process), and a timeout, so a hung CLI fails the
test instead of the run. What is asserted is the text a person reads: the answer as it streamed,
the `[done · N tokens · ...]` summary line the terminal printer ends with, the plain-words error
line, and the exit code.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import httpx
import pytest
from support.http import free_port, wait_for_http

from streamwidgets.core._providers import PROVIDERS
from streamwidgets.server.local import base_url

REPO = Path(__file__).resolve().parents[2]

#: Seconds any one CLI run may take (an answer streams in 3–6 s at the demo model's 80 tok/s).
TIMEOUT = 60.0

#: A request body field (`--param`) that asks the demo provider to answer at full speed.
FAST = ("--param", 'demo={"tokens_per_second": 0}')

#: The summary line of a finished answer, e.g. `[done · 242 tokens · prompt 9 · 80 tok/s]`.
DONE = re.compile(r"\[done · (?P<tokens>[\d,]+) tokens · prompt (?P<prompt>\d+)(?: · (?P<rest>.+))?\]")


def child_env() -> dict[str, str]:
    """This environment without any provider key (and with this checkout first on the path)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("SW_PROVIDER", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PYTHONIOENCODING"] = "utf-8"  # the answers hold emoji; read them back the same way
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def answer(self) -> str:
        """The streamed answer: stdout without the bracketed lines the printer ends with."""
        return split_output(self.stdout)[0]

    @property
    def notes(self) -> list[str]:
        """The bracketed lines after the answer (how it ended, sources, usage)."""
        return split_output(self.stdout)[1]

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"


def split_output(stdout: str) -> tuple[str, list[str]]:
    lines = stdout.rstrip("\n").split("\n")
    notes: list[str] = []
    while lines and lines[-1].startswith("[") and lines[-1].endswith("]"):
        notes.insert(0, lines.pop())
    return "\n".join(lines).strip("\n"), notes


def cli(*args: str, stdin: Optional[str] = None, cwd: Optional[Path] = None, timeout: float = TIMEOUT) -> Run:
    completed = subprocess.run(
        [sys.executable, "-m", "streamwidgets", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=child_env(),
        cwd=cwd or REPO,
        timeout=timeout,
    )
    return Run(completed.returncode, completed.stdout, completed.stderr)


def assert_no_traceback(run: Run) -> None:
    assert "Traceback (most recent call last)" not in run.stderr + run.stdout, run.describe()


def done_line(run: Run) -> re.Match[str]:
    """The `[done · ...]` summary, which must be the last line."""
    assert run.notes, f"no summary line:\n{run.describe()}"
    match = DONE.fullmatch(run.notes[-1])
    assert match, f"the last line is not a done summary:\n{run.describe()}"
    return match


def read_recording(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines, f"{path} is empty"
    header = json.loads(lines[0])
    return header, [json.loads(line) for line in lines[1:]]


def spread(items: list[dict[str, Any]]) -> float:
    """Seconds from a recording's first read of the body to its last."""
    reads = [item["t"] for item in items if "data" in item]
    return reads[-1] - reads[0]


def recorded_bytes(items: list[dict[str, Any]]) -> bytes:
    return b"".join(base64.b64decode(item["data"]) for item in items if "data" in item)


# --------------------------------------------------------------------------- providers, demo


def test_providers_lists_every_preset() -> None:
    run = cli("providers")
    assert run.returncode == 0, run.describe()
    rows = {line.split()[0]: line for line in run.stdout.splitlines() if line.strip()}
    assert set(rows) == set(PROVIDERS), run.stdout
    for name, preset in PROVIDERS.items():
        row = rows[name].split()
        assert row[1] == preset.default_api, rows[name]
        if preset.key_env:
            assert row[2] == preset.key_env, rows[name]  # the variable's name, never a key
        if preset.base_url:
            assert row[-1] == preset.base_url, rows[name]
    assert "(embedded, 127.0.0.1)" in rows["demo"]


def test_demo_streams_the_quickstart_answer_offline() -> None:
    run = cli("demo")
    assert run.returncode == 0, run.describe()
    assert_no_traceback(run)
    # The quickstart asks how streaming with server-sent events works; the demo model answers that.
    assert len(run.answer) > 300, run.describe()
    assert "time to first token" in run.answer, run.answer[:500]
    summary = done_line(run)
    assert int(summary["tokens"].replace(",", "")) > 50
    assert summary["rest"] and summary["rest"].endswith("tok/s"), run.notes
    assert run.notes[0].startswith("[A prepared lesson about "), run.notes  # it says what it is
    assert len(run.notes) == 2, f"a complete answer has no error line: {run.notes}"


# --------------------------------------------------------------------------- ask, record, replay


@pytest.fixture(scope="module")
def greeting(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    """`ask "Hello!" --provider demo --record FILE`, run once for the tests that compare with it."""
    recording = tmp_path_factory.mktemp("cli") / "hello.jsonl"
    return cli("ask", "Hello!", "--provider", "demo", "--record", str(recording)), recording


def test_ask_streams_an_answer(greeting: tuple[Run, Path]) -> None:
    run, _ = greeting
    assert run.returncode == 0, run.describe()
    assert_no_traceback(run)
    assert run.answer.startswith("Hello!"), run.answer[:200]
    assert "offline model built into streamwidgets" in run.answer
    assert "`demo-reasoning`" in run.answer, "the greeting lists the other demo models"
    summary = done_line(run)
    assert int(summary["tokens"].replace(",", "")) > 100
    assert run.stderr == "", "the demo provider needs no offline note"


def test_ask_record_writes_a_recording(greeting: tuple[Run, Path]) -> None:
    run, recording = greeting
    assert run.returncode == 0, run.describe()
    first_line = recording.read_text(encoding="utf-8").splitlines()[0]
    header, items = read_recording(recording)
    assert "streamwidgets_recording" in header, first_line
    assert header["streamwidgets_recording"] == 1
    assert (header["provider"], header["api"], header["model"]) == ("demo", "chat", "demo"), header
    assert header["base_url"].startswith("http://127.0.0.1:"), header
    assert items[-1]["end"] == "complete", items[-1]
    times = [item["t"] for item in items]
    assert times == sorted(times) and times[-1] > 0.5, "arrival times, as streamed at 80 tok/s"
    body = recorded_bytes(items).decode("utf-8")
    assert body.rstrip().endswith("data: [DONE]"), body[-300:]
    chunks = [json.loads(line[len("data: ") :]) for line in body.splitlines() if line.startswith("data: {")]
    streamed = "".join(choice["delta"].get("content") or "" for chunk in chunks for choice in chunk["choices"])
    assert streamed.strip("\n") == run.answer, "the recording holds the bytes of the printed answer"


def test_replay_prints_the_recorded_answer(greeting: tuple[Run, Path]) -> None:
    asked, recording = greeting
    run = cli("replay", str(recording), "--speed", "0")
    assert run.returncode == 0, run.describe()
    assert_no_traceback(run)
    assert run.answer == asked.answer
    replayed, live = done_line(run), done_line(asked)
    assert (replayed["tokens"], replayed["prompt"]) == (live["tokens"], live["prompt"])


#: OSC 52 sets the clipboard to its base64 ("pwned"); the CSI sequences clear the screen, move the
#: cursor home and recolour; 0x9b is CSI in one C1 byte.
OSC_52 = "\x1b]52;c;cHduZWQ=\x07"
CSI = "\x1b[2J\x1b[1;1H\x1b[31m\x9b0m"


def test_replay_prints_no_escape_sequence_from_a_recording(tmp_path: Path) -> None:
    """The header was printed raw: a recording could write the clipboard of whoever replays it."""
    text = f"Hello {OSC_52}there{CSI}."
    sources = {"object": "venym.sources", "sources": [{"url": "https://example.org/a", "title": f"Page{OSC_52}{CSI}"}]}
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": f"m{CSI}",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    end = {
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
    }
    body = "".join(f"data: {json.dumps(obj)}\n\n" for obj in (chunk, sources, end)) + "data: [DONE]\n\n"
    header = {
        "streamwidgets_recording": 1,
        "provider": f"demo{OSC_52}",
        "api": "chat",
        "model": f"m{CSI}",
        "recorded_at": f"2024-05-01T10:00:00Z{OSC_52}{CSI}",
    }
    path = tmp_path / "hostile.jsonl"
    lines = [header, {"t": 0.0, "data": base64.b64encode(body.encode()).decode()}, {"t": 0.1, "end": "complete"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run = cli("replay", str(path), "--speed", "0")
    assert run.returncode == 0, run.describe()
    assert_no_traceback(run)
    for where, printed in (("stdout", run.stdout), ("stderr", run.stderr)):
        for byte in ("\x1b", "\x07", "\x9b"):
            assert byte not in printed, f"{byte!r} reached the terminal's {where}:\n{printed!r}"
    assert run.stdout.startswith("Hello ]52;c;cHduZWQ=there[2J[1;1H[31m0m.\n")  # shown as the harmless text it is
    assert "[1] Page]52;c;cHduZWQ=[2J[1;1H[31m0m https://example.org/a" in run.stdout
    assert "Replay of a recording made 2024-05-01 10:00:00" in run.stderr
    assert "names a provider streamwidgets does not know" in run.stderr  # said, not a crash


def test_record_refuses_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    essay = tmp_path / "essay.txt"
    essay.write_text("Three weeks of work.\n")
    run = cli("ask", "hi", "--provider", "demo", *FAST, "--record", str(essay))
    assert run.returncode == 2, run.describe()
    assert_no_traceback(run)
    assert f"cannot record to {essay}: it exists and is not a streamwidgets recording" in run.stderr
    assert essay.read_text() == "Three weeks of work.\n" and run.stdout == ""


def test_ask_reads_the_prompt_from_stdin() -> None:
    run = cli("ask", "-", "--provider", "demo", *FAST, stdin="What is recursion?\n")
    assert run.returncode == 0, run.describe()
    assert_no_traceback(run)
    # The demo model picks its answer by the prompt's keywords: this is the recursion answer.
    assert "A **recursive** function" in run.answer, run.answer[:300]
    assert "**base case**" in run.answer
    done_line(run)


@pytest.mark.parametrize(
    ("api", "wire_marker"),
    [("responses", "response.output_text.delta"), ("messages", "content_block_delta")],
)
def test_ask_over_each_api(api: str, wire_marker: str, greeting: tuple[Run, Path], tmp_path: Path) -> None:
    """The same question through another wire dialect: the same answer, and the recording shows
    the stream really came in that dialect."""
    recording = tmp_path / f"{api}.jsonl"
    run = cli("ask", "Hello!", "--provider", "demo", "--api", api, "--record", str(recording), *FAST)
    assert run.returncode == 0, run.describe()
    assert_no_traceback(run)
    chat, chat_recording = greeting
    assert run.answer == chat.answer
    assert done_line(run)["tokens"] == done_line(chat)["tokens"]
    header, items = read_recording(recording)
    assert header["api"] == api, header
    assert wire_marker in recorded_bytes(items).decode("utf-8")
    # --param reached the request body: the demo answered at full speed, its bytes coming in well
    # under half the time the same answer took at the demo's own 80 tok/s (the greeting, recorded
    # on the same machine; at least 3 s for its 242 tokens, however idle the machine).
    assert spread(items) < spread(read_recording(chat_recording)[1]) / 2, "--param did not reach the request body"


def test_ask_without_a_key_falls_back_to_the_offline_provider() -> None:
    """No OPENAI_API_KEY in the child: the preset is imitated offline, and stderr says so."""
    run = cli("ask", "Hello!", "--provider", "openai", "--max-tokens", "5")
    assert run.returncode == 0, run.describe()
    assert_no_traceback(run)
    assert "no OPENAI_API_KEY is set" in run.stderr, run.describe()
    assert run.answer.startswith("Hello"), run.describe()
    assert "cut short by the token limit" in run.stdout, run.describe()
    assert done_line(run)["tokens"] == "5"


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("demo-http-401", ["Invalid API key.", "HTTP 401", "invalid_api_key"]),
        ("demo-http-429", ["Rate limit reached: too many requests", "HTTP 429", "retry after 2 s"]),
        ("demo-http-503", ["The service is temporarily unavailable", "HTTP 503"]),
        ("demo-error-early", ["Insufficient balance: add credit to continue"]),
    ],
)
def test_ask_reports_a_provider_error_in_plain_words(model: str, expected: list[str]) -> None:
    run = cli("ask", "Hello!", "--provider", "demo", "--model", model)
    assert run.returncode != 0, run.describe()
    assert_no_traceback(run)
    assert run.answer == "", f"an error before any text prints no answer:\n{run.describe()}"
    assert run.notes and run.notes[0].startswith("[The provider reported an error: "), run.describe()
    for words in expected:
        assert words in run.notes[0], run.describe()


def test_ask_keeps_the_partial_answer_of_a_stream_that_fails() -> None:
    run = cli("ask", "Hello!", "--provider", "demo", "--model", "demo-error")
    assert run.returncode != 0, run.describe()
    assert_no_traceback(run)
    assert run.answer.startswith("Hello!"), run.describe()
    assert "The model stopped unexpectedly" in run.notes[0], run.describe()
    assert "The partial answer (about" in run.notes[0]
    assert run.notes[-1].startswith("[error · about "), run.notes


# --------------------------------------------------------------------------- serve


def as_from_a_terminal(command: list[str], **options: Any) -> subprocess.Popen[Any]:
    """Start the CLI as a terminal would, where Ctrl+C interrupts it. A process started with
    SIGINT ignored (a background job of a script, `nohup`) passes that on to its children, and
    then Python never raises KeyboardInterrupt; here the child gets SIGINT's default back."""
    if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
        return subprocess.Popen(command, **options)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a handler, unlike "ignored", is not inherited
    try:
        return subprocess.Popen(command, **options)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_serve_answers_models_and_a_streaming_chat(tmp_path: Path) -> None:
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with log.open("w", encoding="utf-8") as out:
        process = as_from_a_terminal(
            [sys.executable, "-m", "streamwidgets", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=child_env(),
            cwd=REPO,
            text=True,
        )
    try:
        models = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert process.poll() is None, f"serve exited with {process.returncode}:\n{log.read_text()}"
            try:
                models = httpx.get(f"{root}/v1/models", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert models is not None, f"serve did not answer within 20 s:\n{log.read_text()}"
        assert models.status_code == 200, models.text
        listed = models.json()
        assert listed["object"] == "list"
        ids = {model["id"] for model in listed["data"]}
        assert {"demo", "demo-reasoning", "demo-search", "demo-tools"} <= ids, ids

        request = {
            "model": "demo",
            "messages": [{"role": "user", "content": "Hello!"}],
            "stream": True,
            "max_tokens": 8,
            "demo": {"tokens_per_second": 0, "first_token_delay": 0},
        }
        with httpx.stream("POST", f"{root}/v1/chat/completions", json=request, timeout=10) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            body = response.read().decode("utf-8")
        assert "data: [DONE]" in body, body[-500:]
        assert body.rstrip().endswith("data: [DONE]"), body[-500:]
        assert '"finish_reason":"length"' in body, "max_tokens cut the answer"
        assert "chat.completion.chunk" in body

        process.send_signal(signal.SIGINT)  # Ctrl+C, as the banner says
        assert process.wait(timeout=15) == 0, log.read_text()
        banner = log.read_text(encoding="utf-8")
        assert f"embedded provider on {root}/v1" in banner, banner
        assert "Traceback" not in banner, banner
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{root}/v1/models", timeout=2)


# ------------------------------------------------------------------ a newcomer's mistakes


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("replay", "no-such-answer.jsonl"), "no such file: no-such-answer.jsonl"),
        (("replay", "."), "is a folder, not a file"),
        (
            ("ask", "hi", "--provider", "anthropic", "--api", "chat"),
            "provider 'anthropic' has no 'chat' API; it serves 'messages'",
        ),
        (
            ("ask", "hi", "--record", "no/such/folder/answer.jsonl"),
            "cannot record to no/such/folder/answer.jsonl: there is no folder no/such/folder",
        ),
        (("ask", "-"), "no question arrived on standard input"),
        (("replay", "notes.txt"), "notes.txt is not a streamwidgets recording or an event stream"),
    ],
    ids=["missing-recording", "folder", "api-not-served", "record-folder-missing", "empty-stdin", "not-a-recording"],
)
def test_a_mistake_is_one_plain_line_and_exit_2(args, says, tmp_path):
    (tmp_path / "notes.txt").write_text("Bring the slides.\nCheck the projector.\n")
    run = cli(*args, stdin="\n", cwd=tmp_path)
    assert run.returncode == 2, run.describe()
    assert says in run.stderr and "Traceback" not in run.stderr, run.describe()
    assert run.stderr.count("\n") == 1, run.describe()


def test_serve_on_a_busy_port_says_so_and_never_announces_a_server():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        run = cli("serve", "--port", str(busy.getsockname()[1]), timeout=20)
    assert run.returncode == 2 and "already in use" in run.stderr and "Traceback" not in run.stderr, run.describe()
    assert "--port 0" in run.stderr, "the message names the fix"
    assert "embedded provider on" not in run.stdout


@pytest.mark.parametrize("origin", ["null", "*"])
def test_serve_refuses_to_let_in_null_or_a_wildcard_in_one_line(origin):
    run = cli("serve", "--port", "0", "--allow-origin", "http://127.0.0.1:8000", "--allow-origin", origin, timeout=20)
    assert run.returncode == 2 and "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.describe()
    assert run.stderr.startswith("streamwidgets serve: ") and ("null" in run.stderr or "wildcard" in run.stderr)
    assert "embedded provider on" not in run.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ("ask", "--modle", "demo-fast", "hi"),
            "streamwidgets ask: unrecognized arguments: --modle (did you mean --model?)",
        ),
        (("demo", "--ofline"), "streamwidgets demo: unrecognized arguments: --ofline (did you mean --offline?)"),
        (("ask", "hi", "--temperature=0.2"), "--temperature (a request body field is passed as -p temperature=VALUE)"),
        (("ask", "hi", "--api-key", "sk-secret-123"), "--api-key (there is no option for the key"),
        (("ask", "--temprature", "0.5", "hi"), "--temprature (a request body field is passed as -p temperature=VALUE)"),
    ],
    ids=["model", "offline", "body-field", "key", "misspelt-body-field"],
)
def test_a_mistyped_option_names_the_closest_in_one_line(args, says):
    run = cli(*args)
    assert run.returncode == 2 and says in run.stderr, run.describe()
    assert run.stderr.count("\n") == 1 and "usage:" not in run.stderr, run.describe()
    assert "sk-secret-123" not in run.stderr  # what follows an unknown option is never quoted


def test_a_token_limit_below_one_is_refused_by_the_parser():
    run = cli("ask", "hi", "--max-tokens", "0")
    assert run.returncode == 2 and "1 or more" in run.stderr, run.describe()


# ------------------------------------------------------------------ leaving early


def test_ctrl_c_during_an_answer_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """Ctrl+C while an answer streams: what arrived stays on stdout, stderr says so in one line,
    and the exit status is the shell's for SIGINT — no traceback."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = as_from_a_terminal(
            [sys.executable, "-m", "streamwidgets", "ask", "Explain binary search", "--model", "demo-slow"],
            stdout=stdout,
            stderr=stderr,
            env=child_env(),
            cwd=REPO,
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            while out.stat().st_size < 40 and time.monotonic() < deadline:  # the answer is streaming
                time.sleep(0.05)
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    printed, said = out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")
    assert code == 130, said
    assert "binary" in printed.lower() and "[done" not in printed  # the start of the answer, not its end
    assert said.strip() == "streamwidgets ask: stopped by Ctrl+C", said


def test_a_reader_that_leaves_early_gets_no_error(tmp_path: Path) -> None:
    """`streamwidgets demo | head -2`: the pipe closes under the answer; nothing is printed about
    it, on either stream."""
    env = child_env()
    shell = f"{sys.executable} -m streamwidgets demo 2>{tmp_path / 'err.txt'} | head -2"
    completed = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, env=env, cwd=REPO, timeout=TIMEOUT)
    assert completed.returncode == 0 and completed.stdout.strip(), completed
    assert (tmp_path / "err.txt").read_text() == ""


def test_messages_name_the_clis_own_flags_not_python_keywords() -> None:
    run = cli("ask", "hi", "--base-url", "http://name-that-does-not-resolve.invalid/v1", "--model", "m")
    assert_no_traceback(run)
    said = run.stdout + run.stderr
    assert "`--offline`" in said and "streamwidgets replay FILE" in said, run.describe()
    assert "offline=True" not in said and "sw.replay" not in said


def test_a_misspelled_body_field_names_the_one_meant_and_a_key_never_rides_on_p() -> None:
    typo = cli("ask", "hi", "-p", "temprature=0.3")
    assert typo.returncode != 0 and "did you mean temperature=?" in typo.stderr
    assert_no_traceback(typo)
    keyed = cli("ask", "hi", "--provider", "openai", "-p", "api_key=sk-SENTINEL-123")
    assert keyed.returncode != 0 and "is not a body field" in keyed.stderr
    assert "sk-SENTINEL-123" not in keyed.stderr + keyed.stdout


@pytest.mark.parametrize("param", ["tools=5", "tools=[5]"])
def test_a_bad_p_value_is_one_plain_line(param: str) -> None:
    run = cli("ask", "hi", "-p", param)
    assert run.returncode == 2 and "tool" in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert_no_traceback(run)


@pytest.mark.local
def test_serve_local_runs_one_model_for_a_class_with_a_key_kept_in_a_file(tmp_path: Path) -> None:
    """`streamwidgets serve-local`: a fixed port, the key made once into a file only its owner
    reads (a gateway is configured once), students' answers at once, Ctrl+C stops it."""
    import stat

    port = free_port()
    key_file = tmp_path / "class.key"
    process = subprocess.Popen(
        [sys.executable, "-m", "streamwidgets", "serve-local", "--port", str(port), "--slots", "3",
         "--key-file", str(key_file), "--model", "smollm2-135m"],
        cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        base = base_url(port).removesuffix("/v1")  # every route under /local, /health too, wants the key
        deadline = time.monotonic() + 30
        while not key_file.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        key = key_file.read_text().strip()
        wait_for_http(f"{base}/health", 60, process, key=key)
        assert httpx.get(f"{base}/health").status_code == 401  # without the key: nothing, not even "ok"
        assert len(key) >= 16 and stat.S_IMODE(key_file.stat().st_mode) == 0o600
        body = {"model": "any", "messages": [{"role": "user", "content": "Name a color."}], "max_tokens": 8}
        assert httpx.post(f"{base}/v1/chat/completions", json=body, timeout=60).status_code == 401
        answer = httpx.post(
            f"{base}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
        out = process.stdout.read() if process.stdout else ""
        assert f"for 3 students on http://127.0.0.1:{port}/local/v1" in out and key not in out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
