"""The demo provider: what the embedded server answers, and how.

The routes (`_routes.DemoRouter`, the edge's `Router`), one spec per wire API (`apis/`), the
seed providers' flavors, the model names, the scenarios (`_scenarios.SCENARIOS`, one row each)
and the scripts they make (`_script.Script`, pure data), with the texts the scripts stream: the
lessons (markdown files in `lessons/`), the other scripted answers, the long tutorial, the
simulated log-probabilities, and the tool-calling model. `DemoServer` serves it on loopback.
"""

from __future__ import annotations

from ._flavors import FLAVORS
from ._requests import parse_request
from ._routes import DemoRouter
from ._scenarios import SCENARIOS, Script, build_script, scenarios_table
from ._server import DemoServer, ServerLimits, in_process, start_server
from .apis import APIS

__all__ = [
    "DemoServer",
    "ServerLimits",
    "start_server",
    "in_process",
    "DemoRouter",
    "APIS",
    "FLAVORS",
    "SCENARIOS",
    "Script",
    "build_script",
    "parse_request",
    "scenarios_table",
]
