"""What the local model's tests share."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def scratch(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder of the test's own under test-artifacts/ (removed after)."""
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{request.module.__name__.rsplit('.', 1)[-1]}-", dir=ROOT / "test-artifacts"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
