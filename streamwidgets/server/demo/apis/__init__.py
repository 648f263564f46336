"""The APIs the demo server speaks: one spec each (`ApiSpec`), listed once in `APIS`.

A spec owns everything about its API: its path, its request reader and checks, its tools
reader, its words, its error envelope and request-id header, its heartbeat, and its stream and
whole-answer writers. The router finds a request's spec here (`find_api`, `api_for_path`) and
asks it; nothing else in the server branches on an API's name. Adding an API is a module here
and a row in `APIS`.
"""

from __future__ import annotations

import re
from typing import Optional
from urllib.parse import parse_qs

from ._spec import SSE, ApiSpec, Endpoint, Turn, text_of
from .chat import CHAT
from .completions import COMPLETIONS
from .gemini import GEMINI
from .messages import MESSAGES
from .responses import RESPONSES

__all__ = [
    "APIS",
    "ApiSpec",
    "Endpoint",
    "Turn",
    "SSE",
    "text_of",
    "DEFAULT_API",
    "VERSIONS",
    "find_api",
    "api_for_path",
    "field_home",
]

#: Every API the demo server speaks, by name; the order is the one a path is matched in.
APIS: dict[str, ApiSpec] = {spec.name: spec for spec in (CHAT, RESPONSES, MESSAGES, COMPLETIONS, GEMINI)}
#: Whose envelope answers a request that names no API (`/v1/models`, an unknown path).
DEFAULT_API = CHAT
#: The version segments a flavor's routes are served under.
VERSIONS = frozenset(version for spec in APIS.values() for version in spec.versions)

_WHOLE = {name: re.compile(spec.path) for name, spec in APIS.items()}
_TAIL = {name: re.compile(f"(?:^|/)(?:{spec.path})$") for name, spec in APIS.items()}


def find_api(rest: str, version: str, query: str) -> Optional[tuple[ApiSpec, Endpoint]]:
    """The API served at `rest` (the path after a flavor's `version` segment), and what its path
    and `query` say; None when no API lives there."""
    for name, spec in APIS.items():
        if version not in spec.versions:
            continue
        match = _WHOLE[name].fullmatch(rest)
        if match is not None:
            return spec, spec.endpoint(match, parse_qs(query))
    return None


def api_for_path(path: str) -> ApiSpec:
    """Whose envelope a refused request to `path` is answered in: the API whose endpoint the
    path ends with, else the default."""
    for name, spec in APIS.items():
        if _TAIL[name].search(path):
            return spec
    return DEFAULT_API


def field_home(name: str, besides: ApiSpec) -> Optional[str]:
    """The title of another API that has the body field `name` (for the 400's hint), or None."""
    for spec in APIS.values():
        if spec is not besides and spec.title is not None and name in spec.documented():
            return spec.title
    return None
