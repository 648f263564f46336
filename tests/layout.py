"""The layout of the test suite, checked every time tests are collected (see `conftest.py`).

Tests mirror the package (`tests/core/`, `markdown/`, `net/`, `server/`, `widgets/`, `apps/`),
and the two slow groups have folders of their own: every test in `tests/kernel/` carries the
`kernel` mark, every test in `tests/browser/` the `browser` mark, and no test anywhere else
carries either, so the fast suite (`-m "not kernel and not browser and not gateway"`) holds no
real kernel and no browser. Test modules are imported by their basename (pytest's default
"prepend" import mode, which lets every folder import the helpers at the top of `tests/` by
name), so no two of them may share one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import PurePath
from typing import Optional

#: A folder of `tests/` with its own group → the mark each of its tests carries.
GROUPS = {"kernel": "kernel", "browser": "browser"}


def group_of(relative: PurePath) -> Optional[str]:
    """The group folder a test file (its path relative to `tests/`) sits in, if any."""
    return relative.parts[0] if len(relative.parts) > 1 and relative.parts[0] in GROUPS else None


def layout_problems(tests: Iterable[tuple[PurePath, str, set[str]]]) -> list[str]:
    """What breaks the layout, one plain line each, given every collected test as
    (its file relative to `tests/`, its node id, the names of its marks)."""
    problems: list[str] = []
    files: dict[str, set[PurePath]] = defaultdict(set)
    for relative, nodeid, marks in tests:
        files[relative.name].add(relative)
        folder = group_of(relative)
        if folder is not None and GROUPS[folder] not in marks:
            problems.append(f"{nodeid} is in tests/{folder}/ but not marked `{GROUPS[folder]}`")
        for other, mark in GROUPS.items():
            if mark in marks and folder != other:
                problems.append(f"{nodeid} is marked `{mark}`: it belongs in tests/{other}/")
    for name, paths in sorted(files.items()):
        if len(paths) > 1:
            problems.append(f"{len(paths)} test files are named {name}: {', '.join(sorted(map(str, paths)))}")
    return problems
