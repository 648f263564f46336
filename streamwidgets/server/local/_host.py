"""The local model's process: llama.cpp's own server (xllamacpp), shared by all of a user's kernels.

    python -m streamwidgets.server.local._host --weights FILE --state FILE [--threads N] [--slots N] ...

It loads the model, starts llama.cpp's HTTP server on 127.0.0.1 with a port the system picks and a
key drawn here (another user of a shared host cannot use it), writes both to the state file in the
user's private folder (`_private.py`: mode 0600, replaced atomically, never through a link), with
its PID, start time and uid (`_state.py`), and then watches itself: it leaves after `--idle`
seconds without a generation, or after `--linger` seconds once no kernel that uses it is alive
(`_shared.py` leaves a file named for its PID in the state's `.users` folder). It never outlives a
long idle hour. SIGTERM, SIGHUP and SIGINT end it cleanly (its state file removed); with
`--with-parent` it also ends when the process that started it ends, however that ends (its
standard input, a pipe from that process, reaches its end: `serve-local`).

Nothing of llama.cpp runs in a kernel: a crash in native code ends this process only, and the
next request starts a new one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import secrets
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ._loopback import API_PREFIX, loopback_get
from ._pids import pid_alive
from ._private import Folder, NotPrivate, create_own_file, private_folder, read_own_file
from ._state import ServerState, this_process

__all__ = ["main", "SAMPLING_DEFAULTS", "class_key", "seconds"]

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


class _Stopped(Exception):
    """A signal asked this process to end."""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _stop_on_signals()
    if args.with_parent:
        threading.Thread(target=_exit_with_parent, name="streamwidgets-parent", daemon=True).start()
    state_path = Path(args.state)
    try:
        folder = private_folder(state_path.parent)
        users = folder.folder(state_path.name + ".users")
        key = secrets.token_urlsafe(32) if args.key_file is None else class_key(Path(args.key_file))
    except (NotPrivate, OSError) as exc:
        print(f"streamwidgets: {exc}", file=sys.stderr, flush=True)
        return 2
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = args.weights
        params.model_alias = {args.alias}  # a set of names
        params.hostnames = ["127.0.0.1"]
        params.port = args.port  # 0: the system picks a free one
        params.api_keys = [key]
        params.api_prefix = API_PREFIX  # no route without the key, /health included (_loopback.py)
        params.ui = False
        # CORS: llama.cpp reflects any Origin, with credentials, unless told otherwise; an empty
        # allowed origin matches no page (browsers then refuse to hand a page the answer).
        params.cors_origins = ""
        params.cors_origins_explicit = True
        params.cors_credentials = False
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
        state = this_process(
            port,
            key=key,
            weights=args.weights,
            alias=args.alias,
            threads=args.threads,
            slots=args.slots,
            ctx=args.ctx,
            load_seconds=round(time.monotonic() - started, 3),
            supports_tools=_supports_tools(port, key),
        )
        folder.write(state_path.name, state.to_json())
        _watch(server, users, idle=args.idle, linger=args.linger)
    except _Stopped:
        pass
    finally:
        _remove_state(folder, state_path.name, os.getpid())
    sys.stdout.flush()
    os._exit(0)  # llama.cpp's server threads do not join; the process leaves with them


def _stop_on_signals() -> None:
    def stop(signum: int, frame: Any) -> None:
        raise _Stopped(signum)

    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)


def _exit_with_parent() -> None:
    """Wait for standard input, the parent's pipe, to end (the parent ended, by any signal), then
    stop as a SIGTERM stops."""
    while sys.stdin.buffer.read(4096):
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def seconds(text: str) -> float:
    """A number of seconds: finite, 0 or more (`nan` or `inf` would turn an exit off unseen)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds, 0 or more")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="streamwidgets.server.local._host")
    p.add_argument("--weights", required=True)
    p.add_argument("--alias", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--slots", type=int, default=4)
    p.add_argument("--ctx", type=int, default=4096, help="tokens of context per slot")
    p.add_argument("--idle", type=seconds, default=900.0, help="seconds without a generation before leaving (0: never)")
    p.add_argument("--linger", type=seconds, default=60.0, help="seconds to stay once no kernel uses it (0: never)")
    p.add_argument("--port", type=int, default=0, help="0: a free port the system picks")
    p.add_argument("--key-file", help="read the key from this file (made, mode 0600, with a new key if missing)")
    p.add_argument("--with-parent", action="store_true", help="end when standard input (the parent's pipe) ends")
    return p


def class_key(path: Path) -> str:
    """The key kept in `path` (a class server behind a gateway keeps its key across starts, so that
    the gateway's configuration is written once), made with a new key (mode 0600) if missing.
    Raises `NotPrivate` when the file is a link, another user's, readable by others, or holds no
    good key (under 16 characters, a control character or a space, one character repeated)."""
    create_own_file(path, (secrets.token_urlsafe(32) + "\n").encode())
    data = read_own_file(path, "the class key")
    key = data.decode("utf-8", "replace").strip()
    if len(key) < 16:
        raise NotPrivate(f"{path} holds no key of at least 16 characters")
    if any(not 0x21 <= ord(c) <= 0x7E for c in key):
        raise NotPrivate(
            f"{path} holds a key with a space, a control or a non-ASCII character: keep one line of printable characters"
        )
    if len(set(key)) == 1:
        raise NotPrivate(f"{path} holds a key of one character repeated: anyone could guess it")
    return key


def _supports_tools(port: int, key: str) -> bool:
    """Whether the model's chat template takes tools (llama.cpp's /props says so)."""
    answer = loopback_get(port, key, "/props", timeout=10)
    try:
        props: dict[str, Any] = json.loads(answer[1]) if answer is not None else {}
    except ValueError:
        return False
    return bool(props.get("chat_template_caps", {}).get("supports_tools"))


def _remove_state(folder: Folder, name: str, pid: int) -> None:
    """Remove the state file if it still names this process (a newer server may have replaced it)."""
    state = ServerState.parse(folder.read(name))
    if state is not None and state.pid == pid:
        folder.unlink(name)


def _watch(server: Any, users: Folder, *, idle: float, linger: float) -> None:
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
        if live_users(users):
            alone_since = now
        if idle and now - last_work >= idle:
            return
        if linger and now - alone_since >= linger and now - last_work >= linger:
            return


def live_users(folder: Folder) -> int:
    """How many kernels that use this server are alive; the entries of dead ones are removed
    (`folder` was opened without following links: nothing behind a planted link is touched)."""
    alive = 0
    try:
        names = folder.names()
    except OSError:
        return 0
    for name in names:
        if not (name.isascii() and name.isdigit() and len(name) <= 10):
            continue
        if pid_alive(int(name)):
            alive += 1
        else:
            with contextlib.suppress(OSError):  # a folder of that name stays
                folder.unlink(name)
    return alive


if __name__ == "__main__":
    sys.exit(main())
