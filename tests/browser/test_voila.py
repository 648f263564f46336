"""The chat app as a Voila app, served by the same Jupyter server: type, press Enter, read."""

from __future__ import annotations

from typing import Any

import pytest
from notebook_driver import SLOW

pytestmark = pytest.mark.browser

ANSWERED = (
    "(i) => { const v = document.querySelectorAll('.sw-chat .sw-view')[i];"
    " return !!v && !!v.querySelector('.sw-status-complete'); }"
)


def test_chat_app_answers_a_typed_question(page: Any, jupyter: Any) -> None:
    page.goto(jupyter.voila_url("chat_app.ipynb"))
    box = page.locator(".sw-chat .sw-chat-input input")
    box.wait_for(timeout=SLOW * 1000)
    assert "import streamwidgets" not in page.inner_text("body"), "an app shows no code"

    box.fill("How does recursion work?")
    box.press("Enter")
    page.wait_for_selector(".sw-chat .sw-chat-user:has-text('How does recursion work?')")
    page.wait_for_function(ANSWERED, arg=0, timeout=SLOW * 1000)
    answer = page.locator(".sw-chat .sw-view .sw-answer").first.inner_text()
    assert len(answer) > 200 and "recurs" in answer.lower(), answer[:300]
    assert box.input_value() == "", "the box is cleared for the next question"

    box.fill("And what is a base case?")
    box.press("Enter")
    page.wait_for_function(ANSWERED, arg=1, timeout=SLOW * 1000)
    assert page.locator(".sw-chat .sw-chat-user").count() == 2
    assert len(page.locator(".sw-chat .sw-view .sw-answer").nth(1).inner_text()) > 100
