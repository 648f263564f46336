"""Sealed code lines: an open fence's complete lines are lexed once, and every render stays exact.

The law of `test_markdown` holds for code too (after `finish`, and whenever `exact`, the segments
join to `render_markdown` of the text so far), checked here on code soups in many languages: lines
that open and close multi-line strings, comments and heredocs, streamed in random pieces. Apart
from that, the work: each complete line is lexed once, a fence that closes is not lexed again, and
a decision that depended on the end of the text (a comment not yet closed) is taken again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_markdown import WORDS_RE, cuts_from_sizes, slow, stream

from streamwidgets.markdown import CODE_CHUNK_CLASS, IncrementalMarkdown, render_markdown
from streamwidgets.markdown._highlight import highlight, lexer_for
from streamwidgets.markdown._lexing import Resumable
from streamwidgets.markdown._sealed import SealedCode

#: Lines that open, continue and close what spans lines, per language.
SOUP = {
    "python": [
        '"""',
        "'''",
        'x = """a',
        'b"""',
        "# c",
        "def",
        "def f(x):",
        "    return x",
        "\\",
        'f"{x}"',
        "",
        "    ",
        "class A:",
        "s = 'a",
        "r'''raw",
        "@dec",
        "  '''doc'''",
        "from a import (b,",
        "  c)",
        '"\\',
        "x = 1 \\",
        '"""doc"""  # c',
        "match x:",
        "    case 1:",
    ],
    "js": [
        "/*",
        "*/",
        "/** doc",
        " * x",
        "`",
        "${a}",
        "`${",
        "}`",
        "// c",
        "x = /re/g;",
        "a = b / c;",
        "function f() {",
        "}",
        "",
        '"str',
        "let t = `a",
        "b`;",
        "<!--",
        "x = 1 /* c */ + 2;",
    ],
    "html": [
        "<!--",
        "-->",
        '<div class="a">',
        "</div>",
        "<script>",
        "</script>",
        "var x = 1;",
        "<style>",
        "a { color: red }",
        "</style>",
        "text &amp; more",
        "<p",
        'id="x">',
        "",
        "<![CDATA[",
        "]]>",
    ],
    "rust": [
        "/*",
        "*/",
        "/* /* nested */",
        'r#"raw',
        '"#;',
        "fn main() {",
        "}",
        "// c",
        'let s = "a',
        'b";',
        "'a'",
        "",
    ],
    "go": ["/*", "*/", "`raw", "string`", "func main() {", "}", "// c", 'x := "a"', "", "import (", ")"],
    "bash": [
        "cat <<EOF",
        "EOF",
        'echo "a',
        'b"',
        "echo 'x",
        "y'",
        "# c",
        "x=$(ls",
        ")",
        "\\",
        "for i in 1; do",
        "done",
    ],
    "sql": ["/*", "*/", "SELECT *", "FROM t WHERE a = 'x", "y';", "-- c", "", "CREATE TABLE t (", ");"],
    "css": ["/*", "*/", "a {", "}", "  color: red;", "@media (x) {", '"str', "", "url(", ")"],
    "java": ["/**", " * doc", " */", "class A {", "}", 'String s = "a";', '"""', "text block", ""],
    "toml": ["[a]", 'b = """', "c", '"""', "d = '''", "'''", "", "x = 1"],
    "json": ["{", "}", '"a": 1,', '"b":', '"c"', "[1, 2", "]", ""],
    "c": ["/*", "*/", "#include <x.h>", "int main() {", "}", '"str', "// c \\", "x", ""],
    "yaml": ["a: 1", "b: |", "  text", "- x", '"q', "", "# c"],
}


@st.composite
def code_soup(draw: st.DrawFn) -> tuple[str, str]:
    lang = draw(st.sampled_from(sorted(SOUP)))
    lines = draw(st.lists(st.sampled_from(SOUP[lang]), min_size=1, max_size=16))
    return lang, "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@contextmanager
def lexed_characters(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Count the characters of the tokens lexed: by sealing passes and by everything else."""
    counts = {"sealing": 0, "other": 0}
    real = Resumable.lex

    def counting(self: Resumable, text: str, *args: object, **kwargs: object) -> object:
        result = real(self, text, *args, **kwargs)  # type: ignore[arg-type]
        counts["sealing" if kwargs.get("hazards") is not None else "other"] += sum(len(t[2]) for t in result[0])
        return result

    with monkeypatch.context() as patched:  # counting stops with the block (`highlight` runs this loop too)
        patched.setattr(Resumable, "lex", counting)
        yield counts


# --------------------------------------------------------------------------------- exactness


@slow(300)
@given(soup=code_soup(), groups=st.lists(st.integers(0, 3), min_size=1, max_size=20), data=st.data())
def test_sealed_code_is_exactly_the_whole_highlight(soup: tuple[str, str], groups: list[int], data: st.DataObject):
    """Lines taken a few at a time (and unfinished lines shown between) give `highlight` exactly,
    for the code so far at any point and for anything that goes on from it."""
    lang, code = soup
    sealed = SealedCode(lang)
    lines = code.splitlines(keepends=True)
    complete = [line for line in lines if line.endswith("\n")]
    taken, i = 0, 0
    while taken < len(complete):
        count = max(1, groups[i % len(groups)])
        i += 1
        sealed.extend("".join(complete[taken : taken + count]))
        taken += count
        so_far = "".join(complete[:taken])
        rest = "".join(lines[taken:])
        if rest:
            sealed.partial(rest.split("\n")[0][: data.draw(st.integers(0, 12))])
        if data.draw(st.booleans()):
            assert sealed.html(so_far) == highlight(so_far, lang, ""), so_far
    assert sealed.html(code) == highlight(code, lang, ""), code


@slow(150)
@given(
    soup=code_soup(),
    where=st.sampled_from(["top", "list", "quote", "two"]),
    closed=st.booleans(),
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=20),
)
def test_code_soup_streams_exactly(soup: tuple[str, str], where: str, closed: bool, sizes: list[int]) -> None:
    """A fence at the top level, in a list item, in a quote, or twice; streamed in pieces, checked
    at every step where the render is exact."""
    lang, code = soup
    body = code if code.endswith("\n") else code + "\n"
    fence = f"```{lang}\n{body}" + ("```\n" if closed else "")
    text = {
        "top": f"Intro.\n\n{fence}\nAfter.\n",
        "list": "- step\n\n" + "".join(f"  {line}\n" for line in fence.splitlines()),
        "quote": "".join(f"> {line}\n" for line in fence.splitlines()),
        "two": f"{fence}\n" + (f"```{lang}\n{body}```\n" if closed else ""),
    }[where]
    im = stream(text, cuts_from_sizes(text, sizes), check_exact=True)
    assert im.html == render_markdown(text)


@pytest.mark.parametrize("lang", sorted(SOUP))
def test_every_soup_line_streamed_char_by_char(lang: str) -> None:
    code = "\n".join(SOUP[lang]) + "\n"
    text = f"```{lang}\n{code}```\n\nAfter.\n"
    im = stream(text, range(1, len(text) + 1), check_exact=True)
    assert im.html == render_markdown(text)


# --------------------------------------------------------------------------------- the work


def _long_python(lines: int) -> str:
    body = []
    for i in range(lines // 4):
        body += [f"def function_{i}(x):", f'    """Line {i} of a docstring."""', f"    return x * {i}  # c", ""]
    return "\n".join(body) + "\n"


def test_each_complete_line_is_lexed_once_and_a_closed_fence_not_again(monkeypatch: pytest.MonkeyPatch) -> None:
    code = _long_python(2000)
    text = "Intro.\n\n```python\n" + code + "```\n\nAfter.\n"
    closing = text.index("```\n\nAfter")
    tokens = WORDS_RE.findall(text)
    with lexed_characters(monkeypatch) as counts:
        im = IncrementalMarkdown()
        position = 0
        for token in tokens:
            position += len(token)
            if position >= closing:
                break
            im.update(text[:position])
        sealed_before_close = counts["sealing"]
        other_before_close = counts["other"]
        im.finish(text)
    assert im.html == render_markdown(text)
    # Sealing lexes each line once (the newline a pass leaves is taken by the next one).
    assert len(code) * 0.95 < sealed_before_close <= len(code) + 1
    # The unfinished last line is lexed again per update: never more than that line.
    longest = max(len(line) for line in code.splitlines()) + 1
    assert other_before_close <= len(tokens) * longest
    # Closing the fence lexed nothing sealed again: at most the last line or two.
    assert counts["sealing"] + counts["other"] - sealed_before_close - other_before_close < 4 * longest


def test_a_long_code_fence_costs_one_lexing_not_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamed 50 words per update, all the lexing adds up to about one pass over the code
    (before sealing: the chunks, then the whole fence again when it closed)."""
    code = "".join(f"def function_{i}(x):  # line {i}\n    return x * {i}\n" for i in range(1000))
    text = "Intro.\n\n```python\n" + code + "```\n\nAfter.\n"
    tokens = WORDS_RE.findall(text)
    with lexed_characters(monkeypatch) as counts:
        im = IncrementalMarkdown()
        position, saw_chunks, patch_bytes = 0, False, 0
        for i in range(0, len(tokens), 50):
            position += sum(len(t) for t in tokens[i : i + 50])
            patch = im.update(text[:position])
            patch_bytes += sum(len(s) for s in patch.segments)
            saw_chunks = saw_chunks or any(CODE_CHUNK_CLASS in s for s in im.segments)
        im.finish(text)
    assert saw_chunks and CODE_CHUNK_CLASS not in im.html
    assert im.html == render_markdown(text)
    assert counts["sealing"] + counts["other"] < 1.2 * len(code)
    assert patch_bytes < 3 * len(im.html)  # each chunk sent once, the whole fence once: linear


def test_a_comment_closed_lines_later_is_lexed_again_from_where_it_opened() -> None:
    """Until `*/` comes, `/**` may be a division and a multiplication; when it comes, the lines
    from the comment's piece on are lexed again, and their chunks sent again, as one."""
    opening = "let a = 1;\n/**\n * Adds numbers.\n"
    im = IncrementalMarkdown()
    im.update("```js\n" + opening)
    chunks = len(im.segments) - 1
    patch = im.update("```js\n" + opening + " */\nlet b = 2;\n")
    assert patch.start < chunks  # an earlier chunk was sent again
    comment = "".join(im.segments)
    assert re.search(r'<span class="c">/\*\*\n \* Adds numbers.\n \*/</span>', comment), comment
    text = "```js\n" + opening + " */\nlet b = 2;\n```\n"
    im.finish(text)
    assert im.html == render_markdown(text)


@pytest.mark.parametrize("lang", ["json", "c", "yaml"])
def test_lexers_with_a_loop_of_their_own_are_highlighted_whole(lang: str) -> None:
    lexer = lexer_for(lang)
    assert lexer is not None and Resumable.of(lexer) is None
    code = "\n".join(SOUP[lang]) + "\n"
    text = f"```{lang}\n{code}```\n"
    assert stream(text, range(1, len(text) + 1), check_exact=True).html == render_markdown(text)


def test_a_fence_in_a_list_item_is_not_lexed_from_the_top_on_every_update(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fence inside a list item is re-rendered with its item while it grows; its code is
    highlighted from where the last render left off."""
    code = _long_python(400)
    text = "1. Run this:\n\n   ```python\n" + "".join(f"   {line}\n" for line in code.splitlines()) + "   ```\n"
    stream(text, cuts_from_sizes(text, [40]), check_exact=True)  # (its checks lex too: not counted)
    with lexed_characters(monkeypatch) as counts:
        im = stream(text, cuts_from_sizes(text, [40]))
    assert im.html == render_markdown(text)
    assert counts["sealing"] + counts["other"] < 3 * len(code)  # not once per update (~100x)
