"""The notebooks as committed: clean, key-free, and checkable by nbval.

A notebook saved with outputs or widget state leaks whatever the author's kernel showed (an
answer, an error quoting a key) and makes every diff noisy; one saved with a key leaks the key.
nbval cannot see background streams, so a notebook that streams must end with a cell that awaits
them and raises when one did not end as expected. Students read these notebooks, so they carry
no test scaffolding: nbval's directives live in the cells' tags, not in `# NBVAL_...` comments,
and the checks are `if ...: raise RuntimeError("✗ ...")` in plain words, not bare asserts. No
browser is needed for these checks.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import comment_markers, metadata_tags

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

#: Shapes of real credentials: OpenAI / Anthropic / OpenRouter style keys, AWS ids, bearer tokens,
#: and any key-ish name assigned a long literal.
KEYLIKE = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bBearer\s+[A-Za-z0-9._\-]{20,}"),
    re.compile(r"\b(?:gsk|xai|pplx|hf)_[A-Za-z0-9]{20,}"),
    re.compile(r"(?i)(?:api_?key|token|secret)\s*[=:]\s*[\"'][A-Za-z0-9._\-]{24,}[\"']"),
]
STREAMING_CALLS = ("sw.show(",)

#: A line that is a bare assert statement (test scaffolding in a student's notebook).
BARE_ASSERT = re.compile(r"^\s*assert\b.*$", re.MULTILINE)

#: A tag meant for nbval: its own names, and anything that looks like one (a misspelt tag is
#: silently ignored by nbval, so the cell would be compared, or not, against the author's intent).
NBVAL_LIKE_TAG = re.compile(r"(?i)nbval|pytest-validate|raises-exception")


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
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    if not any(call in cell.source for cell in code for call in STREAMING_CALLS):
        return  # nothing streams while nbval runs it (the chat app waits for a person)
    last = code[-1]
    assert "await" in last.source and "raise " in last.source, (
        "the last cell must await the streams and raise when one did not end as expected"
    )
    assert "✓" in last.source, "the final check says what it found, a ✓ line per stream"
    assert "nbval-ignore-output" in last.metadata.get("tags", []), (
        "the final check prints word counts and times: nbval must not compare them (its exception checks)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_test_scaffolding_in_the_cells(path: Path) -> None:
    """What a student reads is the lesson: directives for nbval live in the tags, and the checks
    raise in plain words instead of asserting."""
    nb = nbformat.read(path, as_version=4)
    valid = set(metadata_tags)
    for cell in nb.cells:
        assert "NBVAL" not in cell.source, f"cell {cell.id}: an nbval directive in the source (tag the cell)"
        assert not any(marker in cell.source for marker in comment_markers), f"cell {cell.id}: a comment directive"
        if cell.cell_type == "code":
            line = BARE_ASSERT.search(cell.source)
            assert line is None, f"cell {cell.id}: a bare assert ({line.group().strip()!r}); raise a readable error"
        tags = cell.metadata.get("tags", [])
        assert isinstance(tags, list) and all(isinstance(tag, str) for tag in tags), f"cell {cell.id}: tags {tags!r}"
        directives = [tag for tag in tags if NBVAL_LIKE_TAG.search(tag)]
        assert set(directives) <= valid, (
            f"cell {cell.id}: {set(directives) - valid} are not nbval tags ({sorted(valid)})"
        )
        if directives:
            assert cell.cell_type == "code", f"cell {cell.id}: nbval only reads the tags of code cells"
        kinds = [metadata_tags[tag] for tag in directives]
        kinds = [kind[0] if isinstance(kind, tuple) else kind for kind in kinds]
        assert len(kinds) == len(set(kinds)), f"cell {cell.id}: conflicting nbval tags {directives}"


def test_the_quickstart_is_one_cell_away() -> None:
    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    first = next(cell.source for cell in nb.cells if cell.cell_type == "code")
    assert first.startswith("import streamwidgets as sw") and "sw.show(" in first
    assert "demo=" not in first, "the quickstart streams at a pace a person can watch"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_setting_decides_who_answers_every_cell(path: Path):
    """`STREAMWIDGETS_OFFLINE` alone chooses the stand-in (README): no notebook reads a variable of
    its own for it, and none names the demo preset, which that setting could not change."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            assert "SW_PROVIDER" not in cell.source, path.name
            assert not re.search(r"""provider\s*=\s*["']demo["']""", cell.source), (path.name, cell.source)


@pytest.mark.parametrize(("setting", "local"), [("local", True), ("demo", False)])
def test_a_cell_with_no_provider_and_one_with_a_preset_but_no_key_get_the_same_stand_in(
    setting: str, local: bool, monkeypatch: pytest.MonkeyPatch
):
    """Notebook 01's two answers (the first names no provider, the second `openai` with no key)
    and the chat app's panel: one setting, one stand-in for all of them."""
    from streamwidgets.net import make_request

    monkeypatch.setenv("STREAMWIDGETS_OFFLINE", setting)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    requests = [make_request("What is a tuple?"), make_request("What is a tuple?", provider="openai")]
    assert [r.local for r in requests] == [local, local]
    assert [r.embedded is not None for r in requests] == [not local, not local]
