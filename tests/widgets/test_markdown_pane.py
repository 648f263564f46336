"""`MarkdownPane`: real widget state, and the bytes its comm messages would put on the wire.

No kernel is needed: `comm.create_comm` (the hook the `comm` package provides for kernels) is
replaced by a comm that records every message. A message is counted the way ipykernel's `Comm`
publishes it: the JSON of its content (`data`, `comm_id`, and for `comm_open` the target) plus
its metadata, plus a fixed 500 bytes for the Jupyter envelope (header, parent header, signature,
delimiters) — an honest lower bound of what the browser receives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import comm
import ipywidgets as w
import pytest
from comm.base_comm import BaseComm
from html_audit import audit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_cases import FIXTURE_TEXTS, cuts_from_sizes, markdown_documents, slow
from xss_payloads import PAYLOADS

from streamwidgets.markdown import CODE_CHUNK_CLASS, MARKDOWN_CLASS, IncrementalMarkdown, render_markdown
from streamwidgets.widgets._markdown_pane import MarkdownPane

ENVELOPE = 500
WORDS_RE = re.compile(r"\s*\S{1,8}|\s+")  # about one LLM token each


@dataclass
class Message:
    msg_type: str
    comm_id: str
    data: dict[str, Any]
    size: int


class Wire:
    """Every comm message widgets published while installed, sized as on the wire."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> Wire:
        wire = self

        class RecordingComm(BaseComm):
            def publish_msg(
                self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
            ) -> None:
                content = {"data": data or {}, "comm_id": self.comm_id, **keys}
                size = len(json.dumps(content, ensure_ascii=False).encode()) + len(json.dumps(metadata or {}).encode())
                wire.messages.append(Message(msg_type, self.comm_id, data or {}, size + ENVELOPE))

        monkeypatch.setattr(comm, "create_comm", RecordingComm)
        return self

    @property
    def bytes(self) -> int:
        return sum(m.size for m in self.messages)

    def clear(self) -> None:
        self.messages.clear()

    def children_lengths(self) -> list[int]:
        return [
            len(m.data["state"]["children"])
            for m in self.messages
            if m.msg_type == "comm_msg" and "children" in m.data.get("state", {})
        ]


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    return Wire().install(monkeypatch)


def frames(text: str, tokens_per_update: int) -> Iterator[str]:
    pieces = WORDS_RE.findall(text)
    end = 0
    for i in range(0, len(pieces), tokens_per_update):
        end += sum(len(p) for p in pieces[i : i + tokens_per_update])
        yield text[:end]


def answer(tokens: int) -> str:
    """A long realistic answer: the complete fixture documents, over and over."""
    parts = [
        FIXTURE_TEXTS[name]
        for name in (
            "tutorial_answer",
            "big_mixed",
            "reasoning",
            "tables",
            "loose_lists",
            "code_fences",
            "blockquotes",
            "task_lists",
            "unicode",
            "citations",
            "emphasis_edge",
        )
    ]
    out: list[str] = []
    count, i = 0, 0
    while count < tokens:
        out.append(parts[i % len(parts)])
        count += len(WORDS_RE.findall(parts[i % len(parts)]))
        i += 1
    text = "\n\n".join(out)
    pieces = WORDS_RE.findall(text)
    return "".join(pieces[:tokens])


def stream_through(pane: MarkdownPane, text: str, tokens_per_update: int = 50) -> None:
    for frame in frames(text, tokens_per_update):
        if frame != text:
            pane.update(frame)
    pane.finish(text)


def html_widgets(pane: MarkdownPane) -> list[w.HTML]:
    return [child for page in pane.widget.children for child in page.children]


_VOID = frozenset({"br", "hr", "img", "input"})


class _Balance(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        """`<br />`, `<img ... />`: nothing to close."""

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"unexpected </{tag}> with {self.stack}")
        else:
            self.stack.pop()


def balanced(markup: str) -> bool:
    """Every element opened in `markup` is closed in it: each widget is a well-formed fragment."""
    parser = _Balance()
    parser.feed(markup)
    parser.close()
    return not parser.problems and not parser.stack


# --------------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("name", sorted(FIXTURE_TEXTS))
@pytest.mark.parametrize("tokens_per_update", [1, 7, 50])
def test_fixture_through_the_pane_is_exact(wire: Wire, name: str, tokens_per_update: int) -> None:
    text = FIXTURE_TEXTS[name]
    pane = MarkdownPane(seal_at=256)  # seal often, so that many widgets take part
    for frame in frames(text, tokens_per_update):
        pane.update(frame)
        assert all(balanced(widget.value) for widget in html_widgets(pane))
    pane.finish(text)
    assert pane.html == render_markdown(text)
    assert "".join(widget.value for widget in html_widgets(pane)) == pane.html
    assert all(balanced(widget.value) for widget in html_widgets(pane))


@settings(slow(150), suppress_health_check=[*slow(1).suppress_health_check, HealthCheck.function_scoped_fixture])
@given(
    text=markdown_documents(),
    sizes=st.lists(st.integers(1, 30), min_size=1, max_size=10),
    seal_at=st.sampled_from([1, 40, 200, None]),
    page_size=st.integers(1, 4),
    events=st.lists(st.sampled_from(["cite", "uncite", "restart"]), max_size=3),
)
def test_random_documents_through_the_pane_match_the_renderer_at_every_step(
    wire: Wire, text: str, sizes: list[int], seal_at: int, page_size: int, events: list[str]
) -> None:
    pane = MarkdownPane(seal_at=seal_at, page_size=page_size)
    citations = None
    for i, cut in enumerate(cuts_from_sizes(text, sizes)):
        pane.update(text[:cut])
        if events and i % 3 == 1:
            event = events.pop()
            if event == "restart":
                pane.update("# A new start\n\n")
                pane.update(text[:cut])
            else:
                citations = ["https://one.example", "https://two.example"] if event == "cite" else None
                pane.set_citations(citations)
        widgets = html_widgets(pane)
        # the widgets show exactly the renderer's segments (reaching into the pane's renderer)
        assert pane.html == pane._markdown.html == "".join(widget.value for widget in widgets)
        assert all(balanced(widget.value) for widget in widgets)
        assert all(len(page.children) <= page_size for page in pane.widget.children)
    pane.finish(text)
    assert pane.html == render_markdown(text, citations)


def test_long_answer_through_the_pane_is_exact_and_paged(wire: Wire) -> None:
    text = answer(20_000)
    pane = MarkdownPane(page_size=8)
    stream_through(pane, text)
    assert pane.html == render_markdown(text)
    pages = pane.widget.children
    assert len(pages) > 2 and all(isinstance(page, w.VBox) and len(page.children) <= 8 for page in pages)
    widgets = html_widgets(pane)
    assert len({id(widget.layout) for widget in widgets}) == 1  # one shared Layout ...
    assert len({id(widget.style) for widget in widgets}) == 1  # ... and one shared HTMLStyle
    assert {MARKDOWN_CLASS, "sw-answer"} <= set(pane.widget._dom_classes)


def test_citations_through_the_pane(wire: Wire) -> None:
    text = FIXTURE_TEXTS["citations"]
    urls = ["https://a.example/1", "https://b.example/2", "https://c.example/3"]
    pane = MarkdownPane(citations=urls[:1], seal_at=128)
    stream_through(pane, text, 5)
    pane.set_citations(urls)
    assert pane.html == render_markdown(text, urls)
    wire.clear()
    pane.set_citations(urls)
    assert wire.messages == []


def test_text_that_is_not_an_extension_starts_over(wire: Wire) -> None:
    pane = MarkdownPane(seal_at=64)
    stream_through(pane, FIXTURE_TEXTS["tutorial_answer"], 9)
    pane.update("A different answer\n\n- with a list")
    assert pane.html == render_markdown("A different answer\n\n- with a list")
    assert all(balanced(widget.value) for widget in html_widgets(pane))


# --------------------------------------------------------------------------------- code fences


def test_open_fence_shows_chunks_then_one_exact_block(wire: Wire) -> None:
    code = "".join(f"def f{i}(x):\n    return x + {i}  # {i}\n" for i in range(300))
    text = "Here it is:\n\n```python\n" + code + "```\n\nDone.\n"
    pane = MarkdownPane(seal_at=1024)
    widest = 0
    saw_chunks = False
    for frame in frames(text, 50):
        pane.update(frame)
        widest = max(widest, len(html_widgets(pane)))
        saw_chunks = saw_chunks or CODE_CHUNK_CLASS in pane.html
    assert saw_chunks and widest > 3
    closes_before = sum(m.msg_type == "comm_close" for m in wire.messages)
    pane.finish(text)
    assert pane.html == render_markdown(text)
    assert CODE_CHUNK_CLASS not in pane.html
    fence_widgets = [widget for widget in html_widgets(pane) if "<pre>" in widget.value]
    assert len(fence_widgets) == 1 and fence_widgets[0].value.count("<pre>") == 1  # one block again
    assert sum(m.msg_type == "comm_close" for m in wire.messages) >= closes_before


# --------------------------------------------------------------------------------- the wire


def test_a_new_widget_opens_one_comm(wire: Wire) -> None:
    pane = MarkdownPane(seal_at=64)
    wire.clear()
    before = len(html_widgets(pane))
    stream_through(pane, FIXTURE_TEXTS["tutorial_answer"], 20)
    created = len(html_widgets(pane)) - before
    opened = [m for m in wire.messages if m.msg_type == "comm_open"]
    closed = [m for m in wire.messages if m.msg_type == "comm_close"]
    pages = len(pane.widget.children) - 1
    assert created > 3
    assert len(opened) - len(closed) == created + pages  # no Layout or HTMLStyle per widget


def test_an_unchanged_text_sends_nothing(wire: Wire) -> None:
    pane = MarkdownPane()
    pane.update("# Title\n\nSome text")
    wire.clear()
    pane.update("# Title\n\nSome text")
    assert wire.messages == []
    pane.update("# Title\n\nSome text ")  # renders the same
    assert wire.messages == []


def test_a_frame_costs_one_message_except_when_sealing(wire: Wire) -> None:
    text = answer(3_000)
    pane = MarkdownPane()
    wire.clear()
    per_frame = []
    for frame in frames(text, 50):
        start = len(wire.messages)
        pane.update(frame)
        per_frame.append(len(wire.messages) - start)
    assert max(per_frame) <= 4
    assert sorted(per_frame)[len(per_frame) // 2] == 1  # the median frame: one value update


def test_children_lists_sent_stay_short(wire: Wire) -> None:
    pane = MarkdownPane(page_size=16)
    stream_through(pane, answer(40_000))
    pages = len(pane.widget.children)
    assert pages > 4
    root_sends = [n for n in wire.children_lengths() if n > 16]
    # Pages hold at most 16 widgets; only the root's list of pages is longer, and it is sent
    # once per new page.
    assert all(n <= pages for n in root_sends) and len(root_sends) <= pages


def test_bytes_per_markdown_byte_are_flat_and_far_below_naive(wire: Wire) -> None:
    ratios = {}
    for tokens in (2_000, 20_000):
        text = answer(tokens)
        wire.clear()
        stream_through(MarkdownPane(), text)
        ratios[tokens] = wire.bytes / len(text.encode())
    naive = w.HTML()
    text = answer(20_000)
    renderer = IncrementalMarkdown()  # the same HTML as render_markdown(frame) when exact, faster
    wire.clear()
    for frame in frames(text, 50):
        renderer.update(frame)
        naive.value = renderer.html if renderer.exact else render_markdown(frame)
    naive_ratio = wire.bytes / len(text.encode())
    # Measured ~10x for this markup-dense answer (its HTML is 1.9x its markdown): 50 tokens are
    # ~280 bytes of markdown per frame, and a frame's message costs ~630 bytes before its value,
    # so envelopes alone are ~2.3x and the HTML once ~1.9x. Naive is ~350x.
    assert ratios[20_000] < 12
    assert ratios[2_000] < 1.5 * ratios[20_000] + 1
    assert naive_ratio > 20 * ratios[20_000]


# --------------------------------------------------------------------------------- safety


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_streamed_through_the_pane_stay_inert(wire: Wire, payload: str) -> None:
    text = f"{payload}\n\n```\n{payload}\n```\n\n- {payload}\n"
    pane = MarkdownPane(citations=["javascript:alert(1)", "https://ok.example"], seal_at=32)
    for frame in frames(text, 1):
        pane.update(frame)
        for widget in html_widgets(pane):
            assert audit(widget.value) == []
    pane.finish(text)
    assert audit(pane.html) == []
    assert pane.html == render_markdown(text, ["javascript:alert(1)", "https://ok.example"])


def test_close_closes_every_comm(wire: Wire) -> None:
    pane = MarkdownPane(seal_at=64)
    stream_through(pane, FIXTURE_TEXTS["big_mixed"], 20)
    opened = {m.comm_id for m in wire.messages if m.msg_type == "comm_open"}
    pane.close()
    closed = {m.comm_id for m in wire.messages if m.msg_type == "comm_close"}
    assert opened <= closed
