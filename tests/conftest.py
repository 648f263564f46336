"""Fixtures shared by the test modules: the embedded provider on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from streamwidgets.server import DemoServer


@pytest.fixture(scope="session")
def demo_server() -> Iterator[DemoServer]:
    """One embedded provider on 127.0.0.1 for the whole run, stopped at the end."""
    server = DemoServer().start()
    try:
        yield server
    finally:
        server.stop()
