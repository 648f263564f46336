"""Moved to `support.hostile` (`tests/support/hostile.py`); this name stays for the modules that
still import it (`tests/widgets/test_view.py`) until they import `support.hostile` instead."""

from support.hostile import (  # noqa: F401
    API_OF,
    DONE,
    FULL,
    HOLD,
    HTML,
    JSON,
    PATH_OF,
    SSE,
    HostileServer,
    Reply,
    Visit,
    chat,
    event,
    message_start,
    text_block,
    typed,
)
