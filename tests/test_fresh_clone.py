"""What a teacher with only the distribution's Python and no root gets: a fresh clone, then
`scripts/demo --headless`, run as an unprivileged user (`nobody`, with no sudo) with Debian's own
`/usr/bin/python3` (3.11.2 on Debian 12, below some of Binder's pins) on PATH, which makes the
venv, installs the demo (pip's cache in test-artifacts, warm after the first run) and streams the
quickstart's answer. Nothing is installed system-wide and nothing outside test-artifacts changes.

Root runs it (to switch to `nobody` with `runuser`); it fails, never skips, elsewhere. The same
clone runs on the oldest Python the package supports (3.10, pyenv's on the project's machines),
where the demo and the widgets must import and run as on the newest.
"""

from __future__ import annotations

import glob
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
#: The oldest Python the package supports (pyproject's requires-python), as pyenv installs it.
OLDEST = "3.10"


def oldest_python() -> Path:
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found = sorted(glob.glob(f"{root}/versions/{OLDEST}.*/bin/python3"))
    assert found, f"no Python {OLDEST} under {root}/versions (pyenv install {OLDEST})"
    return Path(found[-1])


def test_a_fresh_clone_runs_the_demo_and_the_widgets_on_the_oldest_python_it_supports():
    python = oldest_python()
    folder = ARTIFACTS / f"python-{OLDEST}"
    repo, home = folder / "repo", folder / "home"
    shutil.rmtree(folder, ignore_errors=True)
    home.mkdir(parents=True)
    (ARTIFACTS / "pip-cache").mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "--quiet", commit.stdout.strip()], check=True)
    env = {
        "PATH": f"{python.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "PIP_CACHE_DIR": str(ARTIFACTS / "pip-cache"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    run = subprocess.run(["scripts/demo", "--headless"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    (folder / "demo.log").write_text(run.stdout + run.stderr)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    assert "[done · " in run.stdout, run.stdout[-2000:]
    # The widgets and the renderer (highlighted code reads Python's own regex internals, named
    # otherwise before 3.11) on that Python: a finished answer's view, its saved HTML.
    check = """
import sys
from streamwidgets.core import StreamState
from streamwidgets.core._events import Finish, Terminator, TextDelta
from streamwidgets.widgets import StreamView
from streamwidgets.widgets._fallback import final_bundle
state = StreamState(model="m")
state.begin(0.0)
for event in (TextDelta("Code:\\n\\n```python\\nprint('hi')  # a comment\\n```\\n"), Finish("stop"), Terminator()):
    state.apply(event, 0.1)
state.close(now=0.2)
view = StreamView(state, model="m")
html = final_bundle(view, "m", widget=False)["text/html"]
assert "print" in html and "comment" in html, html
print(sys.version.split()[0], "ok")
"""
    made = subprocess.run([str(repo / ".venv/bin/python"), "-c", check], env=env, capture_output=True, text=True)
    assert made.returncode == 0 and made.stdout.startswith(OLDEST), made.stdout + made.stderr


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
