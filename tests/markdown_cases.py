"""What the markdown tests stream: the fixture documents, random documents from the block
grammar, the ways to cut a text into pieces, and the check that feeding it piece by piece keeps
the patches and the segments in step.

Shared by the renderer's tests (`tests/markdown/`) and the pane's (`tests/widgets/`), so it lives
at the top of `tests/`, importable by name from every folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from streamwidgets.markdown import IncrementalMarkdown, render_markdown

FIXTURES = sorted((Path(__file__).parent / "markdown" / "markdown_fixtures").glob("*.md"))
FIXTURE_TEXTS = {path.stem: path.read_text(encoding="utf-8") for path in FIXTURES}


def slow(examples: int) -> settings:
    """Rendering is slow next to what hypothesis expects of a test, and machines are shared."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def stream(
    text: str,
    cuts: Sequence[int],
    *,
    citations: Optional[Sequence[str]] = None,
    check_exact: bool = False,
) -> IncrementalMarkdown:
    """Feed `text` in pieces ending at `cuts`, checking the patches (and, if asked, each render)."""
    im = IncrementalMarkdown(citations)
    mirror = list(im.segments)
    for cut in cuts:
        prefix = text[:cut]
        im.update(prefix).apply(mirror)
        assert mirror == list(im.segments)
        if check_exact and im.exact:
            assert im.html == render_markdown(prefix, citations), f"after {cut} of {len(text)} chars"
    im.finish(text).apply(mirror)
    assert mirror == list(im.segments)
    return im


def cuts_from_sizes(text: str, sizes: Sequence[int]) -> list[int]:
    cuts, position, i = [], 0, 0
    while position < len(text):
        position = min(len(text), position + sizes[i % len(sizes)])
        cuts.append(position)
        i += 1
    return cuts


# --------------------------------------------------------------------------------- random documents

_INLINE = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "alpha",
                "beta",
                "x",
                "foo",
                "[foo]",
                "[Foo][]",
                "[l](/u)",
                "`c`",
                "*e*",
                "**s**",
                "_u_",
                "~~d~~",
                "a*b",
                "<b>",
                "&amp;",
                "\\*",
                "[1]",
                "[2]",
                "ü",
                "日本",
                "<http://a.b>",
                "![i](/p.png)",
                "[x][bar]",
            ]
        ),
        st.text(alphabet="*_`[]()#>-|!\\~<:&=+.1 ", min_size=1, max_size=4),
    ),
    min_size=1,
    max_size=7,
).map(" ".join)


@st.composite
def _paragraph(draw: st.DrawFn) -> str:
    return "\n".join(draw(st.lists(_INLINE, min_size=1, max_size=3)))


@st.composite
def _heading(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return "#" * draw(st.integers(1, 7)) + " " + draw(_INLINE)
    return draw(_INLINE) + "\n" + draw(st.sampled_from(["=", "-"])) * draw(st.integers(1, 4))


@st.composite
def _list(draw: st.DrawFn) -> str:
    marker = draw(st.sampled_from(["-", "*", "+", "1.", "2)", "10."]))
    lines = []
    for i in range(draw(st.integers(1, 5))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 3, 4]))
        mark = marker if not marker[0].isdigit() else f"{i + 1}{marker[-1]}"
        task = draw(st.sampled_from(["", "", "[ ] ", "[x] "]))
        lines.append(f"{indent}{mark} {task}{draw(_INLINE)}")
        if draw(st.integers(0, 4)) == 0:
            lines.append(draw(st.sampled_from(["", "  "])) + draw(_INLINE))  # lazy or continued
        if draw(st.integers(0, 4)) == 0:
            lines.append("")  # makes the list loose
    return "\n".join(lines)


@st.composite
def _fence(draw: st.DrawFn) -> str:
    char = draw(st.sampled_from(["`", "~"]))
    size = draw(st.integers(3, 5))
    indent = " " * draw(st.integers(0, 3))
    info = draw(st.sampled_from(["", "python", "js", "nosuchlang", "py {x}", '"><x>']))
    body = draw(st.lists(st.sampled_from(["x = 1", "  y()", "", "```", "~~~", "# c", "'''s", "<b>"]), max_size=5))
    out = [indent + char * size + info, *body]
    closing = draw(st.sampled_from(["same", "longer", "shorter", "none"]))
    if closing != "none":
        length = {"same": size, "longer": size + 1, "shorter": size - 1}[closing]
        out.append(" " * draw(st.integers(0, 3)) + char * length)
    return "\n".join(out)


@st.composite
def _table(draw: st.DrawFn) -> str:
    cols = draw(st.integers(1, 3))
    rows = [
        "| " + " | ".join(draw(st.sampled_from(["a", "b c", "`|`", "\\|", "*e*", ""])) for _ in range(cols)) + " |"
        for _ in range(draw(st.integers(1, 4)))
    ]
    delimiter = (
        "|"
        + "|".join(
            draw(st.sampled_from(["---", ":-", "-:", ":-:"]))
            for _ in range(draw(st.sampled_from([cols, cols, cols + 1])))
        )
        + "|"
    )
    return "\n".join([rows[0], delimiter, *rows[1:]])


@st.composite
def _quote(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        prefix = draw(st.sampled_from(["> ", ">", "> > ", ""]))
        lines.append(prefix + draw(_INLINE))
    return "\n".join(lines)


@st.composite
def _refdef(draw: st.DrawFn) -> str:
    label = draw(st.sampled_from(["foo", "Foo", "bar", "l", "1", "x"]))
    url = draw(st.sampled_from(["/u", "https://e.com/a", "<https://e.com/b c>", "javascript:x", "data:,x"]))
    title = draw(st.sampled_from(["", ' "t"', " 't'", " (t)", ' "multi\nline"', " 'open"]))
    return f"[{label}]: {url}{title}"


_BLOCK = st.one_of(
    _paragraph(),
    _heading(),
    _list(),
    _fence(),
    _table(),
    _quote(),
    _refdef(),
    st.sampled_from(["---", "***", "- - -", "    indented code", "<div>\nraw html\n</div>", "", ">", "-", "1."]),
    st.text(alphabet="*_`[]()#>-|=~:!\\ 1.\t", max_size=10),
)


@st.composite
def markdown_documents(draw: st.DrawFn) -> str:
    blocks = draw(st.lists(_BLOCK, min_size=1, max_size=8))
    separators = draw(st.lists(st.sampled_from(["\n", "\n\n", "\n\n\n"]), min_size=len(blocks), max_size=len(blocks)))
    return "".join(b + s for b, s in zip(blocks, separators, strict=True))[: -1 if draw(st.booleans()) else None]
