"""What the system says about a process: whether it lives, and (Linux, through /proc) whose it
is, when it started and which listening sockets it holds (no third-party package in the kernel)."""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["pid_alive", "start_time", "owner", "listens_on", "PROC"]

#: Whether this system describes its processes in /proc (Linux); elsewhere only `pid_alive` answers.
PROC = os.path.isdir("/proc/self/fd")


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID runs (a signal 0 asks without sending anything)."""
    if not 0 < pid < 2**31:
        return False
    if os.name == "nt":  # pragma: no cover - no signal 0 on Windows
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # type: ignore[attr-defined]
        if not handle:
            return False
        ctypes.windll.kernel32.CloseHandle(handle)  # type: ignore[attr-defined]
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_time(pid: int) -> Optional[int]:
    """When the process started, in clock ticks since boot (/proc/PID/stat, field 22): with the
    PID, it names one process, never a later one that reused the PID. None where unknown."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            fields = f.read().rsplit(b") ", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def owner(pid: int) -> Optional[int]:
    """The uid the process runs as (the owner of /proc/PID), or None."""
    try:
        return os.stat(f"/proc/{int(pid)}").st_uid
    except (OSError, ValueError):
        return None


def listens_on(pid: int, port: int) -> bool:
    """Whether the process holds the socket that listens on 127.0.0.1:`port` (the socket's inode in
    /proc/net/tcp among the process's open files)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if inodes:
            break  # found among IPv4's (each table costs milliseconds on a busy host)
        try:
            with open(table, encoding="ascii") as f:
                next(f, None)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(cols[9])
        except (OSError, ValueError):
            continue
    if not inodes:
        return False
    wanted = {f"socket:[{inode}]" for inode in inodes}
    folder = f"/proc/{int(pid)}/fd"
    try:
        for name in os.listdir(folder):
            try:
                if os.readlink(f"{folder}/{name}") in wanted:
                    return True
            except OSError:
                continue
    except OSError:
        return False
    return False
