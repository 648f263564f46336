"""The internals of other libraries that the renderer relies on, checked directly.

`IncrementalMarkdown` drives markdown-it-py's block parser itself (a `StateBlock` over the tail,
the line marks, the reference definitions it leaves in `env`, the core rules after `block`), the
healer drives its inline parser, sealed code lines run Pygments' `RegexLexer` loop themselves,
and the probes take Python's regexes apart with `re`'s own parser and compiler. None of that is
public API. When an upgrade changes it, these tests fail first, each saying what changed, before
the property tests fail in ways that are hard to read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import OptionsDict
from pygments.lexer import RegexLexer

from streamwidgets.markdown._highlight import Spans, highlight, lexer_for, role
from streamwidgets.markdown._lexing import Resumable, _probe_of, _starts_of, sre_compile, sre_parse
from streamwidgets.markdown._parser import new_parser

FIXTURES = Path(__file__).parent / "markdown_fixtures"


def _md() -> MarkdownIt:
    return new_parser()


# --------------------------------------------------------------------------------- markdown-it-py


def test_a_state_block_over_a_tail_tokenizes_with_line_marks() -> None:
    md = _md()
    src = "para\n\n- item\n"
    env: dict[str, object] = {"references": {}}
    tokens: list[Token] = []
    state = StateBlock(src, md, env, tokens)
    assert (state.line, state.lineMax) == (0, 3), "StateBlock no longer starts at line 0 of its src"
    md.block.tokenize(state, state.line, state.lineMax)
    assert [t.type for t in tokens][:3] == ["paragraph_open", "inline", "paragraph_close"], "block.tokenize"
    assert tokens[0].map == [0, 1] and tokens[3].map == [2, 3], "top-level tokens lost their `map` line ranges"
    assert all(hasattr(t, attr) for t in tokens for attr in ("level", "nesting")), "token level/nesting"
    assert state.bMarks[2] == src.index("- item") and state.eMarks[2] == len(src) - 1, "bMarks/eMarks changed"
    assert state.isEmpty(1) and not state.isEmpty(0), "StateBlock.isEmpty changed"


def test_reference_definitions_are_left_in_env_with_their_lines() -> None:
    md = _md()
    src = "[a]: /first 'T'\n\ntext\n\n[a]: /second\n"
    env: dict[str, object] = {"references": {}}
    md.block.tokenize(StateBlock(src, md, env, []), 0, src.count("\n"))
    references = env["references"]
    assert isinstance(references, dict) and set(references) == {"A"}, "env['references'] keys (normalized labels)"
    assert references["A"] == {"title": "T", "href": "/first", "map": [0, 1]}, (
        "a definition in env['references'] no longer holds exactly href, title and its `map` line range"
    )
    duplicates = env.get("duplicate_refs")
    assert isinstance(duplicates, list) and [d["map"] for d in duplicates] == [[4, 5]], (
        "a repeated definition is no longer listed in env['duplicate_refs'] with its `map`"
    )


def test_inline_links_look_definitions_up_with_get_only() -> None:
    """`_LookupRecorder` stands in for env["references"] and sees every label asked for."""

    class Recorder:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def get(self, label: str, default: object = None) -> object:
            self.asked.append(label)
            return {"href": "/u", "title": ""} if label == "A" else default

    md = _md()
    recorder = Recorder()
    html = md.render("[a] and [b] and ![a]", {"references": recorder})
    assert recorder.asked.count("A") == 2 and "B" in recorder.asked, "links no longer ask env['references'].get"
    assert 'href="/u"' in html


def test_the_core_rules_after_block_run_on_a_state_of_ready_block_tokens() -> None:
    md = _md()
    names = md.core.ruler.get_active_rules()
    rules = md.core.ruler.getRules("")
    assert len(names) == len(rules), "core ruler: get_active_rules() and getRules('') no longer line up"
    assert names.index("block") < names.index("inline") < names.index("sw_citations") < names.index("text_join"), (
        f"core rule order changed: {names}"
    )
    tokens: list[Token] = []
    env: dict[str, object] = {"references": {}}
    md.block.tokenize(StateBlock("*em*\n", md, env, tokens), 0, 1)
    state = StateCore("", md, env, tokens)
    for rule in rules[names.index("block") + 1 :]:
        rule(state)
    assert md.renderer.render(state.tokens, md.options, env) == "<p><em>em</em></p>\n", (
        "running the core rules after `block` on a StateCore no longer renders the inline content"
    )


def test_the_fence_renderer_asks_highlight_for_the_content_and_wraps_it() -> None:
    md = _md()
    asked: list[tuple[str, str, str]] = []

    def ask(code: str, lang: str, attrs: str) -> str:
        asked.append((code, lang, attrs))
        return ""

    tokens: list[Token] = []
    md.block.parse("```python  {.x}\nx = 1\n```\n", md, {}, tokens)
    fence = tokens[0]
    assert (fence.type, fence.markup, fence.content, fence.map) == ("fence", "```", "x = 1\n", [0, 3]), "fence token"
    options = OptionsDict({**dict(md.options), "highlight": ask})  # type: ignore[typeddict-item]
    empty = md.renderer.render([fence.copy(content="")], options, {})
    assert asked == [("", "python", "{.x}")], "the fence renderer no longer calls highlight(content, lang, attrs)"
    assert empty == '<pre><code class="language-python"></code></pre>\n', (
        "the fence renderer no longer wraps code as <pre><code class=...>...</code></pre>\\n"
    )


def test_the_healer_reads_the_inline_parsers_delimiters() -> None:
    md = _md()
    tokens: list[Token] = []
    state = StateInline("**open and *em", md, {}, tokens)
    md.inline.tokenize(state)
    openers = [d for d in state.delimiters if d.open]
    assert [chr(d.marker) for d in openers] == ["*", "*", "*"], "StateInline.delimiters (open, marker) changed"
    assert all(state.tokens[d.token].type == "text" for d in openers), "a delimiter's `token` index changed"
    assert "fragments_join" in md.inline.ruler2.get_active_rules(), "inline ruler2 lost fragments_join"


# --------------------------------------------------------------------------------- Pygments

#: The languages answers use most whose lexers run Pygments' own loop.
RESUMABLE = ["python", "js", "ts", "html", "xml", "css", "bash", "sql", "rust", "go", "java", "kotlin", "toml", "diff"]


def _corpus() -> str:
    """Every code block of the fixtures, and this file: code of many kinds, in one text."""
    blocks = re.findall(r"^```\w*\n(.*?)^```", "".join(p.read_text() for p in FIXTURES.glob("*.md")), re.M | re.S)
    return "".join(blocks) + Path(__file__).read_text()


@pytest.mark.parametrize("lang", RESUMABLE)
def test_the_resumable_loop_is_pygments_regex_lexer_loop(lang: str) -> None:
    lexer = lexer_for(lang)
    assert lexer is not None
    run = Resumable.of(lexer)
    assert run is not None, f"{type(lexer).__name__} no longer runs RegexLexer's loop unchanged"
    assert isinstance(lexer._tokens, dict) and all(  # type: ignore[attr-defined]
        isinstance(rule, tuple) and len(rule) == 3 and callable(rule[0])
        for rules in lexer._tokens.values()  # type: ignore[attr-defined]
        for rule in rules
    ), "RegexLexer._tokens is no longer {state: [(match, action, new_state), ...]}"
    text = _corpus()
    tokens, _, _ = run.lex(text)
    assert tokens == list(lexer.get_tokens_unprocessed(text)), (
        f"RegexLexer.get_tokens_unprocessed changed: Resumable.lex no longer gives its tokens for {lang}"
    )
    # Stopped and resumed at every line start, it gives the same tokens again.
    again, pos, stack = [], 0, ("root",)
    for end in [m.end() for m in re.finditer("\n", text)] + [None]:  # type: ignore[list-item]
        more, pos, stack = run.lex(text, pos, stack, stop=end)
        again += more
    assert again == tokens, f"lexing {lang} in pieces from saved states differs from one pass"


@pytest.mark.parametrize("lang", [*RESUMABLE, "json", "c"])
def test_highlight_is_pygments_own_highlight(lang: str) -> None:
    """`highlight` runs our loop where it can (it tries fewer rules): the spans are Pygments'
    own, for texts with CRs and a BOM too (Pygments changes those before lexing)."""
    lexer = lexer_for(lang)
    assert lexer is not None
    for text in (_corpus(), "\ufeff" + _corpus()[:2000], _corpus()[:2000].replace("\n", "\r\n")):
        spans = Spans()
        for ttype, value in lexer.get_tokens(text):
            spans.add(role(ttype), value)
        assert highlight(text, lang, "") == spans.html(), f"highlight({lang}) is not Pygments' tokens"


@pytest.mark.parametrize(
    ("pattern", "flags", "starts"),
    [
        (r"abc", 0, ("a", False)),
        (r"abc", re.I, ("Aa", True)),  # ignoring case: a non-ASCII letter may fold to it
        (r"(?i:k)x", 0, ("Kk", True)),  # a scoped flag
        (r"[0-9a-f]+", 0, ("0123456789abcdef", False)),
        (r"[^\n]", 0, None),  # almost anything: tried at every character but the newline
        (r"\s+", 0, (" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f", True)),
        (r"(?=\d)\w+", 0, (None, True)),  # a lookahead is passed over: \w+ says what may start
        (r"\b(if|in)\b", 0, ("i", False)),
        (r"x?y", 0, ("xy", False)),
        (r"x*", 0, None),  # may match empty: tried at every character
        (r"(a)\1", 0, ("a", False)),
        (r"(a)?\1b", 0, None),  # a backreference may come first: anything
        (r"", 0, None),
    ],
)
def test_a_rule_is_tried_only_at_characters_it_can_start_with(pattern: str, flags: int, starts: object) -> None:
    found = _starts_of(re.compile(pattern, flags).match)
    if starts is None:
        assert found is None or (len(found[0]) > 100 and found[1]), (pattern, found)
        return
    chars, other = starts  # type: ignore[misc]
    assert found is not None, pattern
    if chars is None:  # \w: letters, digits and _
        chars = "".join(c for c in map(chr, range(128)) if re.match(r"\w", c))
    assert ({chr(code) for code in found[0]}, found[1]) == (set(chars), other), pattern
    for code in range(128):  # never too few: a match starting with a character left out fails
        assert code in found[0] or not re.compile(pattern, flags).match(chr(code) + "xyz0 f\n" * 2), (pattern, code)


def test_only_regex_lexers_with_pygments_loop_are_resumed() -> None:
    json, c = lexer_for("json"), lexer_for("c")
    assert json is not None and c is not None
    assert not isinstance(json, RegexLexer) and Resumable.of(json) is None
    assert "get_tokens_unprocessed" in type(c).__dict__ or any(
        "get_tokens_unprocessed" in k.__dict__ for k in type(c).__mro__[1:] if k is not RegexLexer
    ), "the C lexer no longer has a loop of its own: it could be resumed now"
    assert Resumable.of(c) is None


# --------------------------------------------------------------------------------- re's parser


def test_re_parses_and_compiles_a_rewritten_tree() -> None:
    parsed = sre_parse.parse(r"(a)\s*$", re.M)
    assert [op for op, _ in parsed.data][:2] == [sre_parse.SUBPATTERN, sre_parse.MAX_REPEAT], "re's parse tree"
    state = sre_parse.State()
    state.flags = parsed.state.flags
    group = state.opengroup()
    state.closegroup(group, sre_parse.SubPattern(state, []))
    tree = [(sre_parse.SUBPATTERN, (group, 0, 0, sre_parse.SubPattern(state, parsed.data[1:])))]
    compiled = sre_compile.compile(sre_parse.SubPattern(state, tree), re.M)
    assert compiled.match("  \n").group(1) == "  \n", "re's compiler no longer compiles a parse tree made by hand"


@pytest.mark.parametrize(
    ("pattern", "flags", "text", "pos", "reaches"),
    [
        (r'"""(?:.|\n)*?"""', 0, '"""open\n', 0, True),  # a docstring not closed yet: may close later
        (r'"""(?:.|\n)*?"""', 0, '"""closed""" more """\n', 0, False),  # lazy: decided at its close
        (r"/\*.*?\*/", re.S, "/** doc\n * more\n", 0, True),
        (r"\s+", 0, "x  \n", 1, True),  # whitespace running to the end may run on
        (r"\s+", 0, "  x\n", 0, False),
        (r"(def)((?:\s|\\\s)+)", 0, "def\n", 0, True),
        (r"(def)((?:\s|\\\s)+)", 0, "def f\n", 0, False),
        (r"a(?!\s*b)", 0, "a  \n", 0, True),  # a negative lookahead that read to the end
        (r"a$", 0, "a\n", 0, True),  # `$` without MULTILINE looks past the last newline
    ],
)
def test_a_probe_tells_whether_an_attempt_reached_the_end(pattern: str, flags: int, text: str, pos: int, reaches: bool):
    probe = _probe_of(re.compile(pattern, flags).match)
    assert probe is not None, f"{pattern!r} should be probed: it can read past its line"
    assert probe.reaches_end(text, pos) is reaches, f"probe of {pattern!r} on {text!r}"


def test_rules_that_stay_on_their_line_are_not_probed() -> None:
    for pattern in (r"#.*$", r"[a-zA-Z_]\w*", r"'[^'\n]*'", r"[^\S\n]+"):
        assert _probe_of(re.compile(pattern, re.M).match) is None, pattern
