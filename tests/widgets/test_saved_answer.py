"""What a notebook saves of a finished answer, and when it leaves the widget view out.

The browser test (`tests/browser/test_export_offline.py`) opens a runner's export offline; these
check the bundle itself: the HTML form holds the reasoning, the tool cards, the answer and the
sources, and a notebook runner (a request that allows no stdin) saves it without the widget view,
which an exported page could draw only with a widget manager from a CDN. Voila keeps it.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import pytest
from markdown_it import MarkdownIt
from widget_harness import markup_problems
from xss_payloads import PAYLOADS

from streamwidgets.core._events import (
    Citation,
    CitationsFound,
    Finish,
    ReasoningDelta,
    Terminator,
    TextDelta,
    ToolCallDelta,
)
from streamwidgets.core._state import StreamState
from streamwidgets.core._tools import ToolResult
from streamwidgets.markdown import fences_closed
from streamwidgets.widgets import StreamView
from streamwidgets.widgets._chat import _question_forms
from streamwidgets.widgets._fallback import WIDGET_MIMETYPE, final_bundle, keeps_widget
from streamwidgets.widgets._output import saves_as, tree_forms


def finished(*events: Any) -> StreamView:
    state = StreamState(model="m")
    state.begin(0.0)
    for event in events:
        state.apply(event, 0.1)
    state.close(now=0.2)
    return StreamView(state, model="m")


class Shell:
    """What `keeps_widget` reads of IPython's shell: the request the kernel is answering."""

    def __init__(self, allow_stdin: bool) -> None:
        self.request = {"header": {}, "metadata": {}, "content": {"allow_stdin": allow_stdin}}

    def get_parent(self) -> dict[str, Any]:
        return self.request


def test_the_html_form_holds_the_reasoning_the_cards_the_answer_and_the_sources_in_order():
    first = StreamState(model="m")
    first.begin(0.0)
    for event in (ReasoningDelta("Think about *weather*."), ToolCallDelta(0, "c1", "get_weather", '{"city": "Paris"}')):
        first.apply(event, 0.1)
    first.apply(Finish("tool_calls"), 0.2)
    first.apply(Terminator(), 0.2)
    first.close(now=0.2)
    first.tool_calls[0].result = ToolResult("done", content='{"sky": "overcast"}', seconds=0.003)
    second = first.next_part()
    source = Citation("https://example.org/weather", "Weather in Paris")
    for answered in (CitationsFound((source,)), TextDelta("It is overcast [1]."), Finish("stop"), Terminator()):
        second.apply(answered, 1.0)
    second.close(now=1.1)
    view = StreamView(second, model="m", citation_markers=True)
    view.refresh(1.1)
    html = final_bundle(view, "m")["text/html"]
    order = [
        "sw-static-reasoning",
        "<em>weather</em>",
        "get_weather()",
        "overcast",
        "It is overcast",
        "Weather in Paris",
    ]
    at = [html.find(piece) for piece in order]
    assert -1 not in at and at == sorted(at), list(zip(order, at, strict=True))
    assert 'href="https://example.org/weather"' in html and "sw-static-status" in html
    assert markup_problems(html) == []


@pytest.mark.parametrize("payload", PAYLOADS)
def test_hostile_reasoning_and_sources_stay_text_in_the_saved_html(payload: str):
    view = finished(
        ReasoningDelta(payload),
        CitationsFound((Citation(payload, payload), Citation("https://ok.example/", payload))),
        TextDelta(payload),
        Finish("stop"),
        Terminator(),
    )
    html = final_bundle(view, payload, widget=False)["text/html"]
    assert "sw-static-reasoning" in html and "sw-static-sources" in html
    assert markup_problems(html) == []


def test_an_answer_without_reasoning_or_sources_saves_neither_block():
    html = final_bundle(finished(TextDelta("Plain."), Finish("stop"), Terminator()), "m")["text/html"]
    assert "Plain." in html and "sw-static-reasoning" not in html and "sw-static-sources" not in html


def test_a_notebook_runner_saves_the_answer_without_the_widget_view(monkeypatch: pytest.MonkeyPatch):
    view = finished(TextDelta("Hi."), Finish("stop"), Terminator())
    assert WIDGET_MIMETYPE in final_bundle(view, "m")
    alone = final_bundle(view, "m", widget=False)
    assert WIDGET_MIMETYPE not in alone and {"text/plain", "text/markdown", "text/html"} <= set(alone)
    monkeypatch.delenv("SERVER_SOFTWARE", raising=False)
    monkeypatch.delenv("VOILA_PREHEAT", raising=False)
    assert keeps_widget(Shell(allow_stdin=True))  # JupyterLab, Notebook 7, VS Code
    assert not keeps_widget(Shell(allow_stdin=False))  # nbconvert --execute, papermill, Jupyter Book
    assert keeps_widget(object())  # no request to read: keep it
    # Voila runs a notebook as a runner does, and draws its widgets live: a kernel it started...
    monkeypatch.setenv("VOILA_PREHEAT", "False")
    assert keeps_widget(Shell(allow_stdin=False))
    # ... or one that says only which server it answers (the CGI-style variable Voila sets)
    monkeypatch.delenv("VOILA_PREHEAT")
    monkeypatch.setenv("SERVER_SOFTWARE", "voila/0.5.8")
    assert keeps_widget(Shell(allow_stdin=False))


def as_a_lax_renderer_reads_it(markdown: str) -> str:
    """The markdown form rendered as nbconvert's filter or markdown-it with `html=True` would:
    raw HTML passed through."""
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_tool_call_cannot_open_a_fence_that_lets_the_answers_html_out_of_the_saved_markdown(payload: str):
    """The tool loop's lines come before the answer in the markdown form. A call whose arguments
    hold a fence would open it there, the answer's own fence would close it, and what the answer
    kept as code (raw HTML, inside its fence) would be read as HTML: those lines are plain text."""
    fenced = f"```\n{payload}\n```\n"
    view = finished(
        ToolCallDelta(0, "c1", "look", '{"q": 1}\n```\n'),
        ToolCallDelta(1, "c2", "look", '{"q": "~~~"}\n~~~\n'),
        TextDelta(fenced + f"~~~\n{payload}\n~~~\n{payload}"),
        Finish("tool_calls"),
        Terminator(),
    )
    markdown = final_bundle(view, "m", widget=False)["text/markdown"]
    assert markdown.count("look") == 2 and "about" in markdown
    assert markup_problems(as_a_lax_renderer_reads_it(markdown)) == []


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("box", [w.VBox, w.HBox, w.Tab])
def test_answers_saved_together_hold_no_raw_html_from_the_model(payload: str, box: Any):
    """Answers saved together (a chat's transcript, views in a box, a comparison): a fence one
    answer leaves open cannot pair with the next answer's first fence and turn its code into HTML."""
    question = w.HTML()
    saves_as(question, lambda: _question_forms(f"<b>again</b> {payload}"))
    first = finished(TextDelta(f"{payload}\n\n```\n"), Finish("stop"), Terminator())
    second = finished(TextDelta(f"```\n{payload}\n```\n{payload}"), Finish("stop"), Terminator())
    for view in (first, second):
        saves_as(view.widget, lambda view=view: final_bundle(view, "m", widget=False))
    markdown = tree_forms(box([first.widget, question, second.widget]))["text/markdown"]
    assert markdown.count("*m · done") == 2 and "**You:**" in markdown
    assert markup_problems(as_a_lax_renderer_reads_it(markdown)) == []


def test_a_fence_left_open_is_closed_where_documents_are_joined():
    assert fences_closed("a\n```py\nx = 1\n") == "a\n```py\nx = 1\n```"
    assert fences_closed("~~~~\ncode") == "~~~~\ncode\n~~~~"
    assert fences_closed("```\nx\n```\n") == "```\nx\n```\n"  # closed already: as it was
    assert fences_closed("no fence") == "no fence"
