"""Asking for log-probabilities and sweeping a sampling setting from the entry points: `%%stream
--logprobs N`, and `compare(..., temperature=[...])`'s rules. The sweep's views side by side, in
a real kernel, are in `tests/kernel/test_inside_the_model.py`."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

import streamwidgets as sw
from streamwidgets.apps._magic import parse_options


def test_the_magic_asks_for_logprobs_and_a_seed():
    assert parse_options("--logprobs 5 --seed 3 --temperature 0") == {"logprobs": 5, "seed": 3, "temperature": 0.0}
    assert parse_options("--logprobs 0") == {"logprobs": 0}
    for wrong in ("--logprobs 21", "--logprobs many", "--logprobs -1"):
        with pytest.raises(UsageError, match="from 0 to 20"):
            parse_options(wrong)


@pytest.mark.parametrize(
    ("models", "options", "error", "words"),
    [
        (None, {"temperature": [0, 1], "seed": [1, 2]}, TypeError, "one setting at a time, not temperature and seed"),
        (None, {"temperature": []}, ValueError, "temperature= is an empty list"),
        (["demo", "demo-fast"], {"seed": [1, 2]}, TypeError, "compares one model with itself"),
        (None, {}, TypeError, "models is a list"),
    ],
)
def test_a_sweep_says_what_is_wrong_before_anything_streams(models, options, error, words):
    with pytest.raises(error, match=words):
        sw.compare("Write a haiku about rain", models, provider="demo", **options)


def test_ask_lists_the_least_likely_choices_on_stderr():
    import os
    import subprocess
    import sys

    env = {**os.environ, "STREAMWIDGETS_OFFLINE": "demo"}
    fast = '{"tokens_per_second": 0, "first_token_delay": 0}'
    command = [sys.executable, "-m", "streamwidgets", "ask", "What is a closure in Python?", "--logprobs", "3"]
    done = subprocess.run(
        [*command, "--max-tokens", "40", "-p", f"demo={fast}"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "least likely choices" not in done.stdout  # the answer stays clean on stdout
    lines = done.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if "the least likely choices" in line)
    assert "40 tokens (simulated by the scripted demo)" in lines[start]
    assert len(lines[start + 1 :]) == 5 and all("%" in line and "instead:" in line for line in lines[start + 1 :])
