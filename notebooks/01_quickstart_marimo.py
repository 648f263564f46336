import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell(hide_code=True)
def intro(mo):
    mo.md(
        """
        # Quickstart in marimo: a live answer in one cell

        `streamwidgets` shows an LLM answer while it is being written: rendered markdown, the
        model's reasoning, the sources it cites, its tool calls, a usage meter, and a **Cancel**
        button that really closes the connection. In marimo the same `sw.show()` draws into a small
        anywidget (install `.[marimo]` from a checkout of streamwidgets).

        No API key is needed to follow along. Without one, answers come from the *embedded
        provider*: a small server that this notebook starts on 127.0.0.1 and that streams
        realistic answers, at a realistic pace, over a real HTTP connection — exactly as a hosted
        provider would.
        """
    )
    return


@app.cell
def imports():
    import os

    import marimo as mo

    import streamwidgets as sw

    return mo, os, sw


@app.cell
def first(sw):
    answer = sw.show("How does streaming an LLM answer with server-sent events work?")
    answer
    return (answer,)


@app.cell(hide_code=True)
def what_happened(mo):
    mo.md(
        """
        ## What just happened

        `show()` returned at once. The answer streams in the background while the cell is already
        finished, so you can scroll, run other cells or press **Cancel** while it arrives. Running
        this cell again (or deleting it) cancels the answer it started before: only the new one
        writes.

        The handle it returned is your grip on the stream: `answer.state` is the live state,
        `answer.cancel()` stops it, and `await answer` waits for the end. `mo.ui.anywidget(answer.widget)`
        shows the same view where marimo wants a UI element.
        """
    )
    return


@app.cell
def peek(answer):
    answer.state.status, len(answer.state.text)
    return


@app.cell(hide_code=True)
def provider_note(mo):
    mo.md(
        """
        ## A real provider is one variable away

        The same call streams from a hosted provider: choose a preset with `provider=` and set its
        key variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …) before you start marimo. The next
        cell reads the preset from `SW_PROVIDER`. If that preset's key is not set, `show()` falls
        back to the embedded provider's imitation of it and the view says so.
        """
    )
    return


@app.cell
def second_cell(os, sw):
    PROVIDER = os.environ.get("SW_PROVIDER", "demo")
    second = sw.show("What is the difference between a list and a tuple in Python?", provider=PROVIDER)
    second
    return (second,)


@app.cell(hide_code=True)
def check_note(mo):
    mo.md(
        """
        ## Check

        The last cell waits for both answers and checks what they hold: a ✓ line for each answer,
        or an error that says in plain words which one did not end as expected.
        """
    )
    return


@app.cell
async def check(answer, mo, second):
    lines = []
    for name, handle in {"answer": answer, "second": second}.items():
        state = await handle
        if state.status != "complete":
            raise RuntimeError(f"✗ {name}: {state.message}")
        if not state.text:
            raise RuntimeError(f"✗ {name}: the stream completed, but the answer is empty")
        lines.append(f"✓ {name}: complete, {len(state.text.split())} words in {state.elapsed:.1f} s")
    mo.md("  \n".join([*lines, "both answers complete"]))
    return


if __name__ == "__main__":
    app.run()
