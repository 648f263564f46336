"""A private folder of this user, and the files in it: the one place the local model's manager
writes or reads what must be the user's alone (the servers' state with their keys, their logs,
the start lock, the `.users` entries, the checksums `pull` records, `serve-local`'s key file).

The rules are the operating system's guarantees, never a check before an act:

- A folder is opened once with `O_NOFOLLOW | O_DIRECTORY` (a symbolic link is refused, not
  followed), then proven by `fstat` of what was opened: owned by this user and, after `fchmod`,
  mode 0700. Every file is then named relative to that open folder (`dir_fd`), so the folder
  cannot be swapped for another after it was proven.
- A file is written under a new name (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600) and moved into
  place (`os.replace`), so a link planted at either name is never written through.
- A file is read with `O_NOFOLLOW | O_NONBLOCK` (no link, no waiting on a FIFO) and proven by
  `fstat`: a regular file, this user's, readable by no one else.
- The lock is `flock`, polled with a deadline, and names the PID that holds it.

Where the system has no `dir_fd` or `O_NOFOLLOW` (Windows), the same calls go by path.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

__all__ = ["Folder", "NotPrivate", "LockTimeout", "private_folder", "read_own_file", "create_own_file", "state_folder"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_POSIX = os.name == "posix"
_FOLDER_ENV = "STREAMWIDGETS_LOCAL_STATE"
_MIB = 1 << 20


class NotPrivate(ValueError):
    """A folder or file that is not this user's alone; the message names it and the fix."""


class LockTimeout(TimeoutError):
    """The lock was held by another process past the deadline; the message names its PID."""


def state_folder() -> Path:
    """Where the local model's state lives: `STREAMWIDGETS_LOCAL_STATE`, else the user's cache
    folder (`~/.cache/streamwidgets/local`)."""
    base = os.environ.get(_FOLDER_ENV)
    if base:
        return Path(base)
    cache = (
        os.environ.get("XDG_CACHE_HOME")
        or (os.environ.get("LOCALAPPDATA") if os.name == "nt" else None)
        or str(Path.home() / ".cache")
    )
    return Path(cache) / "streamwidgets" / "local"


def _uid() -> Optional[int]:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _whose(st: os.stat_result) -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(st.st_uid).pw_name} (uid {st.st_uid})"
    except (ImportError, KeyError):
        return f"uid {st.st_uid}"


def _refuse_folder(path: Path, what: str) -> NotPrivate:
    return NotPrivate(
        f"{path} {what}, so the local model will not keep its keys there: remove it (it is made again, "
        f"yours alone), or point {_FOLDER_ENV} at a folder of yours"
    )


class Folder:
    """A folder proven this user's alone (mode 0700), held open; its files are named relative to it."""

    def __init__(self, path: Path, fd: Optional[int]) -> None:
        self.path = path
        self._fd = fd

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    # -- names relative to the open folder

    def _open(self, name: str, flags: int, mode: int = 0o600) -> int:
        if self._fd is None:
            return os.open(self.path / name, flags, mode)
        return os.open(name, flags, mode, dir_fd=self._fd)

    def unlink(self, name: str) -> None:
        """Remove `name` if it is there (a link is removed, never what it points to)."""
        with contextlib.suppress(FileNotFoundError):
            if self._fd is None:
                os.unlink(self.path / name)
            else:
                os.unlink(name, dir_fd=self._fd)

    def names(self) -> list[str]:
        return os.listdir(self._fd if self._fd is not None else self.path)

    def read(self, name: str, *, last: bool = False) -> Optional[bytes]:
        """The file's first MiB (`last`: its last), or None when it is missing or not this user's
        own regular file, readable by no one else (such a file is never trusted: its writer
        replaces it)."""
        try:
            fd = self._open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if _own_file_problem(st) is not None:
                return None
            if last:
                f.seek(max(0, st.st_size - _MIB))
            return f.read(_MIB)

    def write(self, name: str, data: bytes) -> None:
        """Replace `name` with `data` in one step: written under a new name first (`O_EXCL`, mode 0600)."""
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = self._open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            if self._fd is None:
                os.replace(self.path / tmp, self.path / name)
            else:
                os.replace(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except BaseException:
            self.unlink(tmp)
            raise

    def create(self, name: str) -> int:
        """A new, empty file of this user's (mode 0600) for writing, in place of whatever had
        the name (a log): the descriptor."""
        self.unlink(name)
        return self._open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC)

    def touch(self, name: str) -> None:
        """Make sure `name` is an empty file of this user's (a `.users` entry)."""
        try:
            fd = self._open(name, os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
        except OSError:  # a link or a FIFO in its place: replaced
            self.unlink(name)
            fd = self._open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC)
        os.close(fd)

    def folder(self, name: str) -> Folder:
        """A folder inside this one, made if missing, proven as this one was."""
        if self._fd is None:
            return private_folder(self.path / name)
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=self._fd)
        try:
            fd = os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=self._fd)
        except OSError as exc:
            raise _refuse_folder(self.path / name, _why_not_folder(exc)) from None
        return _proven(self.path / name, fd)

    @contextlib.contextmanager
    def lock(self, name: str, timeout: float) -> Iterator[None]:
        """An exclusive lock between the user's processes, released when its holder ends. Waits at
        most `timeout` seconds, then raises `LockTimeout` naming the PID that holds it."""
        try:
            fd = self._open(name, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
        except OSError:  # a link or a FIFO in its place
            self.unlink(name)
            fd = self._open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC)
        try:
            problem = _own_file_problem(os.fstat(fd))
            if problem is not None:
                raise NotPrivate(f"{self.path / name} {problem}: remove it")
            _flock(fd, time.monotonic() + max(0.0, timeout), self.path / name)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # who holds it, for whoever waits
            yield
        finally:
            os.close(fd)  # closing releases the lock


def _flock(fd: int, deadline: float, path: Path) -> None:
    if sys.platform == "win32":  # pragma: no cover
        import msvcrt

        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return
            except OSError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"another process holds {path}") from None
                time.sleep(0.05)
    import fcntl

    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                who = f"process {holder}" if holder.isdigit() else "another process"
                raise LockTimeout(
                    f"{who} holds the local model's start lock ({path}) and did not let go in time "
                    f"(a kernel paused in a debugger, or a start that hangs): end it, or wait and try again"
                ) from None
            time.sleep(0.05)


def _why_not_folder(exc: OSError) -> str:
    import errno

    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return "is a symbolic link or not a folder"
    return f"cannot be opened ({exc.strerror})"


def _proven(path: Path, fd: int) -> Folder:
    """The folder open as `fd`, once proven this user's alone (else closed, and refused)."""
    try:
        st = os.fstat(fd)
        uid = _uid()
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse_folder(path, "is not a folder")
        if uid is not None and st.st_uid != uid:
            raise _refuse_folder(path, f"belongs to {_whose(st)}, not to you")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
            if stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:
                raise _refuse_folder(path, "cannot be made mode 0700")
    except BaseException:
        os.close(fd)
        raise
    return Folder(path, fd)


def private_folder(path: Path) -> Folder:
    """`path` as a folder of this user's alone, made (mode 0700) if missing; its parents may be
    anything (a home folder on another disk is often a link). Raises `NotPrivate` in one line
    naming the folder and the fix when it is a link, another user's, or not a folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if not _POSIX:  # pragma: no cover - no O_NOFOLLOW, no dir_fd, no owner by uid
        if path.is_symlink() or not path.is_dir():
            raise _refuse_folder(path, "is a link or not a folder")
        return Folder(path, None)
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        raise _refuse_folder(path, _why_not_folder(exc)) from None
    return _proven(path, fd)


def _own_file_problem(st: os.stat_result) -> Optional[str]:
    """Why a file opened without following links is not this user's alone, or None."""
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    uid = _uid()
    if uid is not None and st.st_uid != uid:
        return f"belongs to {_whose(st)}, not to you"
    if _POSIX and stat.S_IMODE(st.st_mode) & 0o077:
        return f"can be read by others (mode {stat.S_IMODE(st.st_mode):04o}; chmod 600 it)"
    return None


def read_own_file(path: Path, what: str) -> bytes:
    """A file that must be this user's alone wherever it lies (`serve-local`'s key file, in a
    folder that may be shared): not a link, a regular file, this user's, mode 0600 or stricter.
    Raises `NotPrivate` naming the file, `what` it is and the fix."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        import errno

        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise NotPrivate(f"{path} ({what}) is a symbolic link: use the file itself, yours alone") from None
        raise
    with os.fdopen(fd, "rb") as f:
        problem = _own_file_problem(os.fstat(fd))
        if problem is not None:
            raise NotPrivate(f"{path} ({what}) {problem}")
        return f.read(1 << 16)


def create_own_file(path: Path, data: bytes) -> bool:
    """Write `data` into a new file at `path`, mode 0600, never through a link or over a file
    that exists: True when made, False when something already has the name."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return True
