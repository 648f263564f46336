"""Answers survive execution by a notebook runner and export (that their markdown form is inert
is `tests/markdown/test_static.py`).

The runners are the real command lines (`python -m nbconvert --execute`, `python -m papermill`),
each starting a real kernel of this Python; the executed notebook is then exported with
nbconvert's HTML and markdown exporters, as Jupyter Book and course sites publish it. What each
test looks for is the answer's last words, taken from the same demo answer streamed here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import streamwidgets as sw
from streamwidgets.widgets._fallback import WIDGET_MIMETYPE

pytestmark = pytest.mark.kernel

FAST = {"tokens_per_second": 400}
SHOW = "h{n} = sw.show({prompt!r}, model={model!r}, demo={fast!r})"
PROMPTS = {
    "awaited": ("Explain recursion", "demo"),
    "never": ("How does binary search work?", "demo"),
    "failed": ("How does Python's asyncio event loop work?", "demo-error"),
}


def last_words(prompt: str, model: str) -> str:
    """The last three words of the answer the demo streams for `prompt` (its answers are fixed)."""
    state = sw.run(prompt, model=model, demo=FAST)
    words = state.text.split()[-3:]
    assert words and all(re.fullmatch(r"[\w,.;:!?-]+", word) for word in words), words  # as plain in every form
    return " ".join(words)


def make_notebook(path: Path, cells: list[str]) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = {"name": "sw-export", "display_name": "streamwidgets export", "language": "python"}
    nbformat.write(nb, str(path))
    return path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A kernelspec of this very Python, found by both runners, in an isolated Jupyter home."""
    home = tmp_path_factory.mktemp("runner")
    spec = home / "data" / "kernels" / "sw-export"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "sw", "language": "python"}))
    here = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ,
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }


def execute(runner: str, notebook: Path, env: dict[str, str]) -> Any:
    import nbformat

    out = notebook.with_name(f"{notebook.stem}.{runner}.ipynb")
    if runner == "nbconvert":
        command = [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", str(notebook)]
        command += ["--output", out.name]
    else:
        command = [sys.executable, "-m", "papermill", "--kernel", "sw-export", str(notebook), str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240, cwd=notebook.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return nbformat.read(str(out), as_version=4)


def widget_texts(nb: Any) -> str:
    """Every string value of the saved widget state, joined: what a widget renderer would show."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return "\n".join(str(model["state"].get("value", "")) for model in state.values())


def exports(nb: Any) -> dict[str, str]:
    """The notebook as HTML (with and without its widget state, as GitHub shows most) and markdown."""
    import copy

    from nbconvert import HTMLExporter, MarkdownExporter

    bare = copy.deepcopy(nb)
    bare.metadata.pop("widgets", None)
    return {
        "html": HTMLExporter().from_notebook_node(nb)[0],
        "html without widget state": HTMLExporter().from_notebook_node(bare)[0],
        "markdown": MarkdownExporter().from_notebook_node(bare)[0],
    }


@pytest.mark.parametrize("runner", ["nbconvert", "papermill"])
def test_answers_are_saved_in_the_cell_that_showed_them(runner: str, tmp_path: Path, env: dict[str, str]):
    """`show()` in one cell, `await` in a later one; one stream never awaited; one that fails."""
    cells = [f"import streamwidgets as sw\n{SHOW.format(n=0, prompt=PROMPTS['awaited'][0], model='demo', fast=FAST)}"]
    cells.append(SHOW.format(n=1, prompt=PROMPTS["never"][0], model="demo", fast=FAST))
    cells.append(SHOW.format(n=2, prompt=PROMPTS["failed"][0], model="demo-error", fast=FAST))
    cells.append("s0 = await h0\ns2 = await h2\nprint(s0.status, s2.status)")
    nb = execute(runner, make_notebook(tmp_path / "course.ipynb", cells), env)
    assert nb.cells[3].outputs[0]["text"] == "complete error\n"
    published = exports(nb)
    widgets = widget_texts(nb)
    for cell, name in enumerate(PROMPTS):
        [output] = nb.cells[cell].outputs
        data = output["data"]
        assert WIDGET_MIMETYPE not in data  # a runner saves the answer alone: offline pages show it
        words = last_words(*PROMPTS[name])
        for mimetype in ("text/markdown", "text/html"):
            assert words in data[mimetype], (name, mimetype)
        assert words in widgets, name  # the widget state reached its last frame
        for form, text in published.items():
            assert words in text, (name, form)
    failed = nb.cells[2].outputs[0]["data"]
    reason = "The provider reported an error: The model stopped unexpectedly"
    assert reason in failed["text/plain"] and reason in failed["text/html"]
    assert "demo-error · error" in failed["text/plain"]
    assert reason in published["html without widget state"] and reason in published["markdown"]
    assert "sw-status-complete" in widgets and "sw-status-error" in widgets
    assert "waiting for the first token</span>" not in widgets
    # The saved status regions say how each answer ended, not the phase before (`show()` says the
    # end a second after the final update live; under a runner with it).
    said = re.findall(r'\.sw-said::after\{content:"([^"]*)"\}', widgets)
    assert len(said) == 3 and "answering" not in said, said
    assert sum(s.startswith("answer complete, ") for s in said) == 2, said
    assert sum(s.startswith("answer failed") for s in said) == 1, said


def test_a_stream_still_running_when_the_run_ends_says_so(tmp_path: Path, env: dict[str, str]):
    cells = [
        "import streamwidgets as sw\n"
        "h = sw.show('Write a long tutorial on asyncio', model='demo-long', demo={'tokens_per_second': 20})"
    ]
    nb = execute("nbconvert", make_notebook(tmp_path / "ends.ipynb", cells), env)
    data = nb.cells[0].outputs[0]["data"]
    assert "Still streaming when its cell ended" in data["text/plain"]
    assert "Still streaming when its cell ended" in exports(nb)["html without widget state"]


def test_an_answer_that_ends_between_two_cells_is_still_saved(
    tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
):
    """A runner reads nobody's messages between two cells (papermill writes the notebook there);
    an answer ending then is sent again, with its widgets' state, when the next cell starts."""
    import time

    from nbclient import NotebookClient

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    prompt, model = PROMPTS["awaited"]
    cells = [
        f"import streamwidgets as sw\nh = sw.show({prompt!r}, model={model!r}, demo={{'tokens_per_second': 1000}})",
        "print(h.done)",
    ]
    import nbformat

    nb = nbformat.read(str(make_notebook(tmp_path / "gap.ipynb", cells)), as_version=4)
    gap = lambda **_: time.sleep(2.5)  # noqa: E731 — the pause between cells
    NotebookClient(nb, kernel_name="sw-export", timeout=120, on_cell_executed=gap).execute()
    assert nb.cells[1].outputs[0]["text"] == "True\n"  # it ended in the gap, before cell 2
    data = nb.cells[0].outputs[0]["data"]
    words = last_words(prompt, model)
    assert words in data["text/markdown"] and "Still streaming" not in data["text/plain"]
    assert words in widget_texts(nb) and "sw-status-complete" in widget_texts(nb)


#: Answers placed by the caller (`display=False`) in every kind of box, a comparison and a chat.
PLACED = [
    "import ipywidgets as widgets\nfrom IPython.display import display\nimport streamwidgets as sw\n"
    f"FAST = {FAST!r}\n"
    "row = [sw.show(q, demo=FAST, display=False) for q in ('Explain recursion', 'How does binary search work?')]\n"
    "display(widgets.HBox([h.view.widget for h in row]))",
    "grid = [sw.show('What is the water cycle?', demo=FAST, display=False)]\n"
    "layout = widgets.Layout(grid_template_columns='repeat(2, 1fr)')\n"
    "widgets.GridBox([widgets.HTML('<h3>Our <b>grid</b></h3>'), grid[0].view.widget], layout=layout)",
    "tabs = [sw.show('What is Big-O notation?', demo=FAST, display=False)]\n"
    "widgets.Tab([widgets.VBox([tabs[0].view.widget])], titles=['Big-O'])",
    "cmp = sw.compare('Explain recursion', ['demo-fast', 'demo'], demo=FAST)",
    "panel = sw.ChatPanel(demo=FAST)\npanel",
    "chat = panel.send('How does binary search work?')",
    "for h in (*row, *grid, *tabs, chat):\n    await h\nawait cmp\nprint('ended')",
]


@pytest.mark.parametrize("runner", ["nbconvert"])
def test_answers_placed_in_boxes_compared_or_chatted_are_saved_in_the_output_that_shows_them(
    runner: str, tmp_path: Path, env: dict[str, str]
):
    nb = execute(runner, make_notebook(tmp_path / "placed.ipynb", PLACED), env)
    assert nb.cells[-1].outputs[-1]["text"] == "ended\n"
    published = exports(nb)
    recursion = last_words("Explain recursion", "demo")
    search = last_words("How does binary search work?", "demo")

    def saved(cell: int) -> dict[str, str]:
        [output] = [o for o in nb.cells[cell].outputs if o["output_type"] in ("display_data", "execute_result")]
        data = output["data"]
        assert WIDGET_MIMETYPE not in data  # a runner saves the forms alone: offline pages show them
        assert "text/html" in data and "sw-static" in data["text/html"]
        assert "streaming" not in data["text/plain"], data["text/plain"]
        return data

    row = saved(0)
    assert recursion in row["text/html"] and search in row["text/html"]
    assert row["text/html"].count('class="sw-static"') == 2 and "flex-flow:row wrap" in row["text/html"]
    grid = saved(1)["text/html"]
    assert last_words("What is the water cycle?", "demo") in grid
    assert "grid-template-columns:repeat(2, 1fr)" in grid
    assert "<p>Our grid</p>" in grid  # the caller's own HTML widget, as its text
    tab = saved(2)["text/html"]
    assert '<h4 class="sw-static-title">Big-O</h4>' in tab and last_words("What is Big-O notation?", "demo") in tab
    compared = saved(3)
    html = compared["text/html"]
    assert html.count('class="sw-static"') == 2 and recursion in html
    assert "sw-compare-table" in html and "waiting" not in html
    assert html.count(">done</td>") == 2, html[html.index("sw-compare-table") :]
    assert "| demo-fast | done |" in compared["text/markdown"]
    chatted = saved(4)["text/html"]
    assert "<strong>You:</strong> How does binary search work?" in chatted and search in chatted
    assert "sw-status-complete" in widget_texts(nb)
    table = [m for m in widget_texts(nb).split("\n") if "sw-compare-table" in m]
    assert table and ">done</td>" in table[-1] and "waiting" not in table[-1]  # the table's last state
    for words in (recursion, search):
        assert words in published["html"] and words in published["markdown"]
