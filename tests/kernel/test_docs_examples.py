"""The README and docs/ as a newcomer reads them: every Python example runs as written, in a real
kernel (where `await` works at the top of a cell), every attribute and function they name
exists, and every install line works from a checkout of this repository.

An example that cannot run here says why in a `<!-- not run: ... -->` comment just above it
(a hub's configuration file, a model this machine does not have); any other is run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
from kernels import running_kernel

import streamwidgets as sw
from streamwidgets.core._state import StreamState
from streamwidgets.widgets._handle import StreamHandle

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"(<!-- not run: (?P<why>[^>]+?) -->\n)?```python\n(?P<code>.*?)```", re.S)


def examples(page: Path) -> list[tuple[str, str | None]]:
    """(code, why it is not run or None) of each Python example of `page`."""
    return [(m["code"], m["why"]) for m in _BLOCK.finditer(page.read_text(encoding="utf-8"))]


RUN = [(page, code) for page in PAGES for code, why in examples(page) if why is None]


def test_every_example_is_run_or_says_why_not():
    for page in PAGES:
        for _code, why in examples(page):
            assert why is None or len(why.split()) >= 3, f"{page.name}: say why an example is not run"
    assert len(RUN) >= 2


@pytest.mark.parametrize(("page", "code"), RUN, ids=lambda v: v.name if isinstance(v, Path) else "")
def test_each_example_runs_as_written_in_a_kernel(tmp_path: Path, page: Path, code: str):
    kernels = running_kernel(tmp_path)
    kernel = next(kernels)
    try:
        kernel.execute(code, timeout=120)  # raises with the kernel's traceback when a line fails
        kernel.execute("import asyncio\nfor h in sw.widgets._handle.running():\n    await h", timeout=120)
    finally:
        kernels.close()


def _named(pattern: str) -> set[str]:
    found: set[str] = set()
    for page in PAGES:
        found |= set(re.findall(pattern, page.read_text(encoding="utf-8")))
    return found


def test_every_function_and_attribute_the_pages_name_exists():
    for name in _named(r"\bsw\.([A-Za-z_]\w*)"):
        assert hasattr(sw, name), f"sw.{name} is named in the docs but does not exist"
    for name in _named(r"\bstate\.([a-z_]\w*)"):
        assert hasattr(StreamState, name) or name in StreamState.__dataclass_fields__, f"state.{name} does not exist"
    for name in _named(r"\bhandle\.([a-z_]\w*)"):
        assert hasattr(StreamHandle, name), f"handle.{name} does not exist"


def test_every_install_line_works_from_a_checkout():
    """The package is not on a package index: an install line names the checkout (`.`, or a path
    to it), with extras that exist; other packages by name are fine."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    lines = _named(r"pip install ([^\n`|]+)")
    assert lines
    for line in lines:
        for spec in re.findall(r"""["']?([\w./-]*streamwidgets[\w./-]*\[[\w,]+\]|\.\[[\w,]+\]|\.)["']?""", line):
            assert not spec.startswith("streamwidgets"), f"`pip install {line}`: streamwidgets is not on the index"
            for extra in re.findall(r"\[([\w,]+)\]", spec):
                assert set(extra.split(",")) <= extras, f"`pip install {line}`: no such extra"
