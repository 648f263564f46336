"""`LoopbackServer`: the HTTP edge in a daemon thread with its own asyncio loop.

A notebook's own loop must stay free for the widgets, so the server never shares it: it runs in
a thread of its own, starts in a few milliseconds, and `stop()` closes the listener and every
open connection before joining the thread. What the requests mean is the router's business
(`_replies.Router`); this module only serves it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Collection
from types import TracebackType
from typing import Any, Optional, TypeVar

from ._guard import allowed_origins
from ._http import ConnectionHandler, ServerLimits
from ._records import ConnectionRecord, Registry
from ._replies import Router

__all__ = ["LoopbackServer", "ServerLimits", "RouterFactory"]

#: Makes a server's router, given how to read its connection records (`after` an id).
RouterFactory = Callable[[Callable[[int], list[ConnectionRecord]]], Router]

_S = TypeVar("_S", bound="LoopbackServer")
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 5.0


class LoopbackServer:
    """One router served over HTTP/1.1 on a loopback port, in a background thread.

    `port=0` picks a free port; `url` and `port` are known once `start()` returned. `limits`
    bounds each connection (timeouts, body size, how many at once); the defaults suit every
    notebook and SDK, tests pass smaller ones. `allow_origins` names the web pages (origins such
    as `http://127.0.0.1:8000`) that may read its answers through CORS; by default none may. They
    are kept as a browser writes them (`_guard.allowed_origins`); `null`, `*` and what is no origin raise a
    `ValueError`.
    """

    def __init__(
        self,
        router: RouterFactory,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        limits: Optional[ServerLimits] = None,
        name: str = "streamwidgets-server",
        allow_origins: Optional[Collection[str]] = (),
    ) -> None:
        self.host = host
        self.port = port
        self.limits = limits = limits or ServerLimits()
        self._name = name
        self._registry = Registry()
        #: The pages that may read the answers, as a browser writes their `Origin`.
        self.allow_origins = allowed = allowed_origins(allow_origins)
        self._handler = ConnectionHandler(router(self._registry.snapshot), self._registry, limits, allowed)
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._server: Optional[asyncio.AbstractServer] = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<{type(self).__name__} {state} {self.url}>"

    # -------------------------------------------------------------- addresses

    @property
    def url(self) -> str:
        """The root URL, e.g. `http://127.0.0.1:43117`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -------------------------------------------------------------- records

    @property
    def connections(self) -> list[ConnectionRecord]:
        """A snapshot (copies) of the records of streamed responses, oldest first."""
        return self._registry.snapshot()

    def wait_for_disconnect(self, timeout: float = 5.0, *, after: int = 0) -> Optional[ConnectionRecord]:
        """The first stream with an id greater than `after` whose client left mid-stream,
        waiting up to `timeout` seconds; None if there is none by then."""
        return self._registry.wait_for("client_disconnected", timeout, after)

    # -------------------------------------------------------------- life cycle

    def start(self: _S) -> _S:
        """Start serving in a background thread; a running server is left as it is."""
        with self._lock:
            if self.running:
                return self
            ready = threading.Event()
            failure: list[BaseException] = []
            thread = threading.Thread(
                target=self._run, args=(ready, failure), name=f"{self._name}:{self.port}", daemon=True
            )
            thread.start()
            if not ready.wait(_START_TIMEOUT):
                raise RuntimeError("the demo server did not start in time")
            if failure:
                thread.join(_STOP_TIMEOUT)
                raise failure[0]
            self._thread = thread
            return self

    def stop(self) -> None:
        """Close the listener and every open connection, and join the thread. Idempotent."""
        with self._lock:
            thread, loop = self._thread, self._loop
            if thread is None or loop is None:
                return
            if thread.is_alive() and not loop.is_closed():
                try:
                    asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(_STOP_TIMEOUT)
                finally:
                    loop.call_soon_threadsafe(loop.stop)
            thread.join(_STOP_TIMEOUT)
            self._thread = None

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _run(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        try:
            server = loop.run_until_complete(asyncio.start_server(self._accept, self.host, self.port))
        except BaseException as exc:  # a port in use, a bad host: reported by start()
            failure.append(exc)
            loop.close()
            ready.set()
            return
        self._loop, self._server = loop, server
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())  # requests still being read
            loop.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handler.serve(reader, writer)
        except asyncio.CancelledError:
            # stop() cancelled this connection; ending quietly keeps asyncio's stream callback
            # from logging the cancellation as an unhandled error.
            pass
        finally:
            self._tasks.discard(task)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()
