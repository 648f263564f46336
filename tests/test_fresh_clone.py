"""What a teacher with only the distribution's Python and no root gets: a fresh clone, then
`scripts/demo --headless`, run as an unprivileged user (`nobody`, with no sudo) with Debian's own
`/usr/bin/python3` (3.11.2 on Debian 12, below some of Binder's pins) on PATH, which makes the
venv, installs the demo (pip's cache in test-artifacts, warm after the first run) and streams the
quickstart's answer. Nothing is installed system-wide and nothing outside test-artifacts changes.

Root runs it (to switch to `nobody` with `runuser`); it fails, never skips, elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.fresh

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "fresh-clone"
SYSTEM_PYTHON = Path("/usr/bin/python3")
USER = "nobody"


def test_a_fresh_clone_runs_the_headless_demo_as_a_user_with_the_systems_python_and_no_root():
    assert os.geteuid() == 0, "run as root: the test switches to an unprivileged user with runuser"
    assert SYSTEM_PYTHON.exists(), "the distribution's python3 (Debian: apt-get install python3 python3-venv)"
    repo, home, cache = ARTIFACTS / "repo", ARTIFACTS / "home", ARTIFACTS / "pip-cache"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    for folder in (home, cache):
        folder.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "--quiet", commit.stdout.strip()], check=True)
    subprocess.run(["chown", "-R", f"{USER}:", str(ARTIFACTS)], check=True)

    env = {
        "PATH": f"{SYSTEM_PYTHON.parent}:/bin",  # python3 is the distribution's, not pyenv's
        "HOME": str(home),
        "PIP_CACHE_DIR": str(cache),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    command = ["runuser", "-u", USER, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items())]
    started = time.monotonic()
    run = subprocess.run(
        [*command, "scripts/demo", "--headless"], cwd=repo, capture_output=True, text=True, timeout=900
    )
    took = time.monotonic() - started
    said = run.stdout + run.stderr
    (ARTIFACTS / "demo.log").write_text(f"{took:.0f} s\n{said}")
    assert run.returncode == 0, said[-4000:]
    assert "apt-get" not in said and "Missing system packages" not in said
    assert "== python3 -m venv .venv" in said  # the script made the venv itself
    assert "server-sent event" in run.stdout.lower() and "[done · " in run.stdout, run.stdout[-2000:]
    made = subprocess.run(
        [*command, str(repo / ".venv/bin/python"), "-c", "import sys; print(sys.base_prefix, sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    version = subprocess.run([str(SYSTEM_PYTHON), "--version"], capture_output=True, text=True).stdout.split()[-1]
    assert made.stdout.split() == ["/usr", version]  # the venv stands on the system's Python
    uid = int(subprocess.run(["id", "-u", USER], capture_output=True, text=True, check=True).stdout)
    assert {path.stat().st_uid for path in (repo / ".venv").iterdir()} == {uid}  # made by that user
