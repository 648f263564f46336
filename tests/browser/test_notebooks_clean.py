"""The notebooks as committed: clean, key-free, and checkable by nbval.

A notebook saved with outputs or widget state leaks whatever the author's kernel showed (an
answer, an error quoting a key) and makes every diff noisy; one saved with a key leaks the key.
nbval cannot see background streams, so a notebook that streams must end with a cell that awaits
them and asserts something about the result. No browser is needed for these checks.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))

#: Shapes of real credentials: OpenAI / Anthropic / OpenRouter style keys, AWS ids, bearer tokens,
#: and any key-ish name assigned a long literal.
KEYLIKE = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bBearer\s+[A-Za-z0-9._\-]{20,}"),
    re.compile(r"\b(?:gsk|xai|pplx|hf)_[A-Za-z0-9]{20,}"),
    re.compile(r"(?i)(?:api_?key|token|secret)\s*[=:]\s*[\"'][A-Za-z0-9._\-]{24,}[\"']"),
]
STREAMING_CALLS = ("sw.show(", "sw.show_sdk(", "sw.show_replay(")


def test_there_are_notebooks() -> None:
    names = {path.name for path in NOTEBOOKS}
    assert {"01_quickstart.ipynb", "chat_app.ipynb"} <= names, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_without_outputs_or_widget_state(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert "widgets" not in nb.metadata, "saved widget state"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {cell.id} has outputs"
            assert cell.execution_count is None, f"cell {cell.id} has an execution count"
        assert "attachments" not in cell or not cell.attachments, f"cell {cell.id} has attachments"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_api_key_inside(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for pattern in KEYLIKE:
        match = pattern.search(text)
        # Say where, never what: the message must not repeat the key.
        assert match is None, f"something shaped like a credential at character {match.start()}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_streams_are_awaited_and_checked_at_the_end(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [cell.source for cell in nb.cells if cell.cell_type == "code"]
    if not any(call in source for source in code for call in STREAMING_CALLS):
        return  # nothing streams while nbval runs it (the chat app waits for a person)
    last = code[-1]
    assert "await" in last and "assert" in last, "the last cell must await the streams and assert on them"
    assert last.lstrip().startswith("# NBVAL_CHECK_OUTPUT"), "the final check's output is deterministic: check it"


def test_the_quickstart_is_one_cell_away() -> None:
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    first = next(cell.source for cell in nb.cells if cell.cell_type == "code")
    assert first.startswith("import streamwidgets as sw") and "sw.show(" in first
    assert "demo=" not in first, "the quickstart streams at a pace a person can watch"
