"""Moved to `support.http` (`tests/support/http.py`); this name stays for the modules that still
import it (`tests/server/test_server_hardening.py`, `test_hostile_clients.py`) until they import
`support.http` instead."""

from support.http import read_all, responses_in

__all__ = ["read_all", "responses_in"]
