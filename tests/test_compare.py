"""`compare()`: views side by side, a table that updates while they stream, a sparkline in each
usage meter — in a real kernel against the embedded provider; the sparkline and table, pure."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from classroom_harness import Kernel, running_kernel, sent_values
from test_kernel import WIDGET_MIMETYPE
from widget_harness import markup_problems

from streamwidgets.server import DemoServer, scripted_answer
from streamwidgets.widgets.compare import comparison_html
from streamwidgets.widgets.sparkline import TokenTrace, sparkline_svg


def test_the_trace_counts_tokens_per_100_ms_and_shows_a_stall():
    trace = TokenTrace()
    for i in range(10):  # 5 tokens every 50 ms for half a second
        trace.sample(1.0 + i * 0.05, 5 * (i + 1))
    trace.sample(2.55, 60)  # then a stall of a second, and a burst
    bins = trace.per_bin()
    assert sum(bins) == 60
    assert bins[:5] == [10, 10, 10, 10, 10] and set(bins[6:-1]) == {0} and bins[-1] == 10
    svg = sparkline_svg(bins)
    assert svg.startswith('<svg class="sw-sparkline"') and svg.count("M") == 6  # a bar per bin with tokens
    assert "about 10 tokens per 100 ms at the peak" in svg
    assert sparkline_svg([]) == "" and sparkline_svg([0, 0]) == ""
    long = sparkline_svg([1] * 1000)  # a long answer: bins merged, and said so
    assert long.count("M") <= 120 and "tokens per 900 ms" in long


def test_the_sparkline_is_the_only_svg_a_pane_may_hold_and_only_in_its_own_shape():
    assert markup_problems(sparkline_svg([1, 5, 2])) == []
    assert markup_problems('<svg class="sw-sparkline" onload="alert(1)"></svg>')
    assert markup_problems('<svg class="sw-sparkline"><script>alert(1)</script></svg>')
    assert markup_problems('<svg class="sw-sparkline"><path d="javascript:1"/></svg>')
    assert markup_problems('<svg class="sw-sparkline"><rect x="1"/></svg>')
    assert markup_problems('<svg class="sw-sparkline"><a href="javascript:alert(1)"><path d="M1 1"/></a></svg>')
    assert markup_problems("<svg><path d='M1 1'/></svg>")  # any other svg is still refused


def test_a_continue_part_adds_on_in_the_trace():
    trace = TokenTrace()
    trace.sample(0.0, 10)
    trace.sample(0.5, 3)  # the next part counts from zero again
    assert sum(trace.per_bin()) == 13


def test_the_table_escapes_what_the_stream_names():
    row = {c: "<img src=x onerror=alert(1)>" for c in ("model", "status", "first token", "tokens/s")}
    row.update({"output tokens": "1", "cost": "—", "finish": "stop", "tries": "1"})
    html = comparison_html([row])
    assert "<img" not in html and "&lt;img" in html


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, demo_server: DemoServer) -> Iterator[Kernel]:
    yield from running_kernel(tmp_path_factory.mktemp("kernel"), demo_server)


def _rows(html: str) -> list[list[str]]:
    body = html.split("<tbody>", 1)[1]
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]


def test_compare_streams_all_at_once_updates_its_table_and_ends_with_one_row_per_model(kernel: Kernel):
    since = time.monotonic()
    _, outputs, took = kernel.execute(
        "cmp = sw.compare('Explain recursion', ['demo-fast', 'demo', 'demo-deep'], base_url=BASE)"
    )
    assert took < 2.0
    displays = [m for m in outputs if m["msg_type"] == "display_data"]
    assert len(displays) == 1 and WIDGET_MIMETYPE in displays[0]["content"]["data"]
    time.sleep(1.0)
    live = kernel.value("[h.state.status for h in cmp.handles]")
    assert "streaming" in live  # all three run at once: the fast one is well under way
    table = kernel.value("cmp.table.model_id")
    states = kernel.value("[s.status for s in await cmp]")
    assert states == ["complete", "complete", "complete"]
    final = kernel.value(
        "[cmp.table.value, [h.text for h in cmp.handles], [h.view.usage.widget.value for h in cmp.handles],"
        " cmp.row.layout.flex_flow, [c.layout.flex for c in cmp.row.children]]"
    )
    html, texts, meters, flow, flex = final
    rows = _rows(html)
    assert [r[0] for r in rows] == ["demo-fast", "demo", "demo-deep"] and all(r[1] == "done" for r in rows)
    assert all(r[6] == "stop" for r in rows)
    for model, text in zip(["demo-fast", "demo", "demo-deep"], texts, strict=True):
        assert text == scripted_answer(model, "Explain recursion").text
    assert len(texts[0]) < len(texts[1]) < len(texts[2])  # the models differ in style...
    ttft = [float(r[2].split()[0]) / (1000 if r[2].endswith(" ms") else 1) for r in rows]
    assert max(ttft[0], ttft[1]) < ttft[2]  # ...and in pace (deep thinks a second longer)
    assert all('<svg class="sw-sparkline"' in meter for meter in meters)
    assert flow == "row wrap" and flex == ["1 1 240px"] * 3  # side by side, rows on a narrow screen
    sent = sent_values(kernel, table, since)
    assert len(sent) >= 3  # the table was redrawn while they streamed
    midway = [s for s in sent if "answering" in s]
    assert midway and any(len(_rows(s)) == 3 for s in midway)
    updates = [m for t, m in kernel.log if t >= since and m["msg_type"] == "update_display_data"]
    saved = updates[-1]["content"]["data"]["text/markdown"]
    assert saved.count("| demo") == 3 and "done" in saved  # a saved notebook keeps the table


def test_a_rate_limited_model_waits_in_its_own_view_while_the_others_stream(kernel: Kernel):
    kernel.execute(
        "cmp2 = sw.compare('Explain SSE (compare retry)', ['demo-fast', 'demo-ratelimit'], base_url=BASE,"
        " demo={'tokens_per_second': 400})"
    )
    deadline = time.monotonic() + 4
    header = ""
    while time.monotonic() < deadline and "retrying in" not in header:
        header = kernel.value("cmp2.handles[1].view.header.widget.value")
        time.sleep(0.1)
    assert "rate limited by the provider" in header
    rows = _rows(kernel.value("[s.status for s in await cmp2] and cmp2.table.value"))
    assert [r[1] for r in rows] == ["done", "done"] and [r[7] for r in rows] == ["1", "2"]
