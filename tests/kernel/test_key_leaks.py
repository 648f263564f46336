"""The sentinel key in a real notebook: every widget's state and the saved notebook hold none of it.

The notebook is run for real (nbclient, a real kernel of this Python); the servers are the
hostile ones of `tests/net/test_leaks.py`, whose 401 bodies quote the key they were sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from key_forms import KEY, assert_nowhere, echo_replies
from support.hostile import hostile_fixture

pytestmark = pytest.mark.kernel


hostile = hostile_fixture(echo_replies)


def test_widget_state_and_the_saved_notebook_hold_no_key(hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A notebook runs `show()`, a `ChatPanel`, a raising `arun()` and a key in `base_url` for
    real (nbclient, a real kernel); the key reaches the kernel in the environment, as a real one
    does, so no cell's code holds it. Then every widget's state and the saved notebook are searched."""
    import nbformat
    from kernels import kernel_env, kernel_manager
    from nbclient import NotebookClient

    for name, value in kernel_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SW_LEAK_KEY", KEY)
    state_file = tmp_path / "widget-state.json"
    url = hostile.url("echo/chat")
    cells = [
        "import os\nimport streamwidgets as sw\n"
        f"h = sw.show('hi', base_url={url!r}, model='m', api_key=os.environ['SW_LEAK_KEY'] + '\\n')\n"
        "state = await h\nprint(state.status, state.error.http_status)",
        f"panel = sw.ChatPanel(base_url={hostile.url('echo/messages')!r}, api='messages', model='m',\n"
        "                      api_key=os.environ['SW_LEAK_KEY'])\n"
        "display(panel)\nanswer = await panel.send('hi')\nprint(answer.status, repr(panel.chat.options))",
        "import streamwidgets\n"
        f"await streamwidgets.arun('hi', base_url={url!r}, model='m', api_key=os.environ['SW_LEAK_KEY'],\n"
        "                         raise_on_error=True)",
        "streamwidgets.make_request('hi', base_url='http://u:' + os.environ['SW_LEAK_KEY'] + '@127.0.0.1:9/v1')",
        "import ipywidgets, json\n"
        "states = json.dumps(ipywidgets.Widget.get_manager_state(drop_defaults=False))\n"
        f"n = open({str(state_file)!r}, 'w').write(states)\nprint(len(ipywidgets.Widget.widgets) > 5)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    NotebookClient(nb, km=kernel_manager(tmp_path), timeout=120, allow_errors=True).execute()
    saved = nbformat.writes(nb)
    outputs = [o for cell in nb.cells for o in cell.outputs]
    printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "error 401" in printed and "Secret('***')" in printed and "True" in printed, printed
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert [e["ename"] for e in errors] == ["HTTPStatusError", "ValueError"], errors
    widget_state = state_file.read_text()
    assert "Bad key: ***" in widget_state  # the problem box shows the provider's words, redacted
    assert_nowhere({"saved notebook": saved, "widget state": widget_state})
