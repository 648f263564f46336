"""`scripts/demo` as a teacher runs it: the address it prints opens the quickstart, which streams.

The script is run for real (it finds the set-up `.venv` and installs nothing), serving a copy of
the notebooks (Lab autosaves), and the very URL it printed is opened in Chromium.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, offline_env, stop
from notebook_driver import SLOW, open_notebook, wait_status

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
URL = re.compile(r"http://127\.0\.0\.1:\d+/lab/tree/(?P<path>[^?\s]+)\?token=(?P<token>[0-9a-f]+)")


def test_the_url_scripts_demo_prints_opens_the_quickstart_and_it_streams(browser, tmp_path: Path) -> None:
    root = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = offline_env()
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(tmp_path / name.lower())
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env["SW_DEMO_ROOT"] = str(root)  # the copy; the printed path is the same
    process = subprocess.Popen(
        [
            str(REPO / "scripts" / "demo"),
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",  # for the driver's kernel-ready check
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,  # the script finds the repository by its own path
        start_new_session=True,
        text=True,
    )
    printed: list[str] = []
    # Read everything it prints in a thread: the server keeps logging, and a full pipe would stall it.
    reader = threading.Thread(target=lambda: printed.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + SLOW
        match = None
        while match is None and time.monotonic() < deadline and process.poll() is None:
            match = next((m for m in map(URL.search, list(printed)) if m), None)
            time.sleep(0.2)
        assert match is not None, "".join(printed)
        assert "Bad config" not in "".join(printed)
        assert not any("pip" in line.lower() and "warning" in line.lower() for line in printed), printed
        token = match["token"]
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
        assert token not in ps, "the token is on a command line that `ps` shows"
        # The address is printed as the server starts; a person clicks it a moment later.
        status = match[0].split("/lab/")[0] + f"/api/status?token={token}"
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(status, timeout=2):
                    break
            except OSError:
                time.sleep(0.25)
        page = browser.new_page()
        try:
            nb = open_notebook(page, match[0], match["path"], "lab")
            nb.run_all()
            wait_status(nb, "complete", timeout=SLOW)
            assert nb.text_length() > 500
            assert "Could not find" not in nb.outputs_text()
        finally:
            page.close()
    finally:
        stop(process)
        assert os.path.isdir(root)
