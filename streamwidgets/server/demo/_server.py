"""`DemoServer`: the demo's routes served by the edge on a loopback port, in a thread of its own;
`in_process()`: the same routes answered in-process, where no socket can be opened."""

from __future__ import annotations

import sys
import threading
from collections.abc import Collection
from typing import Optional

from .._edge import DirectServer, LoopbackServer, ServerLimits
from ._flavors import FLAVORS
from ._routes import DemoRouter

__all__ = ["DemoServer", "ServerLimits", "in_process", "start_server"]


class DemoServer(LoopbackServer):
    """An OpenAI-, Responses- and Anthropic-compatible demo provider on a loopback port.

    `port=0` picks a free port; `url`, `base_url` and `port` are known once `start()` returned.
    `limits` bounds each connection (timeouts, body size, how many at once); the defaults suit
    every notebook and SDK, tests pass smaller ones. `allow_origins` names the web pages that may
    read its answers (CORS), such as a JupyterLite site served on this machine; by default none.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        limits: Optional[ServerLimits] = None,
        allow_origins: Collection[str] = (),
    ) -> None:
        super().__init__(
            DemoRouter, host, port, limits=limits, name="streamwidgets-demo-server", allow_origins=allow_origins
        )

    @property
    def base_url(self) -> str:
        """The default flavor's API base, for `OpenAI(base_url=...)` / `Anthropic(base_url=...)`."""
        return f"{self.url}/v1"

    def flavor_url(self, flavor: str) -> str:
        """The API base of a seed provider's flavor, e.g. `http://127.0.0.1:43117/venym/v1`."""
        if flavor not in FLAVORS:
            raise ValueError(f"unknown flavor {flavor!r}; choose one of {', '.join(FLAVORS)}")
        return self.base_url if flavor == "demo" else f"{self.url}/{flavor}/v1"


_shared: Optional[DemoServer] = None
_shared_lock = threading.Lock()


def start_server(host: str = "127.0.0.1", port: int = 0) -> DemoServer:
    """The process-wide demo server, started on first use; later calls return the same one
    (their arguments are then ignored) as long as it runs. In the browser (JupyterLite) no server
    can listen: a `RuntimeError` says so (`sw.show()` with no `base_url` plays the demo in-process)."""
    if sys.platform == "emscripten":
        raise RuntimeError(
            "The embedded server cannot run in the browser (JupyterLite): a web page can open no socket to listen "
            "on. Without base_url=, sw.show() plays the scripted demo in the kernel itself; a server elsewhere "
            "must allow this page to read its answers (CORS)."
        )
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = DemoServer(host, port).start()
        return _shared


_direct: Optional[DirectServer] = None


def in_process() -> DirectServer:
    """The process-wide demo answered in-process (no socket: `_edge/_direct.py`), made on first use.
    Its paths are the server's: `/v1/...` for the plain routes, `/<flavor>/v1/...` for a flavor's."""
    global _direct
    with _shared_lock:
        if _direct is None:
            _direct = DirectServer(DemoRouter)
        return _direct
