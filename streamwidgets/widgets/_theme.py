"""The view's look: one stylesheet, written only in JupyterLab's `--jp-*` theme variables.

Styling through the theme variables (with neutral fallbacks for frontends that do not define them,
such as Colab) keeps the view readable in light and dark themes without a frontend build. The sheet
travels in an `HTML` widget that every view and panel includes among its children, so that it
reaches Voila and VS Code too and survives when another cell's output is cleared.

This module sits at the bottom of the folder, under the panes: it holds the rules every part shares
and the chat panel's; each pane's own rules live in its module, and `_sheet.py` (above the pane
table) puts the whole sheet together.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import ipywidgets as w

from ..markdown import CODE_CHUNK_CLASS, DARK_CONTEXTS

__all__ = ["HIDDEN", "SHARED_RULES", "CHAT_RULES", "as_sent", "shared_model", "scale_class", "scale_widget"]

#: The class that hides a part (one class change instead of a `Layout` model per part).
HIDDEN = "sw-hidden"

#: The rules every part shares: sizes and colours, the view's box and header row, buttons, rendered
#: markdown and code. Each pane's own rules live in its module (`css` in its row of `_panes.PANES`).
SHARED_RULES = """
.sw-hidden { display: none !important; }
/* Sizes follow `--sw-scale` (set per view by a `sw-scale-NNN` class, see `scale_widget`), so that
   text, code, math and the header grow together on a projector. Colours are our own variables:
   JupyterLab's light theme has no success or warning colour that reaches 4.5:1 on white, so the
   light values are darker shades and the dark values (below) lighter ones; tests/widgets/test_theme.py
   computes every text colour's contrast in both themes. */
.sw-view, .sw-chat {
  --sw-text-size: calc(var(--sw-scale, 1) * var(--jp-content-font-size1, 14px));
  --sw-ui-size: calc(var(--sw-scale, 1) * var(--jp-ui-font-size1, 13px));
  --sw-small-size: calc(var(--sw-scale, 1) * var(--jp-ui-font-size0, 11px));
  --sw-code-size: calc(var(--sw-scale, 1) * var(--jp-code-font-size, 13px));
  --sw-live: var(--jp-brand-color1, #1565c0);
  --sw-ok: var(--jp-success-color0, #1b5e20);
  --sw-warn: #a64b00;
  --sw-error: var(--jp-error-color1, #c62828);
  --sw-link: var(--jp-content-link-color, #0d47a1);
  --sw-badge-text: #fff;
}
{dark} {
  --sw-live: var(--jp-brand-color1, #64b5f6);
  --sw-ok: var(--jp-success-color1, #66bb6a);
  --sw-warn: var(--jp-warn-color1, #ffa726);
  --sw-error: var(--jp-error-color1, #ef5350);
  --sw-link: var(--jp-content-link-color, #64b5f6);
  --sw-badge-text: #000;
}
.sw-view {
  font-family: var(--jp-content-font-family, system-ui, sans-serif);
  font-size: var(--sw-text-size);
  position: relative;
  color: var(--jp-content-font-color1, inherit);
  border: 1px solid var(--jp-border-color2, rgba(127, 127, 127, 0.3));
  border-radius: 4px;
  padding: 4px 10px 6px 10px;
  margin: 2px 0;
  max-width: 100%;
}
/* Views placed side by side (`HBox([h.view.widget for h in handles])`) share the row equally. */
.widget-hbox > .sw-view, .jupyter-widget-hbox > .sw-view { flex: 1 1 0; min-width: 0; margin: 2px 3px; }
.sw-view .widget-html-content, .sw-view .jupyter-widget-html-content { line-height: 1.5; }
.sw-view .sw-answer, .sw-view .sw-sources, .sw-view .sw-tools, .sw-view .sw-problems {
  font-size: var(--sw-text-size);
}
/* ipywidgets sizes every HTML widget to the UI font; the markdown panes' pieces take the pane's
   (scaled) size instead. */
.sw-view .sw-md .widget-html, .sw-view .sw-md .jupyter-widget-html { font-size: inherit; }
/* The buttons keep the right end of the header row; the header text wraps beside them. */
.sw-header-row { align-items: flex-start; flex-wrap: nowrap; gap: 6px; }
.sw-view .jupyter-button, .sw-chat .jupyter-button {
  font-size: var(--sw-ui-size); height: calc(var(--sw-scale, 1) * var(--jp-widgets-inline-height, 28px));
}
.sw-view .jupyter-button:disabled, .sw-chat .jupyter-button:disabled {
  opacity: 0.45; cursor: default; box-shadow: none;
}
/* JupyterLab's rendered-HTML rules are made for a notebook's markdown cells: 20 px of padding on
   the right (code blocks then stop short of the answer's edge), centred tables with right-aligned
   cells, and headings sized for a page. An answer in a widget wants none of that. A column that
   the markdown aligns carries its own inline text-align, which wins over these rules. */
.sw-view .sw-md.jp-RenderedHTMLCommon { padding-right: 0; }
/* A table too wide for a narrow view scrolls instead of squeezing its words letter by letter
   (the HTML widget, a flex item, must be allowed to be narrower than the table for that). */
.sw-md .widget-html-content, .sw-md .jupyter-widget-html-content { min-width: 0; }
.sw-view .sw-md.jp-RenderedHTMLCommon table {
  margin: 0.2em auto 0.8em 0; border-collapse: collapse;
  display: block; width: max-content; max-width: 100%; overflow-x: auto; table-layout: auto;
}
.sw-view .sw-md.jp-RenderedHTMLCommon th, .sw-view .sw-md.jp-RenderedHTMLCommon td {
  text-align: left; border: 1px solid var(--jp-border-color2, rgba(127, 127, 127, 0.3)); padding: 3px 8px;
  overflow-wrap: normal;
}
.sw-view .sw-md.jp-RenderedHTMLCommon ul, .sw-view .sw-md.jp-RenderedHTMLCommon ol { margin: 0.3em 0 0.7em 0; }
.sw-view .sw-md.jp-RenderedHTMLCommon li > ul, .sw-view .sw-md.jp-RenderedHTMLCommon li > ol { margin: 0; }
.sw-view .sw-md.jp-RenderedHTMLCommon h1, .sw-view .sw-md.jp-RenderedHTMLCommon h2,
.sw-view .sw-md.jp-RenderedHTMLCommon h3, .sw-view .sw-md.jp-RenderedHTMLCommon h4,
.sw-view .sw-md.jp-RenderedHTMLCommon h5, .sw-view .sw-md.jp-RenderedHTMLCommon h6 {
  margin: 0.8em 0 0.35em 0; line-height: 1.3; font-weight: 600;
}
.sw-view .sw-md.jp-RenderedHTMLCommon > :first-child > :first-child > .widget-html-content > :first-child,
.sw-view .sw-md.jp-RenderedHTMLCommon > :first-child > :first-child > .jupyter-widget-html-content > :first-child {
  margin-top: 0.2em;
}
.sw-view .sw-md.jp-RenderedHTMLCommon h1 { font-size: 1.35em; }
.sw-view .sw-md.jp-RenderedHTMLCommon h2 { font-size: 1.2em; }
.sw-view .sw-md.jp-RenderedHTMLCommon h3 { font-size: 1.05em; }
.sw-view .sw-md.jp-RenderedHTMLCommon h4, .sw-view .sw-md.jp-RenderedHTMLCommon h5,
.sw-view .sw-md.jp-RenderedHTMLCommon h6 { font-size: 1em; }
.sw-view .sw-answer pre, .sw-view .sw-reasoning pre, .sw-view .sw-tool-args, .sw-view .sw-tool-result,
.sw-view .sw-tool-failure {
  font-family: var(--jp-code-font-family, monospace);
  font-size: var(--sw-code-size);
  background: var(--jp-cell-editor-background, rgba(127, 127, 127, 0.12));
  color: var(--jp-content-font-color1, inherit);
  padding: 6px 8px; border-radius: 3px; overflow-x: auto;
}
/* Code keeps its lines (indentation stays readable on a projector): a long line scrolls sideways
   (Lab's output rule would wrap it, mid-word), and a long block scrolls within its own height.
   The pieces of a fence that is still open grow freely until it closes. */
.sw-view .sw-answer pre, .sw-view .sw-reasoning pre {
  white-space: pre; word-break: normal; overflow-wrap: normal; max-height: 30em; overflow-y: auto;
}
.sw-view .sw-answer pre code, .sw-view .sw-reasoning pre code { white-space: inherit; }
.sw-view .sw-md pre.{chunk} { max-height: none; overflow-y: visible; }
/* Lab gives output <pre> no margin, so two code blocks in a row touched. (The pieces of a fence
   that is still open keep following each other without a seam.) */
.sw-view .sw-md.jp-RenderedHTMLCommon pre:not(.{chunk}) { margin: 0.3em 0 0.8em 0; }
.sw-view .sw-md pre code, .sw-view pre code { background: transparent; padding: 0; }
.sw-answer a, .sw-sources a { color: var(--sw-link); }
.sw-section-title {
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--sw-ui-size);
  font-weight: 600; color: var(--jp-ui-font-color2, inherit); margin: 6px 0 2px 0;
}
.sw-domain, .sw-tool-id, .sw-note, .sw-inert-url { color: var(--jp-content-font-color2, inherit); font-size: 0.9em; }
"""

#: The chat panel's rules, after the panes'.
CHAT_RULES = """
/* The chat panel. Its send button's icon is drawn without alternative text, as the view's buttons'
   (see `_controls.py`). */
.sw-chat .jupyter-button .fa-paper-plane::before { content: "\\f1d8" / ""; }
.sw-chat { max-width: 100%; }
.sw-chat-user { margin: 6px 0 2px 0; padding: 4px 10px; border-radius: 4px; white-space: pre-wrap;
  background: var(--jp-layout-color2, rgba(127, 127, 127, 0.12)); color: var(--jp-content-font-color1, inherit); }
.sw-chat-input-row { align-items: center; gap: 4px; }
.sw-chat-input { flex: 1 1 auto; }
"""

_DARK = ", ".join(f"{context} {scope}" for context in DARK_CONTEXTS for scope in (".sw-view", ".sw-chat"))


def as_sent(source: str) -> str:
    """CSS `source` as sent: without comments and indentation (the sheet crosses the wire once per
    kernel, so its comments stay in the code), its `{chunk}` and `{dark}` filled in."""
    text = re.sub(r"\s*\n\s*", "\n", re.sub(r"/\*.*?\*/", "", source, flags=re.S)).strip()
    return text.replace("{chunk}", CODE_CHUNK_CLASS).replace("{dark}", _DARK)


#: Models every view can share: each crosses the wire once per kernel instead of once per view.
#: Held for the kernel's life (a handful of small models; dropping them with the last view would
#: only send them again with the next one), and remade if someone closed them.
_SHARED: dict[str, w.Widget] = {}

_Model = TypeVar("_Model", bound=w.Widget)


def shared_model(name: str, make: Callable[[], _Model]) -> _Model:
    """The kernel's one model called `name`, made by `make()` when there is none alive."""
    model = _SHARED.get(name)
    if model is None or model.comm is None:
        model = make()
        _SHARED[name] = model
    return model


#: The scales a view accepts: small enough to fit a laptop, large enough for the back row.
MIN_SCALE, MAX_SCALE = 0.5, 4.0


def scale_class(scale: float) -> str:
    """The class that sets a view's `--sw-scale` ("sw-scale-150" for 1.5), after checking it."""
    if not MIN_SCALE <= scale <= MAX_SCALE:
        raise ValueError(
            f"scale must be between {MIN_SCALE:g} and {MAX_SCALE:g} (1 is the notebook's own size), not {scale!r}"
        )
    return f"sw-scale-{round(scale * 100)}"


def scale_widget(scale: float) -> w.HTML:
    """The one-rule `<style>` behind `scale_class(scale)`: one small model per kernel and scale.

    The scale is a number, and a class cannot carry one, so each scale in use gets its own rule
    (scale 1 needs none: `--sw-scale` falls back to 1).
    """
    name = scale_class(scale)
    value = round(scale * 100) / 100
    return shared_model(
        name,
        lambda: w.HTML(
            value=f"<style>.{name} {{ --sw-scale: {value:g}; }}</style>",
            layout=w.Layout(display="none"),
            _dom_classes=("sw-style",),
        ),
    )
