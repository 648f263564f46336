"""`ChatPanel`: a conversation in a notebook or a Voila app, each answer streaming in its own view.

The input is a `Text` with `continuous_update=False`, so that its value reaches the kernel when
the person presses Enter (or leaves the box), plus a Send button; both send. While an answer
streams, Send waits (its Cancel is in the answer's view). The history is the client's `Chat`:
each answer — complete, cut off or cancelled — is what the model is told it said.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

import ipywidgets as w

from ..markdown import conversation_markdown, escape_html, safe_markdown
from ..net import Chat, Live
from ._handle import StreamHandle
from ._marimo_cells import in_marimo
from ._output import SavedOutput, saves_as
from ._scheduler import scheduler_for
from ._sheet import stylesheet_widget
from ._sync import Parts, set_traits
from ._view import view_for

__all__ = ["ChatPanel"]


class ChatPanel:
    """A chat box. Display it (`panel` as the last line of a cell, or `display(panel)`).

    The keywords are those of `show()` / `make_request()` (provider, model, api, base_url,
    api_key, system, offline, and request-body parameters such as `max_tokens`).
    """

    def __init__(
        self, *, max_fps: float = 20.0, placeholder: str = "Ask something and press Enter", **options: Any
    ) -> None:
        if in_marimo():
            raise RuntimeError(
                "ChatPanel is made of standard ipywidgets (its text box, its list of answers), which marimo does"
                " not render: in marimo, use mo.ui.text for the question and one sw.show() per answer"
            )
        self.chat = Chat(**options)
        self._max_fps = max_fps
        self._parts = parts = Parts()
        self.input = w.Text(
            placeholder=placeholder,
            continuous_update=False,
            tooltip="Your message; Enter sends it",
            layout=w.Layout(width="auto"),
            _dom_classes=("sw-chat-input",),
        )
        self.send_button = parts.button(
            "sw-chat-send", description="Send", tooltip="Send the message", icon="paper-plane", button_style="primary"
        )
        self.transcript = parts.box(w.VBox, [], "sw-chat-transcript")
        row = parts.box(w.HBox, [self.input, self.send_button], "sw-chat-input-row")
        self.widget = parts.box(w.VBox, [stylesheet_widget(), self.transcript, row], "sw-chat")
        self.handles: list[StreamHandle] = []
        self._answer_slot: dict[StreamHandle, int] = {}
        #: The output that shows the panel: a saved notebook keeps each question and its answer's view.
        self.output: Optional[SavedOutput] = None
        self.input.observe(self._on_enter, "value")
        self.send_button.on_click(lambda _button: self._submit(self.input.value))

    # ------------------------------------------------------------------ public

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far, as it is sent with the next message."""
        return self.chat.messages

    @property
    def busy(self) -> bool:
        return bool(self.handles) and not self.handles[-1].done

    def send(self, text: str) -> StreamHandle:
        """Ask `text`; the answer streams into a new view at the bottom of the transcript."""
        if self.busy:
            raise RuntimeError("an answer is still streaming; cancel it or wait for it first")
        if self.handles:  # only the latest answer may be continued: the history ends with it
            previous = self.handles[-1]
            if previous.view is not None:
                previous.view.on_continue(None)
                previous.view.refresh(final=True)
        source = Live(self.chat.request(text))
        user = self._parts.html("sw-chat-user", value=escape_html(text))
        saves_as(user, lambda: _question_forms(text))
        view = view_for(source, max_fps=self._max_fps, style=False)
        self.transcript.children = (*self.transcript.children, user, view.widget)
        handle = StreamHandle(source, view=view, scheduler=scheduler_for(asyncio.get_running_loop()))
        view.on_continue(lambda: self._continue(handle))
        handle.add_done_callback(self._answered)
        if self.output is not None:
            self.output.follow(handle)
        self.handles.append(handle)
        set_traits(self.send_button, disabled=True)
        return handle

    def to_markdown(self, path: Optional[str] = None, *, title: str = "Conversation") -> str:
        """The conversation as markdown (each question, then its answer), for a teacher to read
        or a student to hand in; written to `path` too when given."""
        text = conversation_markdown(self.chat.messages, title=title)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def cancel(self) -> bool:
        """Stop the answer that is streaming, if any."""
        return bool(self.handles) and self.handles[-1].cancel()

    # ------------------------------------------------------------------ events

    def _on_enter(self, change: dict[str, Any]) -> None:
        self._submit(change["new"])

    def _submit(self, text: str) -> None:
        if not text.strip() or self.busy:
            return  # the text stays in the box until it can be sent
        self.input.value = ""
        self.send(text)

    def _continue(self, handle: StreamHandle) -> None:
        if self.busy:
            return
        set_traits(self.send_button, disabled=True)
        handle.continue_answer()

    def _answered(self, handle: StreamHandle) -> None:
        """Put the answer (or what arrived of it) in the history; a Continue updates it in place."""
        text = handle.text
        slot = self._answer_slot.get(handle)
        if slot is not None:
            self.chat.messages[slot]["content"] = text
        elif text:
            self.chat.messages.append({"role": "assistant", "content": text})
            self._answer_slot[handle] = len(self.chat.messages) - 1
        set_traits(self.send_button, disabled=False)

    # ------------------------------------------------------------------ display

    def _ipython_display_(self) -> None:
        from IPython import get_ipython

        if self.output is None:
            self.output = SavedOutput(self.widget, get_ipython(), waiting="[chat panel; it needs a running kernel]")
        self.output.display()

    def __repr__(self) -> str:
        return f"<ChatPanel {len(self.handles)} answers{' (streaming)' if self.busy else ''}>"


def _question_forms(text: str) -> dict[str, str]:
    """A question of the chat as a saved notebook keeps it, above its answer."""
    return {
        "text/plain": f"You: {text}",
        "text/markdown": f"**You:** {safe_markdown(text)}",
        "text/html": f'<p class="sw-static-question"><strong>You:</strong> {escape_html(text)}</p>',
    }
