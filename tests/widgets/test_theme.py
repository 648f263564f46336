"""Every text colour of the view reaches WCAG AA (4.5:1) in JupyterLab's light and dark themes,
and with the sheet's own fallbacks where a frontend defines no `--jp-*` variables (Colab, VS
Code), computed from the CSS itself.

The theme variables come from the themes JupyterLab installs (the files a notebook page loads);
the colours from our stylesheet, rule by rule, resolved through `var(--name, fallback)` chains
the way the browser does, with translucent colours laid over what is behind them. A rule that
sets a colour is checked against its own background, or the page's.

Code highlighting is not checked here: in JupyterLab it takes the editor's own token colours
(`--jp-mirror-editor-*`), so that code in an answer looks like code in a cell.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

from streamwidgets.widgets._sheet import stylesheet
from streamwidgets.widgets._theme import scale_class, scale_widget

THEMES = Path(sys.prefix) / "share" / "jupyter" / "lab" / "themes" / "@jupyterlab"
DARK_SELECTOR = 'body[data-jp-theme-light="false"]'

RGBA = tuple[float, float, float, float]


# --------------------------------------------------------------------------- colour arithmetic


def luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG 2.x relative luminance of an sRGB colour (channels 0-255)."""

    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def over(top: RGBA, below: tuple[float, float, float]) -> tuple[float, float, float]:
    """`top` (maybe translucent) as drawn over the opaque `below`."""
    *rgb, alpha = top
    return (
        rgb[0] * alpha + below[0] * (1 - alpha),
        rgb[1] * alpha + below[1] * (1 - alpha),
        rgb[2] * alpha + below[2] * (1 - alpha),
    )


NAMED = {
    "white": (255.0, 255.0, 255.0, 1.0),
    "black": (0.0, 0.0, 0.0, 1.0),
    "transparent": (0.0, 0.0, 0.0, 0.0),
    "green": (0.0, 128.0, 0.0, 1.0),  # the CSS named colours Lab's themes use
    "red": (255.0, 0.0, 0.0, 1.0),
    "blue": (0.0, 0.0, 255.0, 1.0),
}


def parse_colour(text: str) -> RGBA:
    text = text.strip().lower()
    if text in NAMED:
        return NAMED[text]
    if text.startswith("#"):
        digits = text[1:]
        if len(digits) in (3, 4):
            digits = "".join(d * 2 for d in digits)
        channels = [int(digits[i : i + 2], 16) for i in range(0, len(digits), 2)]
        alpha = channels[3] / 255 if len(channels) == 4 else 1.0
        return (float(channels[0]), float(channels[1]), float(channels[2]), alpha)
    found = re.fullmatch(r"rgba?\(([^)]*)\)", text)
    if found:
        parts = [p for p in re.split(r"[\s,/]+", found.group(1)) if p]
        alpha = float(parts[3]) if len(parts) == 4 else 1.0
        return (float(parts[0]), float(parts[1]), float(parts[2]), alpha)
    raise ValueError(f"not a colour this test knows: {text!r}")


def test_the_arithmetic_matches_wcag_s_own_figures():
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((118, 118, 118), (255, 255, 255)) == pytest.approx(4.54, abs=0.01)  # #767676, the AA grey
    assert contrast((245, 124, 0), (255, 255, 255)) < 3  # Lab's own warning orange fails on white
    assert over((0, 0, 0, 0.54), (255, 255, 255)) == pytest.approx((117.3, 117.3, 117.3))
    assert parse_colour("rgba(0,0,0,.87)") == (0, 0, 0, 0.87) and parse_colour("#fff") == (255, 255, 255, 1)


# --------------------------------------------------------------------------- CSS, as the browser reads it


def split_var(expr: str) -> tuple[str, str | None, str]:
    """`var(--a, fallback) rest` → ("--a", "fallback", " rest"), with nested parentheses."""
    assert expr.startswith("var(")
    depth, i = 0, 3
    while True:
        ch = expr[i]
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            break
        i += 1
    inside, rest = expr[4:i], expr[i + 1 :]
    name, _, fallback = inside.partition(",")
    return name.strip(), (fallback.strip() if _ else None), rest


def resolve(expr: str, variables: dict[str, str], depth: int = 0) -> str:
    """Substitute `var()` the way the browser does: the variable's value, else the fallback."""
    assert depth < 20, expr
    expr = expr.strip()
    out = ""
    while "var(" in expr:
        start = expr.index("var(")
        out += expr[:start]
        name, fallback, expr = split_var(expr[start:])
        value = variables.get(name)
        if value is None:
            assert fallback is not None, f"{name} is not set and has no fallback"
            value = fallback
        out += resolve(value, variables, depth + 1)
    return (out + expr).strip()


def rules(css: str) -> list[tuple[str, dict[str, str]]]:
    """(selector, declarations) of every plain rule (at-rules and keyframes left out)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"@(keyframes|media)[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    found = []
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        declarations = {}
        for declaration in body.split(";"):
            name, colon, value = declaration.partition(":")
            if colon:
                declarations[name.strip()] = value.strip()
        found.append((" ".join(selector.split()), declarations))
    return found


def theme_variables(name: str) -> dict[str, str]:
    path = THEMES / f"theme-{name}-extension" / "index.css"
    if not path.exists():
        pytest.fail(
            f"JupyterLab's {name} theme is not installed at {path}: install the dev extras (`pip install -e .[dev]`)"
        )
    return dict(re.findall(r"(--jp-[\w-]+)\s*:\s*([^;}]+)", path.read_text(encoding="utf-8")))


@dataclass
class Context:
    """Where the view is drawn: the theme's variables, the page's background and text colour,
    and whether the sheet's dark rules apply."""

    name: str
    variables: dict[str, str]
    page: str
    text: str
    dark: bool
    own: dict[str, str] = field(default_factory=dict)

    def colour(self, expr: str) -> RGBA:
        value = resolve(expr, {**self.variables, **self.own})
        if value in ("inherit", "currentcolor", "currentColor"):
            value = self.text
        return parse_colour(value)

    @property
    def background(self) -> tuple[float, float, float]:
        return over(self.colour(self.page), (255, 255, 255))


@cache
def sheet() -> list[tuple[str, dict[str, str]]]:
    """Our stylesheet's rules, parsed once, when a test first asks (nothing runs at import)."""
    return rules(stylesheet())


def own_variables(dark: bool) -> dict[str, str]:
    """The sheet's own custom properties (`--sw-*`) as they stand in a light or dark page."""
    found: dict[str, str] = {}
    for selector, declarations in sheet():
        base = selector in (".sw-view, .sw-chat", ".sw-md")
        if base or (dark and selector.startswith(DARK_SELECTOR)):
            found.update({k: v for k, v in declarations.items() if k.startswith("--sw-")})
    return found


def make_contexts() -> list[Context]:
    light, dark = theme_variables("light"), theme_variables("dark")
    made = [
        Context("JupyterLab Light", light, "var(--jp-layout-color0)", "var(--jp-content-font-color1)", False),
        Context("JupyterLab Dark", dark, "var(--jp-layout-color0)", "var(--jp-content-font-color1)", True),
        # No `--jp-*` at all (Colab, VS Code): the sheet's fallbacks, on a light and a dark page.
        Context("no theme variables, light page", {}, "#ffffff", "#1f1f1f", False),
        Context("no theme variables, dark page", {}, "#1e1e1e", "#cccccc", True),
    ]
    for context in made:
        context.own = own_variables(context.dark)
    return made


#: The contexts' names, known at collection; the contexts themselves are read when a test runs
#: (the `contexts` fixture), so that a theme missing from the install fails these tests, not the
#: collection of every other one.
CONTEXT_NAMES = [
    "JupyterLab Light",
    "JupyterLab Dark",
    "no theme variables, light page",
    "no theme variables, dark page",
]


@pytest.fixture(scope="module")
def contexts() -> dict[str, Context]:
    made = {context.name: context for context in make_contexts()}
    assert list(made) == CONTEXT_NAMES
    return made


def problem_tints() -> list[str]:
    """Backgrounds that rules lay their text on when the rule itself sets none."""
    return [d["background"] for s, d in sheet() if s.startswith(".sw-kind-")]


#: Highlighted code tokens (`.sw-md pre .k`): the editor's colours, see the module's docstring.
TOKEN = re.compile(r" pre \.\w+$")


def text_pairs(context: Context) -> list[tuple[str, float]]:
    """(what, contrast) for every rule that colours text, on what it sits on."""
    pairs = []
    page = context.background
    for selector, declarations in sheet():
        colour = declarations.get("color")
        if colour is None or selector.startswith(DARK_SELECTOR) or TOKEN.search(selector):
            continue
        alpha = float(declarations.get("opacity", "1"))
        backgrounds = [declarations.get("background", declarations.get("background-color"))]
        if backgrounds == [None] and ".sw-problem-box" in selector:
            backgrounds = problem_tints()
        for background in backgrounds:
            behind = page if background is None else over(context.colour(background), page)
            r, g, b, a = context.colour(colour)
            drawn = over((r, g, b, a * alpha), behind)
            pairs.append((f"{selector} on {background or 'the page'}", contrast(drawn, behind)))
    return pairs


def test_the_sheet_colours_the_text_we_mean_to_check(contexts: dict[str, Context]):
    """The parser sees the rules that matter (a renamed class must not silently drop a check)."""
    selectors = {what.split(" on ")[0] for what, _ in text_pairs(contexts[CONTEXT_NAMES[0]])}
    for needed in (
        ".sw-view",
        ".sw-badge",
        ".sw-reasoning",
        ".sw-header-line",
        ".sw-status-complete",
        ".sw-status-incomplete",
        ".sw-status-error",
        ".sw-problem-box, .sw-problem-box *",
    ):
        assert needed in selectors, needed
    for part in (".sw-answer a", ".sw-view .sw-answer pre", ".sw-status-answering"):
        assert any(part in selector for selector in selectors), part
    assert len(problem_tints()) == 3


@pytest.mark.parametrize("name", CONTEXT_NAMES)
def test_every_text_colour_reaches_aa_contrast(contexts: dict[str, Context], name: str):
    context = contexts[name]
    failing = [(what, round(ratio, 2)) for what, ratio in text_pairs(context) if ratio < 4.5]
    assert failing == [], f"below 4.5:1 in {context.name}"


@pytest.mark.parametrize("name", CONTEXT_NAMES)
def test_status_colours_reach_aa_and_differ_from_the_body_text(contexts: dict[str, Context], name: str):
    """The phase is told by its word, but its colour must be readable too."""
    context = contexts[name]
    page = context.background
    body = over(context.colour(context.text), page)
    for status in ("--sw-live", "--sw-ok", "--sw-warn", "--sw-error"):
        drawn = over(context.colour(f"var({status})"), page)
        assert contrast(drawn, page) >= 4.5, (status, context.name, round(contrast(drawn, page), 2))
        assert drawn != body


def test_a_scale_is_one_small_rule_shared_by_the_kernel():
    assert scale_class(1.5) == "sw-scale-150" and scale_class(0.75) == "sw-scale-75"
    widget = scale_widget(1.5)
    assert widget is scale_widget(1.5) and widget is not scale_widget(2)
    assert widget.value == "<style>.sw-scale-150 { --sw-scale: 1.5; }</style>"
    for bad in (0, 0.2, 5, float("nan")):
        with pytest.raises(ValueError, match=r"scale must be between 0\.5 and 4"):
            scale_class(bad)
    # every size in the sheet follows the scale: no text is sized in bare pixels
    sizes = [d["font-size"] for _, d in sheet() if "font-size" in d]
    assert sizes and all("var(--sw-" in size or size.endswith("em") or size == "inherit" for size in sizes), sizes
