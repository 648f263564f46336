"""The package as a user meets it: the public names, the lazy import, the README's tables."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import streamwidgets
from streamwidgets.core._providers import PROVIDERS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_every_public_name_resolves_and_is_in_the_readme():
    assert len(streamwidgets.__all__) == len(set(streamwidgets.__all__))
    for name in streamwidgets.__all__:
        assert getattr(streamwidgets, name) is not None
        assert re.search(rf"\b{name}\b", README), f"{name} is public but the README does not say so"
    assert callable(streamwidgets.parse)  # the function, not the submodule of the same name
    with pytest.raises(AttributeError, match="no attribute 'SSEDecoder'"):
        _ = streamwidgets.SSEDecoder  # the decoder lives in streamwidgets.core, not at the top


@pytest.mark.parametrize("module", ["streamwidgets", "streamwidgets.core", "streamwidgets.apps._cli"])
def test_the_core_and_the_cli_load_no_notebook_stack(module):
    # Our renderer's pygments is checked through `streamwidgets.markdown._highlight`: httpx itself imports
    # pygments for its optional command line whenever `click` is installed (papermill brings it).
    code = (
        f"import {module}, sys; "
        "heavy = [m for m in ('IPython', 'ipywidgets', 'markdown_it', 'streamwidgets.markdown._highlight') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_readme_provider_table_matches_the_presets():
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| ([a-z, ]+) \|", README, re.M)
    table = {name: tuple(api.strip() for api in apis.split(",")) for name, apis in rows}
    assert table == {name: p.apis for name, p in PROVIDERS.items()}


def test_the_teachers_table_lists_every_demo_scenario():
    from streamwidgets.server.demo._scenarios import SCENARIOS

    listed = set(re.findall(r"^\| `(demo[\w-]*)` \|", README, re.M))
    assert listed == {*SCENARIOS, "demo-http-NNN"}
