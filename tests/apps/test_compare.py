"""`compare()`'s pure parts: the sparkline in each usage meter and the table. The views side by
side, streaming in a real kernel, are `tests/kernel/test_classroom.py`."""

from __future__ import annotations

from markdown_it import MarkdownIt
from widget_harness import markup_problems

from streamwidgets.apps._compare import comparison_html, comparison_markdown
from streamwidgets.widgets._sparkline import TokenTrace, sparkline_svg


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


def test_the_saved_markdown_table_keeps_what_the_stream_names_inert():
    """The table's `text/markdown` form, read by a renderer that passes raw HTML through: a model's
    name or a finish reason with HTML, a link, a newline or a `|` stays text in its own cell."""
    hostile = ["<img src=x onerror=alert(1)>", '<a href="javascript:alert(1)">x</a>', "[x](javascript:alert(1))"]
    rows = [dict.fromkeys(("model", "status", "first token", "tokens/s", "output tokens", "cost", "tries"), "1")]
    rows = [{**rows[0], "model": bad, "finish": f"stop\n| a | b |\n{bad}"} for bad in hostile]
    markdown = comparison_markdown(rows)
    assert len(markdown.splitlines()) == 2 + len(hostile)  # a row per model: the newline did not split one
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    assert rendered.count("<tr>") == 1 + len(hostile) and markup_problems(rendered) == []
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered and "javascript:" not in rendered.split("href")[0]
