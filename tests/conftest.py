"""What every test folder shares: the embedded provider on loopback, the layout check, the
guard that keeps real kernels out of the fast suite, and Hypothesis's examples kept under
`test-artifacts/` (tests write nowhere else in the repository).

`tests/` itself is on `sys.path` (this conftest's folder, in pytest's default import mode), so
every test, in whatever folder, imports the helpers here by name: `support` (the servers and HTTP
helpers the tests share: `support.hostile`, `support.http`), `kernels`, `widget_harness`,
`virtual_time`, `xss_payloads`, `key_forms`, `markdown_cases`, `html_audit`, `teaching_prompts`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis.configuration import set_hypothesis_home_dir
from layout import group_of, layout_problems

from streamwidgets.net._request import OFFLINE_ENV
from streamwidgets.server import DemoServer

TESTS = Path(__file__).resolve().parent
#: Where tests may write inside the repository (screenshots, logs, Hypothesis's examples).
ARTIFACTS = TESTS.parent / "test-artifacts"

# Hypothesis keeps the examples it found (and its caches) in `.hypothesis/` of the working
# directory unless told.
set_hypothesis_home_dir(ARTIFACTS / "hypothesis")


def pytest_configure(config: pytest.Config) -> None:
    """With no key, answers come from the scripted demo, never from the local model (the
    `[local]` extra, installed in the dev venv): the tests need the same answer every time. Every
    process a test starts (a kernel, a Jupyter server, the CLI) inherits it.
    `tests/net/test_local_offline.py` lifts it where the local model is the point."""
    os.environ[OFFLINE_ENV] = "demo"


@pytest.fixture(scope="session")
def demo_server() -> Iterator[DemoServer]:
    """One embedded provider on 127.0.0.1 for the whole run (one per xdist worker), stopped at the
    end. A test that needs a server of its own (its own limits, a port chosen before it starts)
    says why, and makes it with `with DemoServer(...) as server:`."""
    server = DemoServer().start()
    try:
        yield server
    finally:
        server.stop()


def _relative(path: Path) -> Path | None:
    try:
        return path.resolve().relative_to(TESTS)
    except ValueError:  # not a test of this folder (a notebook under nbval)
        return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse the run when a test sits in the wrong folder for its marks (see `layout.py`).

    This hook runs before the `-m` selection, so every run checks every collected test."""
    collected = []
    for item in items:
        relative = _relative(item.path)
        if relative is not None:
            collected.append((relative, item.nodeid, {mark.name for mark in item.iter_markers()}))
    problems = layout_problems(collected)
    if problems:
        raise pytest.UsageError("The tests break the layout of tests/:\n  " + "\n  ".join(problems))


@pytest.fixture(autouse=True)
def _no_kernel_outside_the_kernel_group(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside `tests/kernel/` and `tests/browser/`, starting a real kernel fails the test."""
    relative = _relative(request.node.path)
    if relative is None or group_of(relative) is not None:
        return
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    async def refuse(self: LocalProvisioner, cmd: list[str], **kwargs: object) -> None:
        raise RuntimeError(
            f"{request.node.nodeid} starts a real kernel, and the fast suite holds none: "
            "move it into tests/kernel/ and mark it `kernel`"
        )

    monkeypatch.setattr(LocalProvisioner, "launch_kernel", refuse)
