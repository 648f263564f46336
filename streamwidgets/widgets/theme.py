"""The view's look: one stylesheet, written only in JupyterLab's `--jp-*` theme variables.

Styling through the theme variables (with neutral fallbacks for frontends that do not define them,
such as Colab) keeps the view readable in light and dark themes without a frontend build. The sheet
travels in an `HTML` widget that every view and panel includes among its children, so that it
reaches Voila and VS Code too and survives when another cell's output is cleared.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

import ipywidgets as w

from ..markdown import CODE_CHUNK_CLASS, PYGMENTS_CSS
from ..mathml import MATH_CSS

__all__ = ["STYLESHEET", "HIDDEN", "stylesheet_widget"]

#: The class that hides a part (one class change instead of a `Layout` model per part).
HIDDEN = "sw-hidden"

_SOURCE = """
.sw-hidden { display: none !important; }
.sw-view {
  font-family: var(--jp-content-font-family, system-ui, sans-serif);
  font-size: var(--jp-content-font-size1, 14px);
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
  font-size: var(--jp-content-font-size1, 14px);
}
/* The buttons keep the right end of the header row; the header text wraps beside them. */
.sw-header-row { align-items: flex-start; flex-wrap: nowrap; gap: 6px; }
.sw-header { flex: 1 1 auto; min-width: 0; }
.sw-header-line {
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  color: var(--jp-ui-font-color2, inherit);
  display: flex; flex-wrap: wrap; gap: 0 0.9em; align-items: center; align-content: center;
  min-height: var(--jp-widgets-inline-height, 28px);
  line-height: 1.6;
}
.sw-header-note {
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size0, 11px);
  color: var(--jp-ui-font-color2, inherit);
  line-height: 1.4; margin: -2px 0 4px 0;
}
.sw-model { color: var(--jp-ui-font-color1, inherit); font-weight: 600; }
.sw-api { font-weight: normal; }
.sw-badge {
  font-weight: 600;
  text-transform: uppercase;
  letter-spacing: 0.04em;
  font-size: var(--jp-ui-font-size0, 11px);
  padding: 0 6px;
  border-radius: 3px;
  color: var(--jp-ui-inverse-font-color0, #fff);
  background: var(--jp-warn-color1, #f57c00);
}
.sw-provider { color: var(--jp-ui-font-color2, inherit); }
.sw-status { font-weight: 600; }
.sw-status-waiting, .sw-status-thinking, .sw-status-answering { color: var(--jp-brand-color1, #1976d2); }
.sw-status-complete { color: var(--jp-success-color1, #388e3c); }
.sw-status-cancelled { color: var(--jp-ui-font-color2, inherit); }
.sw-status-incomplete { color: var(--jp-warn-color1, #f57c00); }
.sw-status-error { color: var(--jp-error-color1, #d32f2f); }
.sw-pulse {
  display: inline-block; width: 0.55em; height: 0.55em; margin-right: 0.35em;
  border-radius: 50%; background: currentColor; vertical-align: middle;
  animation: sw-pulse 1.2s ease-in-out infinite;
}
@keyframes sw-pulse { 0%, 100% { opacity: 0.25; } 50% { opacity: 1; } }
@media (prefers-reduced-motion: reduce) { .sw-pulse { animation: none; } }
.sw-metrics, .sw-alive { color: var(--jp-ui-font-color2, inherit); }
.sw-view .sw-cancel, .sw-view .sw-continue { flex: 0 0 auto; width: auto; padding: 0 12px; }
.sw-view .jupyter-button:disabled, .sw-chat .jupyter-button:disabled {
  opacity: 0.45; cursor: default; box-shadow: none;
}
.sw-reasoning-box { margin: 2px 0 4px 0; }
.sw-reasoning-box .jupyter-widget-Collapse-header,
.sw-reasoning-box .p-Collapse-header, .sw-reasoning-box .lm-Collapse-header {
  font-size: var(--jp-ui-font-size1, 13px);
  color: var(--jp-ui-font-color2, inherit);
  padding: 2px 8px;
}
.sw-reasoning {
  color: var(--jp-content-font-color2, inherit);
  font-size: 0.9em;
  opacity: 0.9;
  max-height: 24em; overflow-y: auto;
  border-left: 3px solid var(--jp-border-color1, rgba(127, 127, 127, 0.5));
  padding-left: 8px;
}
.sw-answer { line-height: 1.55; overflow-wrap: anywhere; }
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
.sw-view .sw-answer pre, .sw-view .sw-reasoning pre, .sw-view .sw-tool-args {
  font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 13px);
  background: var(--jp-cell-editor-background, rgba(127, 127, 127, 0.12));
  color: var(--jp-content-font-color1, inherit);
  padding: 6px 8px; border-radius: 3px; overflow-x: auto;
  /* Wrap long lines at spaces (Lab's output rule breaks code mid-word). */
  word-break: normal; overflow-wrap: anywhere;
}
/* Lab gives output <pre> no margin, so two code blocks in a row touched. (The pieces of a fence
   that is still open keep following each other without a seam.) */
.sw-view .sw-md.jp-RenderedHTMLCommon pre:not(.{chunk}) { margin: 0.3em 0 0.8em 0; }
.sw-view .sw-md pre code, .sw-view pre code { background: transparent; padding: 0; }
.sw-answer a, .sw-sources a { color: var(--jp-content-link-color, #1976d2); }
.sw-section-title {
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  font-weight: 600; color: var(--jp-ui-font-color2, inherit); margin: 6px 0 2px 0;
}
.sw-sources ol { margin: 0; padding-left: 1.8em; font-size: 0.92em; }
.sw-domain, .sw-tool-id, .sw-note, .sw-inert-url { color: var(--jp-content-font-color2, inherit); font-size: 0.9em; }
.sw-inert { color: var(--jp-content-font-color2, inherit); }
.sw-tool { margin: 2px 0 6px 0; }
.sw-tool-name { font-family: var(--jp-code-font-family, monospace); font-weight: 600; }
.sw-tool-args { margin: 2px 0; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 20em; overflow-y: auto; }
.sw-usage-line { font-family: var(--jp-ui-font-family, system-ui, sans-serif); font-size: var(--jp-ui-font-size0, 12px);
  color: var(--jp-ui-font-color2, inherit); display: flex; flex-wrap: wrap; gap: 0 1em; }
.sw-estimate { font-style: italic; }
.sw-bar { height: 4px; border-radius: 2px; margin: 3px 0 1px 0;
  background: var(--jp-layout-color3, rgba(127, 127, 127, 0.25)); overflow: hidden; max-width: 32em; }
.sw-bar-fill { height: 100%; background: var(--jp-brand-color1, #1976d2); }
.sw-bar-full .sw-bar-fill { background: var(--jp-warn-color1, #f57c00); }
.sw-problem-box { border-radius: 3px; padding: 4px 8px; margin: 4px 0 2px 0; border-left: 4px solid; }
/* Tints, not the theme's pale --jp-*-color3: the text keeps the theme's own colour, dark or light. */
.sw-kind-error { border-color: var(--jp-error-color1, #d32f2f); background: rgba(211, 47, 47, 0.12); }
.sw-kind-warn { border-color: var(--jp-warn-color1, #f57c00); background: rgba(245, 124, 0, 0.12); }
.sw-kind-info { border-color: var(--jp-info-color1, #0288d1); background: rgba(2, 136, 209, 0.10); }
.sw-problem-box, .sw-problem-box * { color: var(--jp-content-font-color1, inherit); }
.sw-problem-box ul { margin: 2px 0; padding-left: 1.4em; }
.sw-chat { max-width: 100%; }
.sw-chat-user { margin: 6px 0 2px 0; padding: 4px 10px; border-radius: 4px; white-space: pre-wrap;
  background: var(--jp-layout-color2, rgba(127, 127, 127, 0.12)); color: var(--jp-content-font-color1, inherit); }
.sw-chat-input-row { align-items: center; gap: 4px; }
.sw-chat-input { flex: 1 1 auto; }
"""


#: The sheet as sent: the rules above plus code highlighting, without comments and indentation
#: (it crosses the wire once per kernel, so its comments stay here).
_RULES = re.sub(r"\s*\n\s*", "\n", re.sub(r"/\*.*?\*/", "", _SOURCE, flags=re.S)).strip()
STYLESHEET = _RULES.replace("{chunk}", CODE_CHUNK_CLASS) + "\n" + PYGMENTS_CSS + "\n" + MATH_CSS

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


def stylesheet_widget() -> w.HTML:
    """The `<style>` widget every view includes; one model per kernel, drawn in each view.

    Sharing the model means the ~8 KB sheet crosses the wire once per kernel, not once per
    view, while every view still carries its own `<style>` element in the page (see
    `shared_model`).

    The widget is hidden: a `<style>` element applies wherever it sits in the page, so it needs
    no box of its own and adds no gap above the view.
    """
    return shared_model(
        "style",
        lambda: w.HTML(
            value=f"<style>{STYLESHEET}</style>", layout=w.Layout(display="none"), _dom_classes=("sw-style",)
        ),
    )
