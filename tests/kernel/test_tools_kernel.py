"""`confirm=True` in a real kernel: the Run and Skip buttons clicked the way the frontend clicks
them, over a real stream from the embedded provider's `demo-tools` model."""

from __future__ import annotations

import time

import pytest
from kernels import Kernel

pytestmark = pytest.mark.kernel

TOOL = '''
ran = []

def get_weather(city: str) -> dict:
    """The current weather in a city."""
    ran.append(city)
    return {"city": city, "temperature": 18}
'''


def test_confirm_run_and_skip_clicked_in_a_real_kernel(kernel: Kernel):
    kernel.execute(TOOL)
    kernel.execute(
        "asking = sw.show('Weather in Paris and Tokyo?', model='demo-tools', base_url=BASE, "
        "tools=[get_weather], confirm=True)"
    )
    rows = "(asking.view.tools.questions.children if asking.view.tools and asking.view.tools.questions else ())"
    deadline = time.monotonic() + 30
    while kernel.value(f"len({rows})") < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert kernel.value("ran") == []  # nothing runs before a click
    run, skip = kernel.value(f"[[row.children[1].model_id, row.children[2].model_id] for row in {rows}]")
    assert kernel.value(f"[row.children[1].description for row in {rows}]") == ["Run", "Run"]
    kernel.click(run[0])  # Run the first call
    kernel.click(skip[1])  # Skip the second
    state = kernel.value(
        "[(await asking).status, [c.result.status for c in asking.state.parts[0].tool_calls], ran,"
        " 'The user declined to run this tool.' in asking.state.text,"
        " 'skipped: you declined' in asking.view.tools.widget.value, len(asking.view.tools.questions.children)]"
    )
    assert state[0] == "complete"
    assert state[1] == ["done", "declined"]
    assert len(state[2]) == 1  # only the call that was let run ran
    assert state[3] and state[4] and state[5] == 0
