"""The output that shows answers, and what a saved notebook keeps of it: one view (`show()`), or
views placed in any box (`display(HBox([h.view.widget ...]))`, a `GridBox`, a `Tab`), a
comparison, a chat.

The output is displayed with a display id and, once every answer in it ended, updated with the
static forms of its whole widget tree (`tree_forms`): each view's answer as its panes saved it
(`_fallback.final_bundle`), in the layout of the boxes around it (a row, a column, a grid, the
tabs one after the other under their titles), with what else was placed there (a comparison's
table, a chat's questions) as its owner says it is saved (`saves_as`). The update is sent as the
running cell's output (`_cells.deliver`), so a notebook runner keeps it wherever the output is;
under a runner the forms are saved alone, without the widget view that only a widget manager
from a CDN could draw (`keeps_widget`), and a runner that stops while an answer still streams
saves what arrived with its note (`StreamHandle.save_partial`).

A box the caller displays is found through IPython's own display formatters (a printer for
`ipywidgets.Box` registered by `watch_boxes`): a box that holds no view is displayed as before.

Every form holds only the answers' safe renders and text the page would show anyway; a widget
nobody registered shows as its escaped text (a `Label`, an `HTML`'s text), or not at all.
"""

from __future__ import annotations

import html
import re
import uuid
import weakref
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any, Optional

import ipywidgets as w

from ..markdown import escape_html, fences_closed
from ._cells import deliver, watch
from ._fallback import WIDGET_MIMETYPE, final_bundle, keeps_widget
from ._running import shown_by
from ._view import StreamView

if TYPE_CHECKING:
    from ._handle import StreamHandle

__all__ = ["Forms", "SavedOutput", "saves_as", "tree_forms", "watch_boxes", "handle_of"]

#: A widget's static forms: "text/plain", "text/markdown", "text/html".
Forms = dict[str, str]

_FORMS: weakref.WeakKeyDictionary[w.Widget, Callable[[], Forms]] = weakref.WeakKeyDictionary()
#: CSS a saved grid may keep from its `Layout` (lengths, `repeat(...)`, `minmax(...)`, `fr`).
_CSS_VALUE = re.compile(r"[\w\s().,%-]{1,200}")
_watched: set[int] = set()


def saves_as(widget: w.Widget, forms: Callable[[], Forms]) -> None:
    """Say what `widget` saves in a notebook (its forms, made when the output is saved)."""
    _FORMS[widget] = forms


def handle_of(widget: Any) -> Optional[StreamHandle]:
    """The handle whose view `widget` is, if any (handles register their views: `_running.follows`)."""
    handle: Optional[StreamHandle] = shown_by(widget)
    return handle


def handles_in(widget: Any) -> list[StreamHandle]:
    """The handles of the views in a widget tree, in order."""
    handle = handle_of(widget)
    if handle is not None:
        return [handle]
    return [h for child in getattr(widget, "children", ()) for h in handles_in(child)]


def view_forms(handle: StreamHandle) -> Forms:
    """One view's answer as a saved notebook keeps it (a running answer with its runner's note)."""
    view = handle.view
    assert isinstance(view, StreamView), "a saved notebook keeps Jupyter views (marimo's keeps its own state)"
    labels = view.header.labels
    note = None if handle.state.done else handle.partial_note
    bundle = final_bundle(view, labels.model, labels.badge, note, widget=False)
    return {kind: bundle[kind] for kind in ("text/plain", "text/markdown", "text/html")}


def tree_forms(widget: Any) -> Optional[Forms]:
    """The static forms of a widget tree (None when nothing in it saves anything)."""
    handle = handle_of(widget)
    if handle is not None:
        return view_forms(handle)
    own = _FORMS.get(widget)
    if own is not None:
        return own()
    if isinstance(widget, w.Box):
        return _box_forms(widget)
    if isinstance(widget, (w.Label, w.HTML, w.HTMLMath)) and not _ours(widget):
        text = widget.value if isinstance(widget, w.Label) else _text_of(widget.value)
        return {"text/plain": text, "text/markdown": escape_html(text), "text/html": f"<p>{escape_html(text)}</p>"}
    return None


def _ours(widget: w.Widget) -> bool:
    """A part of streamwidgets (its style sheet, a pane): saved only as its owner says."""
    return any(name.startswith("sw-") for name in widget._dom_classes)


def _box_forms(box: w.Box) -> Optional[Forms]:
    titles: Sequence[str] = tuple(getattr(box, "titles", ()) or ())
    parts = [(i, forms) for i, child in enumerate(box.children) if (forms := tree_forms(child)) is not None]
    if not parts:
        return None
    if isinstance(box, (w.Tab, w.Accordion, w.Stack)):  # every page, one after the other, under its title
        titled = [(titles[i] if i < len(titles) and titles[i] else f"{i + 1}", forms) for i, forms in parts]
        return {
            "text/plain": "\n\n".join(f"[{title}]\n{forms['text/plain']}" for title, forms in titled),
            "text/markdown": "\n\n".join(
                f"**{escape_html(t)}**\n\n{fences_closed(f['text/markdown'])}" for t, f in titled
            ),
            "text/html": '<div class="sw-static-pages">'
            + "".join(
                f'<section><h4 class="sw-static-title">{escape_html(title)}</h4>{forms["text/html"]}</section>'
                for title, forms in titled
            )
            + "</div>",
        }
    if isinstance(box, w.GridBox):
        columns = _css(box.layout.grid_template_columns) or "repeat(auto-fill, minmax(280px, 1fr))"
        gap = _css(box.layout.grid_gap) or "8px"
        style, item = f"display:grid;grid-template-columns:{columns};gap:{gap}", "min-width:0"
    elif isinstance(box, w.VBox):
        style, item = "display:flex;flex-direction:column;gap:8px", "min-width:0"
    else:  # an HBox, or a Box (a comparison's row): side by side, wrapping on a narrow page
        style, item = "display:flex;flex-flow:row wrap;gap:8px;align-items:flex-start", "flex:1 1 240px;min-width:0"
    cells = "".join(f'<div style="{item}">{forms["text/html"]}</div>' for _, forms in parts)
    return {
        "text/plain": "\n\n".join(forms["text/plain"] for _, forms in parts),
        "text/markdown": "\n\n---\n\n".join(fences_closed(forms["text/markdown"]) for _, forms in parts),
        "text/html": f'<div class="sw-static-box" style="{escape_html(style)}">{cells}</div>',
    }


def _css(value: Optional[str]) -> Optional[str]:
    return value if value and _CSS_VALUE.fullmatch(value) else None


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style") and self._skip > 0

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def _text_of(markup: str) -> str:
    """The text an `HTML` widget shows (a caller's own heading beside the views), without its markup."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return html.unescape(" ".join(" ".join(parser.parts).split()))


class SavedOutput:
    """An output showing `widget` (a view, or a tree with views in it), kept in the saved notebook.

    `follow(handle)` for each answer in it (those in the tree when it is made are followed at
    once); `display()` shows it; each time a followed answer's part ends, and all of them have,
    the output is updated with the tree's forms (`before()` runs first: a table drawn anew).
    `waiting` is the text form while answers stream.
    """

    def __init__(
        self,
        widget: w.Widget,
        shell: Any,
        *,
        waiting: str = "[streaming answers; the live view needs a running kernel]",
        before: Optional[Callable[[], None]] = None,
    ) -> None:
        self.widget = widget
        self.display_id = uuid.uuid4().hex
        self._waiting = waiting
        self._before = before
        self._shell = shell
        self._handles: list[StreamHandle] = []
        self._keeps_widget = True
        self._shown = False  # nothing to update before it is displayed
        for handle in handles_in(widget):
            self.follow(handle)

    @property
    def done(self) -> bool:
        """Every answer in it ended (its state is closed: its handle's done callbacks run after)."""
        return all(handle.state.done for handle in self._handles)

    def follow(self, handle: StreamHandle) -> None:
        if handle not in self._handles:
            self._handles.append(handle)
            handle.save_with(self._save)

    def display(self) -> None:
        from IPython.display import display

        watch(self._shell)  # its updates go out as the running cell's output (`deliver`)
        self._keeps_widget = keeps_widget(self._shell)  # decided by the cell that shows it
        self._shown = True
        if self._handles and self.done:
            display(self.bundle(), raw=True, display_id=self.display_id)
        else:
            display(self.placeholder(), raw=True, display_id=self.display_id)

    def placeholder(self) -> dict[str, Any]:
        return {WIDGET_MIMETYPE: _widget_part(self.widget), "text/plain": self._waiting}

    def bundle(self) -> dict[str, Any]:
        """The widget (unless a runner shows it), and the tree's forms."""
        if self._before is not None:
            self._before()
        forms = tree_forms(self.widget) or {"text/plain": self._waiting}
        return {**({WIDGET_MIMETYPE: _widget_part(self.widget)} if self._keeps_widget else {}), **forms}

    def save(self) -> None:
        """Update the output with what its answers hold now (see `_cells.deliver`)."""
        from IPython.display import update_display

        bundle = self.bundle()
        deliver(lambda: update_display(bundle, raw=True, display_id=self.display_id), self.widget)

    def _save(self, handle: StreamHandle, note: Optional[str]) -> None:
        if self._shown and (note is not None or self.done):
            self.save()


def _widget_part(widget: w.Widget) -> Any:
    return widget._repr_mimebundle_()[WIDGET_MIMETYPE]


def _show_box(box: w.Box) -> None:
    """IPython's printer for a box: with views in it, a `SavedOutput`; else the box as before."""
    from IPython import get_ipython
    from IPython.display import display

    if not handles_in(box):
        display(box._repr_mimebundle_(), raw=True)
        return
    SavedOutput(box, get_ipython()).display()


def watch_boxes(shell: Any) -> None:
    """Show the boxes this shell displays through `_show_box` (once per shell)."""
    formatter = getattr(getattr(shell, "display_formatter", None), "ipython_display_formatter", None)
    if formatter is None or id(shell) in _watched:
        return
    _watched.add(id(shell))
    formatter.for_type(w.Box, _show_box)
