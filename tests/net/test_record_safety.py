"""`record=` never costs a person a file, and never blocks.

A path typed in a hurry may name an essay, a link to one, a FIFO, a device, a folder, or the very
recording being replayed: each is refused in words before any request is sent, and left as it
was. A recording is written beside its target and takes its place only when the request went
well, so a failed request (an HTTP 500) never replaces a good recording. Real sockets: a
scripted server on 127.0.0.1 (`support/hostile.py`).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import threading
from pathlib import Path

import pytest
from support.hostile import DONE, FULL, JSON, HostileServer, Reply, chat, hostile_fixture

import streamwidgets as sw
from streamwidgets.core._recordings import load_recording

ERROR_500 = json.dumps({"error": {"message": "The server had an error.", "type": "server_error"}}).encode()


server = hostile_fixture(
    {
        "/ok/v1/chat/completions": Reply(tuple(FULL["chat"])),
        "/other/v1/chat/completions": Reply((chat("Another"), chat(" answer."), chat(finish="stop"), DONE)),
        "/fail/v1/chat/completions": Reply((ERROR_500,), "500 Internal Server Error", JSON),
        "/cut-then-fail/v1/chat/completions": [
            Reply((chat("Hello"), chat(" there")), end="cut"),
            Reply((ERROR_500,), "500 Internal Server Error", JSON),
        ],
    }
)


def run(server: HostileServer, case: str, record: Path, **options) -> sw.StreamState:
    return asyncio.run(sw.arun("hi", base_url=server.url(case), model="m", api_key="k", record=record, **options))


def visits(server: HostileServer, case: str) -> int:
    return sum(v.path.startswith(f"/{case}/") for v in server.visits)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --------------------------------------------------------------------------- refused before any request


def test_a_file_that_is_not_a_recording_is_refused_and_left_as_it_is(server, tmp_path):
    essay = tmp_path / "essay.txt"
    essay.write_text("My essay, three weeks of work.\n")
    before = visits(server, "ok")
    with pytest.raises(
        ValueError, match=r"cannot record to .*essay\.txt: it exists and is not a streamwidgets recording"
    ):
        run(server, "ok", essay)
    assert essay.read_text() == "My essay, three weeks of work.\n"
    assert visits(server, "ok") == before, "a request was sent before the path was checked"


@pytest.mark.parametrize("dangling", [False, True], ids=["to a file", "to nothing"])
def test_a_symbolic_link_is_never_followed(server, tmp_path, dangling):
    target = tmp_path / "notes.txt"
    if not dangling:
        target.write_text("notes\n")
    link = tmp_path / "answer.jsonl"
    link.symlink_to(target)
    with pytest.raises(ValueError, match=r"answer\.jsonl: it is a symbolic link"):
        run(server, "ok", link)
    assert link.is_symlink() and (target.read_text() == "notes\n" if not dangling else not target.exists())


def test_a_folder_is_refused_in_words(server, tmp_path):
    with pytest.raises(ValueError, match=r"it is a folder; give a file name"):
        run(server, "ok", tmp_path)


def test_a_device_is_refused(server):
    with pytest.raises(ValueError, match=r"cannot record to /dev/null: it is not a regular file"):
        run(server, "ok", Path("/dev/null"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_at_once_and_never_opened(server, tmp_path):
    """Opening a FIFO with no reader for writing blocks: the event loop stopped, and Cancel with
    it. The path is refused before it is ever opened."""
    fifo = tmp_path / "answer.jsonl"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def attempt() -> None:
        try:
            run(server, "ok", fifo)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # let the blocked writer go, so that the thread ends
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        pytest.fail("record= to a FIFO blocked")
    assert len(outcome) == 1 and isinstance(outcome[0], ValueError), outcome
    assert "is not a regular file" in str(outcome[0]) and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_recording_onto_the_recording_being_replayed_is_refused(server, tmp_path):
    path = tmp_path / "a.jsonl"
    run(server, "ok", path)
    original = path.read_bytes()
    with pytest.raises(ValueError, match=r"a\.jsonl: it is the recording being replayed"):
        sw.run(sw.replay(path, speed=0), record=path)
    with pytest.raises(ValueError, match=r"it is the recording being replayed"):
        sw.show(sw.replay(str(path), speed=0), record=str(path), out=io.StringIO())
    assert path.read_bytes() == original


# --------------------------------------------------------------------------- a failed request keeps a good recording


def test_a_failed_request_does_not_replace_a_good_recording(server, tmp_path):
    path = tmp_path / "answer.jsonl"
    good = run(server, "ok", path)
    assert good.status == "complete"
    original = path.read_bytes()
    failed = run(server, "fail", path)
    assert failed.status == "error" and failed.error is not None and failed.error.http_status == 500
    assert path.read_bytes() == original, "the HTTP 500 replaced the good recording"
    assert sw.parse(path).text == "Hello there."
    assert any("record=: the request failed, so" in w and "keeps the recording it held" in w for w in failed.warnings)
    assert leftovers(tmp_path) == []


def test_a_good_recording_replaces_a_recording_and_an_empty_file(server, tmp_path):
    path = tmp_path / "answer.jsonl"
    path.write_bytes(b"")
    run(server, "ok", path)
    assert sw.parse(path).text == "Hello there."
    state = run(server, "other", path)
    assert state.warnings == [] and sw.parse(path).text == "Another answer."
    assert leftovers(tmp_path) == []


def test_a_failure_is_recorded_where_nothing_was(server, tmp_path):
    path = tmp_path / "error.jsonl"
    state = run(server, "fail", path)
    assert state.status == "error" and state.warnings == []
    recording = load_recording(path)
    assert recording.status == 500 and sw.parse(path).status == "error"  # a 500 to replay in class


def test_a_later_part_that_fails_is_cut_off_and_the_parts_before_it_are_kept(server, tmp_path):
    path = tmp_path / "answer.jsonl"
    state = run(server, "cut-then-fail", path, parts=2)
    assert len(state.parts) == 2 and state.parts[0].text == "Hello there" and state.status == "error"
    assert any("this part failed, so it was not added to" in w for w in state.warnings), state.warnings
    replayed = sw.parse(path)
    assert (len(replayed.parts), replayed.text, replayed.status) == (1, "Hello there", "incomplete")
    assert leftovers(tmp_path) == []


def test_the_recording_appears_only_when_the_part_ends(server, tmp_path):
    """Until then it is a hidden file beside it: a reader never sees half a recording replace a whole one."""
    path = tmp_path / "answer.jsonl"
    seen: list[bool] = []

    async def main() -> None:
        async with sw.astream("hi", base_url=server.url("ok"), model="m", api_key="k", record=path) as events:
            async for _ in events:
                seen.append(path.exists())

    asyncio.run(main())
    assert seen and not any(seen) and path.exists() and leftovers(tmp_path) == []
