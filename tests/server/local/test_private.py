"""The local model's manager on a shared machine: its private folder and the files in it, the start
lock, the state file's validation, the `.users` watcher, `serve-local`'s key file, and which
processes it trusts (and signals).

Hostile files and folders are made in a folder of the test's own under `test-artifacts/`; another
user is simulated by `chown` to `nobody` (the tests run as root, who could read anything: the
checks are on what `fstat` says, not on what can be opened); a stranger's server is a plain
Python HTTP server on a loopback port that answers 200 to everything and logs what it was sent.
No model runs here, except where a test is marked `local`.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamwidgets.server.local import LocalModelError, Weights, class_key, fits_in_memory
from streamwidgets.server.local._host import live_users, seconds
from streamwidgets.server.local._pids import listens_on, pid_alive, start_time
from streamwidgets.server.local._private import LockTimeout, NotPrivate, private_folder, read_own_file
from streamwidgets.server.local._shared import _env_seconds, _model, _terminate, local_model
from streamwidgets.server.local._state import ServerState, proven

ROOT = Path(__file__).resolve().parents[3]
NOBODY = pwd.getpwnam("nobody")


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text, text
    return text


# ----------------------------------------------------------------------------- the private folder (items 5, 7)


def test_a_folder_is_made_mode_0700_and_a_loose_one_is_tightened(scratch: Path) -> None:
    with private_folder(scratch / "a" / "state") as folder:
        assert stat.S_IMODE((scratch / "a" / "state").stat().st_mode) == 0o700
        assert folder.path == scratch / "a" / "state"
    loose = scratch / "loose"
    loose.mkdir(mode=0o777)
    os.chmod(loose, 0o777)
    with private_folder(loose):
        assert stat.S_IMODE(loose.stat().st_mode) == 0o700


def test_a_symlinked_folder_is_refused_in_one_line_and_left_alone(scratch: Path) -> None:
    target = scratch / "someone-elses"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    link = scratch / "state"
    link.symlink_to(target)
    with pytest.raises(NotPrivate) as refused:
        private_folder(link)
    message = one_line(refused.value)
    assert str(link) in message and "symbolic link" in message and "STREAMWIDGETS_LOCAL_STATE" in message
    assert stat.S_IMODE(target.stat().st_mode) == 0o755  # not chmodded through the link


def test_a_folder_of_another_user_is_refused(scratch: Path) -> None:
    theirs = scratch / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
    with pytest.raises(NotPrivate) as refused:
        private_folder(theirs)
    message = one_line(refused.value)
    assert f"belongs to nobody (uid {NOBODY.pw_uid}), not to you" in message and str(theirs) in message


def test_a_file_in_place_of_the_folder_is_refused(scratch: Path) -> None:
    (scratch / "state").write_text("x")
    with pytest.raises(NotPrivate, match="not a folder"):
        private_folder(scratch / "state")


def test_files_are_never_written_through_a_planted_link(scratch: Path) -> None:
    victim = scratch / "essay.txt"
    victim.write_text("my essay")
    with private_folder(scratch / "state") as folder:
        for name in ("a.json", f".a.json.{os.getpid()}.tmp", "a.log"):  # the name, the old temporary name, a log
            (scratch / "state" / name).symlink_to(victim)
        folder.write("a.json", b'{"key": "secret"}')
        with os.fdopen(folder.create("a.log"), "wb") as log:
            log.write(b"llama.cpp's log")
    assert victim.read_text() == "my essay"
    for name in ("a.json", "a.log"):
        path = scratch / "state" / name
        assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (scratch / "state" / "a.json").read_bytes() == b'{"key": "secret"}'
    assert not list((scratch / "state").glob(".a.json.*.tmp*"))[1:]  # only the planted link is left


def test_a_file_is_trusted_only_when_it_is_the_user_s_alone(scratch: Path) -> None:
    elsewhere = scratch / "planted.json"
    elsewhere.write_text("{}")
    os.chmod(elsewhere, 0o600)
    with private_folder(scratch / "state") as folder:
        folder.write("mine.json", b"{}")
        assert folder.read("mine.json") == b"{}"
        (scratch / "state" / "link.json").symlink_to(elsewhere)
        assert folder.read("link.json") is None
        folder.write("theirs.json", b"{}")
        os.chown(scratch / "state" / "theirs.json", NOBODY.pw_uid, NOBODY.pw_gid)
        assert folder.read("theirs.json") is None
        folder.write("loose.json", b"{}")
        os.chmod(scratch / "state" / "loose.json", 0o644)
        assert folder.read("loose.json") is None
        os.mkfifo(scratch / "state" / "fifo.json", 0o600)
        assert folder.read("fifo.json") is None  # refused at once, never waited on
        assert folder.read("missing.json") is None


# ----------------------------------------------------------------------------- the start lock (item 2, low)


HOLDER = """
    import sys, time
    from pathlib import Path
    from streamwidgets.server.local._private import private_folder
    with private_folder(Path(sys.argv[1])) as folder, folder.lock(sys.argv[2], 5):
        print("held", flush=True)
        time.sleep(60)
"""


@pytest.fixture
def held_lock(scratch: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """Another process that holds `x.lock` in `scratch/state` (a kernel paused in a debugger)."""
    state = scratch / "state"
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(HOLDER), str(state), "x.lock"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        yield state, process
    finally:
        process.kill()
        process.wait()


def test_the_lock_waits_no_longer_than_its_deadline_and_names_its_holder(
    held_lock: tuple[Path, subprocess.Popen[str]],
) -> None:
    state, holder = held_lock
    started = time.monotonic()
    with private_folder(state) as folder, pytest.raises(LockTimeout) as waited, folder.lock("x.lock", 0.5):
        pass
    assert 0.4 < time.monotonic() - started < 3
    assert f"process {holder.pid} holds the local model's start lock" in one_line(waited.value)
    holder.kill()
    holder.wait()
    with private_folder(state) as folder, folder.lock("x.lock", 2):  # released with its holder
        assert (state / "x.lock").read_text().strip() == str(os.getpid())


def test_the_lock_does_not_follow_a_link_nor_create_its_target(scratch: Path) -> None:
    target = scratch / "created-by-the-lock"
    with private_folder(scratch / "state") as folder:
        (scratch / "state" / "x.lock").symlink_to(target)
        with folder.lock("x.lock", 1):
            pass
    assert not target.exists()
    assert not (scratch / "state" / "x.lock").is_symlink()


def small_weights(scratch: Path) -> Weights:
    """A model file's description; no test that uses it gets as far as running it."""
    path = scratch / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return Weights(path=path, title="t", source="a test", size=64, class_quality=True)


@pytest.mark.local
def test_local_model_keeps_its_timeout_while_another_process_holds_the_lock(
    held_lock: tuple[Path, subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch, scratch: Path
) -> None:
    state, holder = held_lock
    monkeypatch.setenv("STREAMWIDGETS_LOCAL_STATE", str(state))
    weights = small_weights(scratch)
    from streamwidgets.server.local._shared import _digest

    os.rename(state / "x.lock", state / f"{_digest(weights)}.lock")  # the lock the model's start takes
    errors: list[str] = []

    def ask() -> None:
        try:
            local_model(weights, timeout=1)
        except LocalModelError as exc:
            errors.append(str(exc))

    started = time.monotonic()
    threads = [threading.Thread(target=ask) for _ in range(3)]  # a kernel's threads that ask at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert time.monotonic() - started < 5, "a thread waited past its timeout"
    assert len(errors) == 3 and all("\n" not in e for e in errors), errors
    assert any(f"process {holder.pid} holds the local model's start lock" in e for e in errors), errors


# ----------------------------------------------------------------------------- the state file (item 9)


GOOD = {
    "pid": 1234, "start": 99, "uid": 0, "port": 8080, "key": "k" * 10 + "ey-of-sixteen",
    "weights": "/m.gguf", "alias": "m", "threads": 2, "slots": 4, "ctx": 4096, "supports_tools": False,
}  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [
        {"pid": 2**70},
        {"port": 2**64},
        {"port": 0},
        {"pid": -1},
        {"pid": "1234"},
        {"pid": True},
        {"start": 1.5},
        {"key": "short"},
        {"key": "a key with spaces in"},
        {"key": None},
        {"supports_tools": 1},
        {"slots": 10**9},
        {"load_seconds": float("nan")},
    ],
    ids=repr,
)
def test_a_state_that_does_not_validate_is_stale(change: dict[str, object]) -> None:
    assert ServerState.parse(json.dumps(GOOD).encode()) is not None
    assert ServerState.parse(json.dumps({**GOOD, **change}).encode()) is None


@pytest.mark.parametrize("data", [b"", b"{not json", b"[]", b"null", json.dumps({"pid": 1}).encode()])
def test_a_state_that_is_not_one_is_stale(data: bytes) -> None:
    assert ServerState.parse(data) is None


# ----------------------------------------------------------------------------- the .users watcher (item 10)


def test_the_users_watcher_never_follows_a_symlinked_folder(scratch: Path) -> None:
    victims = scratch / "someone-elses"
    victims.mkdir()
    for name in ("1", "2", str(2**22 - 7)):
        (victims / name).write_text("data")
    with private_folder(scratch / "state") as folder:
        (scratch / "state" / "a.json.users").symlink_to(victims)
        with pytest.raises(NotPrivate, match="symbolic link"):
            folder.folder("a.json.users")
    assert sorted(p.name for p in victims.iterdir()) == sorted(["1", "2", str(2**22 - 7)])


def test_the_users_watcher_counts_live_kernels_and_removes_dead_ones_only(scratch: Path) -> None:
    with private_folder(scratch / "state") as folder, folder.folder("a.json.users") as users:
        users.touch(str(os.getpid()))
        users.touch(str(2**22 - 7))  # a kernel that died
        users.touch("notes")
        (scratch / "state" / "a.json.users" / str(2**22 - 9)).mkdir()  # a folder, not an entry: left
        assert live_users(users) == 1
        assert sorted(users.names()) == sorted([str(os.getpid()), "notes", str(2**22 - 9)])


# ----------------------------------------------------------------------------- serve-local's key file (item 8)


def test_a_missing_key_file_is_made_the_user_s_alone(scratch: Path) -> None:
    key = class_key(scratch / "class.key")
    assert len(key) >= 16 and stat.S_IMODE((scratch / "class.key").stat().st_mode) == 0o600
    assert class_key(scratch / "class.key") == key


def key_file(scratch: Path, how: str) -> Path:
    path = scratch / "class.key"
    good = "Zq8-kW3nR5tY7uI9oP1aS2dF4gH6jK0l\n"
    if how == "world-readable":
        path.write_text(good)
        os.chmod(path, 0o644)
    elif how == "group-readable":
        path.write_text(good)
        os.chmod(path, 0o640)
    elif how == "a link to another's":
        theirs = scratch / "theirs.key"
        theirs.write_text(good)
        os.chmod(theirs, 0o600)
        os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
        path.symlink_to(theirs)
    elif how == "another user's":
        path.write_text(good)
        os.chmod(path, 0o600)
        os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
    elif how == "a dangling link":
        path.symlink_to(scratch / "made-through-the-link")
    elif how == "a FIFO":
        os.mkfifo(path, 0o600)
    else:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, {"control": "abcdefgh\x1b[2Jijklmnop", "repeated": "a" * 40, "short": "abc"}[how].encode())
        os.close(fd)
    return path


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("world-readable", "can be read by others (mode 0644; chmod 600 it)"),
        ("group-readable", "can be read by others (mode 0640; chmod 600 it)"),
        ("a link to another's", "is a symbolic link"),
        ("another user's", "belongs to nobody"),
        ("a dangling link", "is a symbolic link"),
        ("a FIFO", "is not a regular file"),
        ("control", "a control or a non-ASCII character"),
        ("repeated", "one character repeated"),
        ("short", "no key of at least 16 characters"),
    ],
)
def test_a_key_file_that_is_not_the_user_s_alone_or_no_good_key_is_refused(scratch: Path, how: str, said: str) -> None:
    path = key_file(scratch, how)
    with pytest.raises(NotPrivate) as refused:
        class_key(path)
    message = one_line(refused.value)
    assert said in message and str(path) in message, message
    assert not (scratch / "made-through-the-link").exists()


def test_reading_a_file_of_the_user_s_alone_refuses_a_link(scratch: Path) -> None:
    (scratch / "real").write_text("x")
    (scratch / "link").symlink_to(scratch / "real")
    with pytest.raises(NotPrivate, match="symbolic link"):
        read_own_file(scratch / "link", "a file")


# ----------------------------------------------------------------------------- low: idle, slots


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "-5", "soon"])
def test_no_number_turns_the_idle_exit_off_unseen(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMWIDGETS_LOCAL_IDLE", text)
    assert _env_seconds("STREAMWIDGETS_LOCAL_IDLE", 900.0) == 900.0
    import argparse

    with pytest.raises(argparse.ArgumentTypeError):
        seconds(text)
    assert seconds("0") == 0.0 and seconds("2.5") == 2.5  # 0: never, for serve-local, said on purpose


def test_slots_the_memory_cannot_hold_are_refused_in_one_line(scratch: Path) -> None:
    weights = small_weights(scratch)
    fits_in_memory(weights, 4)
    with pytest.raises(ValueError) as refused:
        fits_in_memory(weights, 100_000)
    message = one_line(refused.value)
    assert message.startswith("100,000 slots need at least ") and "pass --slots " in message, message


# ----------------------------------------------------------------------------- which servers are ours (items 3, 4)


STRANGER = """
    import sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    log = open(sys.argv[1], "a", buffering=1)
    class Any(BaseHTTPRequestHandler):
        def do_GET(self):
            log.write(self.path + " " + str(self.headers.get("Authorization")) + "\\n")
            self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
        do_POST = do_GET
        def log_message(self, *a): pass
    server = HTTPServer(("127.0.0.1", 0), Any)
    print(server.server_address[1], flush=True)
    server.serve_forever()
"""


def stranger(scratch: Path, *, as_nobody: bool) -> tuple[subprocess.Popen[str], int, Path]:
    """A plain HTTP server that answers 200 to everything, and the port it listens on."""
    log = scratch / f"stranger-{as_nobody}.log"
    log.touch()
    os.chmod(log, 0o666)
    os.chmod(scratch, 0o755)

    def drop() -> None:
        os.setgid(NOBODY.pw_gid)
        os.setuid(NOBODY.pw_uid)

    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable  # one another user may run
    process = subprocess.Popen(
        [python, "-c", textwrap.dedent(STRANGER), str(log)],
        stdout=subprocess.PIPE, text=True, preexec_fn=drop if as_nobody else None, cwd="/",
    )  # fmt: skip
    assert process.stdout is not None
    return process, int(process.stdout.readline()), log


def claimed(pid: int, port: int, *, start: int | None = None) -> ServerState:
    """A state file's claim: PID, its start time, this user, a port, a key."""
    return ServerState(
        pid=pid, start=start_time(pid) if start is None else start, uid=os.geteuid(), port=port,
        key="the-key-of-a-server-that-crashed", weights="/m.gguf", alias="m", threads=1, slots=1, ctx=512,
        supports_tools=False,
    )  # fmt: skip


def test_only_a_server_the_system_proves_ours_is_trusted_and_signalled(scratch: Path) -> None:
    ours, ours_port, ours_log = stranger(scratch, as_nobody=False)
    theirs, theirs_port, theirs_log = stranger(scratch, as_nobody=True)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.2)
        assert listens_on(ours.pid, ours_port) and not listens_on(sleeper.pid, ours_port)
        assert proven(claimed(ours.pid, ours_port))  # the control: this one is ours, by every rule
        refused = {
            "another user's process": claimed(theirs.pid, theirs_port),
            "a reused PID (another start time)": claimed(ours.pid, ours_port, start=(start_time(ours.pid) or 0) + 1),
            "a process of ours that does not hold the port": claimed(sleeper.pid, ours_port),
            "a dead PID": claimed(2**22 - 3, ours_port, start=1),
        }
        weights = Weights(path=Path("/m.gguf"), title="m", source="a test", size=1, class_quality=True)
        for why, state in refused.items():
            assert not proven(state), why
            _model(state, weights, scratch / "x.json", None).stop(timeout=0.5)  # item 4: never signalled
            _terminate(state, 0.5)
        assert ours.poll() is None and theirs.poll() is None and sleeper.poll() is None
        assert ours_log.read_text() == theirs_log.read_text() == ""  # and no key was sent to either
    finally:
        for process in (ours, theirs, sleeper):
            process.kill()
            process.wait()


def test_a_proven_server_is_stopped(scratch: Path) -> None:
    """The control of the test above: the same stop ends a server that is ours."""
    ours, port, _ = stranger(scratch, as_nobody=False)
    try:
        time.sleep(0.2)
        _terminate(claimed(ours.pid, port), 5)
        assert ours.wait(5) == -signal.SIGTERM
    finally:
        if ours.poll() is None:
            ours.kill()
            ours.wait()


def test_pid_alive_takes_any_number() -> None:
    assert not pid_alive(2**70) and not pid_alive(-1) and pid_alive(os.getpid())


def test_a_log_is_read_from_its_end(scratch: Path) -> None:
    with private_folder(scratch / "state") as folder:
        with os.fdopen(folder.create("a.log"), "wb") as log:
            log.write(b"x" * (3 << 20) + b"\nthe last words\n")
        assert (folder.read("a.log", last=True) or b"").endswith(b"the last words\n")
        assert len(folder.read("a.log") or b"") == 1 << 20
