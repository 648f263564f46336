"""A pytest plugin for `scripts/test ARGS`: write the marks of the tests ARGS select, one a line,
to the file `SW_MARKS_OUT` names, so that the script sets up only what those tests need (the
LiteLLM venv for `gateway`, the hub's proxy for `hub`, the local model for `local`, Chromium for
`browser`). Run with `--collect-only`: nothing is executed."""

from __future__ import annotations

import os
from typing import Any


def pytest_collection_finish(session: Any) -> None:
    marks = sorted({mark.name for item in session.items for mark in item.iter_markers()})
    with open(os.environ["SW_MARKS_OUT"], "w", encoding="utf-8") as out:
        out.write("".join(f"{mark}\n" for mark in marks))
