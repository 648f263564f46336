"""`compare()`: one question, several models side by side, streaming at once, with a live table.

    cmp = sw.compare("Explain recursion", ["demo-fast", "demo", "demo-deep"])
    cmp = sw.compare("Explain recursion", [("openai", "gpt-4.1-mini"), ("anthropic", "claude-sonnet-4-5")])
    cmp = sw.compare("Write a haiku about rain", provider="local", temperature=[0, 0.7, 1.5], logprobs=5)

A list for `temperature=`, `seed=` or `top_p=` compares one model with itself: one column per
value, labelled by it, so that a class sees sampling at work (with `logprobs=`, each column has
its token view: how sure the model was, token by token).

Each model gets the full view (`show(..., display=False)`), in a row that wraps on a narrow
screen; under them a table, redrawn four times a second while they stream: time to first token,
tokens per second, output tokens, cost where the provider reports it, finish reason, status (and
tries, when a model was rate limited). Each view's usage meter has its sparkline of tokens per
100 ms, so that a class sees one model stall, another burst, and which one finished first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Optional, Union

import ipywidgets as w

from ..core import Limits, Provider, StreamState, formatting
from ..markdown import escape_html, safe_markdown
from ..net import DEFAULT_MAX_STEPS, DEFAULT_RETRIES, DEFAULT_STALL_TIMEOUT, DEFAULT_TOOL_TIMEOUT, PathLike, Secret
from ..widgets import (
    Parts,
    SavedOutput,
    StreamHandle,
    StreamView,
    deliver,
    in_marimo,
    saves_as,
    set_traits,
    stylesheet_widget,
)

__all__ = ["compare", "Comparison", "ModelSpec", "comparison_rows", "comparison_html", "NOT_IN_MARIMO"]

#: Why `compare` does not run in marimo, in one line.
NOT_IN_MARIMO = (
    "compare() lays its views out in standard ipywidgets, which marimo does not render:"
    " in marimo, put one sw.show() per model side by side, mo.hstack([sw.show(q, model=a), sw.show(q, model=b)])"
)

#: A model name (with `provider=` or the default preset), or a (provider, model) pair.
ModelSpec = Union[str, tuple[str, str]]
_TABLE_INTERVAL = 0.25
_TABLE_STYLE = (
    "<style>.sw-compare-table{border-collapse:collapse;margin-top:6px;font-size:0.92em}"
    ".sw-compare-table th,.sw-compare-table td{padding:3px 10px;border-bottom:1px solid "
    "var(--jp-border-color2,#ddd);text-align:right;white-space:nowrap}"
    ".sw-compare-table th[scope=row],.sw-compare-table thead th:first-child{text-align:left}</style>"
)
#: The settings a comparison can sweep over one model (a list of values, one column each).
SWEEPABLE = ("temperature", "seed", "top_p")
_COLUMNS = ("model", "status", "first token", "tokens/s", "output tokens", "cost", "finish", "tries")


#: The keywords of `compare` that go on, as they are, to each model's `show()`.
_TO_EACH = (
    "api",
    "base_url",
    "api_key",
    "system",
    "offline",
    "local_model",
    "tools",
    "logprobs",
    "extra_body",
    "include_usage",
    "retries",
    "stall_timeout",
    "limits",
    "deadline",
    "max_answer_chars",
    "max_event_chars",
    "max_tool_calls",
    "max_citations",
    "max_warnings",
    "max_steps",
    "tool_timeout",
    "confirm",
    "record",
    "log",
    "parts",
    "max_fps",
    "scale",
)


def compare(
    prompt: Any,
    models: Optional[Sequence[ModelSpec]] = None,
    *,
    provider: Union[str, Provider, None] = None,
    model: Optional[str] = None,
    display: bool = True,
    # the request each model gets (`make_request`)
    api: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Union[str, Secret, None] = None,
    system: Optional[str] = None,
    offline: Optional[bool] = None,
    local_model: Optional[str] = None,
    tools: Optional[Sequence[Any]] = None,
    logprobs: Union[int, bool, None] = None,
    extra_body: Optional[Mapping[str, Any]] = None,
    include_usage: Optional[bool] = None,
    retries: int = DEFAULT_RETRIES,
    stall_timeout: float = DEFAULT_STALL_TIMEOUT,
    # the limits of each answer
    limits: Optional[Limits] = None,
    deadline: Optional[float] = None,
    max_answer_chars: Optional[int] = None,
    max_event_chars: Optional[int] = None,
    max_tool_calls: Optional[int] = None,
    max_citations: Optional[int] = None,
    max_warnings: Optional[int] = None,
    # each model's tool loop
    max_steps: int = DEFAULT_MAX_STEPS,
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
    confirm: bool = False,
    # each model's run
    record: Optional[PathLike] = None,
    log: Optional[PathLike] = None,
    parts: int = 1,
    # each model's view
    max_fps: float = 20.0,
    scale: Optional[float] = None,
    **params: Any,
) -> Comparison:
    """Stream `prompt` from every model in `models` at once, side by side, with a live table.

    `models` holds names (from `provider=`, else the default preset) or (provider, model)
    pairs. A list for one of `temperature=`, `seed=`, `top_p=` instead compares one model (the
    one in `models`, else `model=`, else the preset's default) at each value. Every other keyword
    is `show()`'s and goes to each model's view (`api`, `system`, `logprobs`, `offline`,
    `retries`, the limits, `log`, and the tool loop's `tools=`, `max_steps=`, `confirm=`,
    `tool_timeout=`: each model runs its own calls, in its own view...), and so does any body
    field (`max_tokens`...). `display=False` makes the comparison without showing it. Returns a
    `Comparison`; `await` it for the final states.
    """
    given = dict(locals())
    if in_marimo():
        raise RuntimeError(NOT_IN_MARIMO)
    from ._keywords import SinkKeywords
    from ._show import show

    SinkKeywords.read("compare", given)  # a near miss of a keyword is named here, once
    each: dict[str, Any] = {name: given[name] for name in _TO_EACH}
    swept = [name for name in SWEEPABLE if isinstance(params.get(name), (list, tuple))]
    if swept:
        if len(swept) > 1:
            raise TypeError(f"compare sweeps one setting at a time, not {' and '.join(swept)}")
        name = swept[0]
        values = list(params.pop(name))
        if not values:
            raise ValueError(f"{name}= is an empty list: give the values to compare, e.g. {name}=[0, 0.7, 1.5]")
        if models is not None and (isinstance(models, (str, tuple)) or len(models) != 1):
            raise TypeError(f"a sweep over {name}= compares one model with itself: pass one model, or none")
        spec = models[0] if models else model  # `model=` names the one model as well
        who, chosen = spec if isinstance(spec, tuple) else (provider, spec)
        runs = [show(prompt, provider=who, model=chosen, display=False, **each, **{name: v}, **params) for v in values]
        return Comparison(runs, display=display, labels=[f"{name} {v}" for v in values])
    if isinstance(models, (str, tuple)) or not models:
        raise TypeError(
            "models is a list: compare('...', ['demo-fast', 'demo-deep']) or [('openai', 'gpt-4.1-mini'), ...]"
        )
    if model is not None:
        raise TypeError("model= names the one model of a sweep; to compare models, list them in models=")
    handles = []
    for spec in models:
        who, chosen = spec if isinstance(spec, tuple) else (provider, spec)
        handles.append(show(prompt, provider=who, model=chosen, display=False, **each, **params))
    return Comparison(handles, display=display)


def comparison_rows(handles: Sequence[StreamHandle], labels: Optional[Sequence[str]] = None) -> list[dict[str, str]]:
    """One row per model (or per value of a sweep, `labels`): what the table shows, as plain text."""
    rows = []
    providers = {h.request.provider.name for h in handles if h.request is not None}
    for index, handle in enumerate(handles):
        state = handle.state
        tokens, estimated = state.completion_tokens
        usage = state.usage
        ttft = state.time_to_first_token
        rate = state.tokens_per_second
        rows.append(
            {
                "model": _label(handle, with_provider=len(providers) > 1)
                + (f" · {labels[index]}" if labels is not None else ""),
                "status": formatting.STATUS_WORDS.get(state.phase, state.phase),
                "first token": formatting.seconds(ttft) if ttft is not None else "—",
                "tokens/s": formatting.rate(rate) if rate is not None else "—",
                "output tokens": ("≈" if estimated else "") + formatting.count(tokens),
                "cost": formatting.cost(usage.cost) if usage is not None and usage.cost is not None else "—",
                "finish": state.finish or "—",
                "tries": str(state.retry.tries) if state.retry is not None else "1",
            }
        )
    return rows


def comparison_html(rows: Sequence[dict[str, str]]) -> str:
    """The table as HTML; every cell is escaped (model names come from the stream)."""
    head = "".join(f'<th scope="col">{escape_html(c)}</th>' for c in _COLUMNS)
    body = "".join(
        "<tr>"
        + "".join(
            (f'<th scope="row">{escape_html(row[c])}</th>' if c == "model" else f"<td>{escape_html(row[c])}</td>")
            for c in _COLUMNS
        )
        + "</tr>"
        for row in rows
    )
    return f'{_TABLE_STYLE}<table class="sw-compare-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def comparison_markdown(rows: Sequence[dict[str, str]]) -> str:
    """The table as markdown. A cell holds what a provider sent (its model's name, its finish
    reason): one line, made inert (`safe_markdown`), its `|` escaped."""

    def cell(text: str) -> str:
        return safe_markdown(formatting.one_line(text)).replace("|", "\\|")

    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(cell(row[c]) for c in _COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def _label(handle: StreamHandle, *, with_provider: bool) -> str:
    """The model, and its provider when the comparison spans several."""
    request = handle.request
    model = handle.state.model or (request.model if request is not None else "?")
    if request is not None and with_provider:
        return f"{model} ({request.provider.name})"
    return model


class Comparison:
    """The views side by side and the table under them. `widget` is the box to display;
    `handles` the streams (one per model, in order); `rows()` the table as data."""

    def __init__(
        self, handles: Sequence[StreamHandle], *, display: bool = True, labels: Optional[Sequence[str]] = None
    ) -> None:
        self.handles = list(handles)
        #: What tells the columns apart when one model is compared with itself ("temperature 0.7").
        self.labels = list(labels) if labels is not None else None
        parts = Parts()
        views = []
        for index, handle in enumerate(self.handles):
            view = handle.view
            if not isinstance(view, StreamView):
                raise ValueError("compare needs Jupyter views: it runs in a kernel")
            if self.labels is not None:
                view.add_note(self.labels[index])
            # Its own layout: a view's boxes share one, which the row's flex must not reach.
            view.widget.layout = w.Layout(flex="1 1 240px", min_width="200px")
            views.append(view.widget)
        row = w.Layout(display="flex", flex_flow="row wrap", align_items="flex-start")
        self.row = w.Box(views, layout=row, _dom_classes=("sw-compare-row",))
        self.table = parts.html("sw-compare-table", value=comparison_html(self.rows()))
        self.widget = parts.box(w.VBox, [stylesheet_widget(), self.row, self.table], "sw-compare")
        saves_as(self.table, self._table_forms)
        from IPython import get_ipython

        #: The output that shows it, kept with the final table in a saved notebook (`SavedOutput`).
        self.output = SavedOutput(
            self.widget,
            get_ipython(),
            waiting=f"[comparing {len(self.handles)} answers; the live view needs a running kernel]",
            before=self.refresh,
        )
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._keep_table(), name="streamwidgets compare table")
        #: The execution count of the cell whose output shows it (not shown twice there).
        self.displayed_in: Optional[int] = None
        if display:
            self._show()

    def rows(self) -> list[dict[str, str]]:
        return comparison_rows(self.handles, self.labels)

    @property
    def states(self) -> list[StreamState]:
        return [h.state for h in self.handles]

    @property
    def done(self) -> bool:
        return all(h.done for h in self.handles)

    def cancel(self) -> int:
        """Stop every stream that still runs; return how many."""
        return sum(h.cancel() for h in self.handles)

    def refresh(self) -> None:
        """Redraw the table, as the running cell's output (a notebook runner keeps it: `deliver`);
        sent only when it changed."""
        html = comparison_html(self.rows())
        if html != self.table.value:
            deliver(lambda: set_traits(self.table, value=html), self.table)

    async def _keep_table(self) -> list[StreamState]:
        while not self.done:
            self.refresh()
            await asyncio.sleep(_TABLE_INTERVAL)
        states = [await h for h in self.handles]
        self.refresh()
        return states

    def _table_forms(self) -> dict[str, str]:
        """The table as a saved notebook keeps it (the output saves it under the answers)."""
        rows = self.rows()
        return {
            "text/plain": comparison_markdown(rows),
            "text/markdown": comparison_markdown(rows),
            "text/html": comparison_html(rows),
        }

    def _show(self) -> None:
        from IPython import get_ipython

        self.output.display()
        self.displayed_in = getattr(get_ipython(), "execution_count", None)

    def __await__(self) -> Generator[Any, None, list[StreamState]]:
        return self._task.__await__()

    def __repr__(self) -> str:
        return f"<Comparison {len(self.handles)} models{'' if self.done else ' (streaming)'}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _ipython_display_(self) -> None:
        """Show the live comparison — except in the cell whose output already shows it."""
        from IPython import get_ipython
        from IPython.display import display as show_output

        count = getattr(get_ipython(), "execution_count", None)
        if self.displayed_in is None:
            self._show()
        elif self.displayed_in != count:
            show_output(self.widget)
