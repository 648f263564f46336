"""The local model's process: llama.cpp's own server (xllamacpp), shared by all of a user's kernels.

    python -m streamwidgets.server.local._host --weights FILE --state FILE [--threads N] [--slots N] ...

It loads the model, starts llama.cpp's HTTP server on 127.0.0.1 with a port the system picks and a
key drawn here (another user of a shared host cannot use it), writes both to the state file (mode
0600, replaced atomically), and then watches itself: it leaves after `--idle` seconds without a
generation, or after `--linger` seconds once no kernel that uses it is alive (`_shared.py` leaves
a file named for its PID in the state's `.users` folder). It never outlives a long idle hour.

Nothing of llama.cpp runs in a kernel: a crash in native code ends this process only, and the
next request starts a new one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from ._loopback import loopback_get
from ._pids import pid_alive

__all__ = ["main", "SAMPLING_DEFAULTS"]

#: Class-sized defaults, each overridable in a request's body (docs/local-model.md): a cap so
#: that every answer ends, DRY to stop a small model's loops ("a lone soul, a lone soul"), a
#: repeat penalty against lists that run on item after item, and a low temperature.
SAMPLING_DEFAULTS = {
    "n_predict": 1024,  # twice the longest answer to a class question (479 of 88, seeds 1-8)
    "temp": 0.2,
    "dry_multiplier": 0.8,
    "dry_penalty_last_n": 4096,  # llama.cpp's 64 tokens let a 135M model repeat a whole list
    "penalty_repeat": 1.1,  # with DRY: no list that runs on to the cap (44 answers, seeds 2-5)
}
_WATCH_EVERY = 2.0
_COUNTER = re.compile(r"^llamacpp:(n_decode_total|requests_processing|requests_deferred)\s+([0-9.e+]+)", re.M)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import xllamacpp

    key = _key(args.key_file)
    params = xllamacpp.CommonParams()
    params.model.path = args.weights
    params.model_alias = {args.alias}  # a set of names
    params.hostnames = ["127.0.0.1"]
    params.port = args.port  # 0: the system picks a free one
    params.api_keys = [key]
    params.ui = False
    params.endpoint_metrics = True
    params.endpoint_slots = True
    params.n_parallel = args.slots
    params.cache_ram_mib = 256  # llama.cpp keeps 8 GiB of old prompts by default: ~2.5 MB an answer, growing
    params.n_ctx = args.ctx * args.slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.n_predict = SAMPLING_DEFAULTS["n_predict"]
    for name in ("temp", "dry_multiplier", "dry_penalty_last_n", "penalty_repeat"):
        setattr(params.sampling, name, SAMPLING_DEFAULTS[name])
    params.verbosity = 1
    started = time.monotonic()
    server = xllamacpp.Server(params)
    address = str(server.listening_address)
    port = int(address.rsplit(":", 1)[1])
    state = {
        "pid": os.getpid(),
        "port": port,
        "key": key,
        "weights": args.weights,
        "alias": args.alias,
        "threads": args.threads,
        "slots": args.slots,
        "ctx": args.ctx,
        "xllamacpp": getattr(xllamacpp, "__version__", "?"),
        "load_seconds": round(time.monotonic() - started, 3),
        "supports_tools": _supports_tools(port, key),
    }
    state_path = Path(args.state)
    _write_state(state_path, state)
    try:
        _watch(server, Path(str(state_path) + ".users"), idle=args.idle, linger=args.linger)
    finally:
        _remove_state(state_path, os.getpid())
    sys.stdout.flush()
    os._exit(0)  # llama.cpp's server threads do not join; the process leaves with them


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="streamwidgets.server.local._host")
    p.add_argument("--weights", required=True)
    p.add_argument("--alias", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--slots", type=int, default=4)
    p.add_argument("--ctx", type=int, default=4096, help="tokens of context per slot")
    p.add_argument("--idle", type=float, default=900.0, help="seconds without a generation before leaving (0: never)")
    p.add_argument("--linger", type=float, default=60.0, help="seconds to stay once no kernel uses it (0: never)")
    p.add_argument("--port", type=int, default=0, help="0: a free port the system picks")
    p.add_argument("--key-file", help="read the key from this file (made, mode 0600, with a new key if missing)")
    return p


def _key(path: str | None) -> str:
    """A new key for each start, or the one kept in `path` (a class server behind a gateway keeps
    its key across starts, so that the gateway's configuration is written once)."""
    if path is None:
        return secrets.token_urlsafe(32)
    file = Path(path)
    if not file.exists():
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    key = file.read_text(encoding="utf-8").strip()
    if len(key) < 16:
        raise SystemExit(f"{path} holds no key of at least 16 characters")
    return key


def _supports_tools(port: int, key: str) -> bool:
    """Whether the model's chat template takes tools (llama.cpp's /props says so)."""
    answer = loopback_get(port, key, "/props", timeout=10)
    try:
        props: dict[str, Any] = json.loads(answer[1]) if answer is not None else {}
    except ValueError:
        return False
    return bool(props.get("chat_template_caps", {}).get("supports_tools"))


def _write_state(path: Path, state: dict[str, Any]) -> None:
    """The state file, readable by its owner only (it holds the key), replaced in one step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(state, f)
    os.replace(tmp, path)


def _remove_state(path: Path, pid: int) -> None:
    """Remove the state file if it still names this process (a newer server may have replaced it)."""
    with contextlib.suppress(OSError, ValueError):
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == pid:
            path.unlink()


def _watch(server: Any, users: Path, *, idle: float, linger: float) -> None:
    """Return when the server should stop: `idle` seconds with no generation, or `linger`
    seconds with no live kernel among its users."""
    last_count = -1.0
    last_work = alone_since = time.monotonic()
    while True:
        time.sleep(_WATCH_EVERY)
        now = time.monotonic()
        counters = dict(_COUNTER.findall(server.handle_metrics()))
        count = float(counters.get("n_decode_total", 0))
        busy = float(counters.get("requests_processing", 0)) + float(counters.get("requests_deferred", 0))
        if count != last_count or busy:
            last_count, last_work = count, now
        if _live_users(users):
            alone_since = now
        if idle and now - last_work >= idle:
            return
        if linger and now - alone_since >= linger and now - last_work >= linger:
            return


def _live_users(folder: Path) -> int:
    """How many kernels that use this server are alive; the files of dead ones are removed."""
    alive = 0
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            try:
                pid = int(entry.name)
            except ValueError:
                continue
            if pid_alive(pid):
                alive += 1
            else:
                with contextlib.suppress(OSError):
                    entry.unlink()
    return alive


if __name__ == "__main__":
    sys.exit(main())
