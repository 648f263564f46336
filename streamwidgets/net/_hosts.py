"""Which hosts are this machine: loopback never goes through a proxy, and a failed request to it
is said as a refused connection."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether a host name is this machine (`localhost`, 127.0.0.0/8, ::1)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
