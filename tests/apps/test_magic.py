"""`%%stream`: how the options on the line are read and the variables in the cell are filled.
The magic in a real kernel (the handle in `_`, the embedded provider reporting what it was asked)
is `tests/kernel/test_classroom.py`."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from streamwidgets.apps._magic import fill_variables, parse_options


def test_options_are_read_like_a_command_line():
    options = parse_options(
        '--provider openai --model gpt-4.1-mini --api responses --system "Be brief, be kind." '
        "--record answer.jsonl --max-tokens 200 --as reply -p temperature=0.2 --offline"
    )
    assert options == {
        "provider": "openai",
        "model": "gpt-4.1-mini",
        "api": "responses",
        "system": "Be brief, be kind.",
        "record": "answer.jsonl",
        "max_tokens": 200,
        "name": "reply",
        "temperature": 0.2,
        "offline": True,
    }
    assert parse_options("") == {}
    with pytest.raises(UsageError, match="--api"):
        parse_options("--api completions")
    with pytest.raises(UsageError, match="quote"):
        parse_options('--system "unclosed')
    with pytest.raises(UsageError, match="unrecognized arguments: --api-key") as refused:
        parse_options("--api-key sk-123")  # a key on the line would be saved with the notebook
    assert "sk-123" not in str(refused.value) and "no option for the key" in str(refused.value)
    with pytest.raises(UsageError, match=r"^%%stream: unrecognized arguments: --modle \(did you mean --model\?\)$"):
        parse_options("--modle demo-fast")
    with pytest.raises(UsageError, match=r"--temprature \(did you mean --temperature\?\)"):
        parse_options("--temprature 0.2 --model demo")


def test_variables_are_filled_and_other_braces_survive():
    namespace = {"topic": "recursion", "n": 3}
    assert fill_variables("Explain {topic} in {n} steps.", namespace) == "Explain recursion in 3 steps."
    code = "Why does `d = {'a': 1}` print {{a}} and f'{x!r}' not?"
    assert fill_variables(code, namespace) == "Why does `d = {'a': 1}` print {a} and f'{x!r}' not?"
    with pytest.raises(UsageError, match="no variable 'missing'"):
        fill_variables("What about {missing}?", namespace)


def test_tools_are_named_on_the_line_and_found_in_the_notebook():
    from streamwidgets.apps._magic import tools_named

    def add(a: int, b: int) -> int:
        return a + b

    options = parse_options("--tools add,search --max-steps 3 --tool-timeout 2.5 --confirm")
    assert options == {"tools": "add,search", "max_steps": 3, "tool_timeout": 2.5, "confirm": True}
    namespace = {"add": add, "search": print, "topic": "loops"}
    assert tools_named("add, search", namespace) == [add, print]
    with pytest.raises(UsageError, match="defines no function 'missing'"):
        tools_named("add,missing", namespace)
    with pytest.raises(UsageError, match="'topic', which is a str, not a function"):
        tools_named("topic", namespace)
    with pytest.raises(UsageError, match="needs the names of functions"):
        tools_named(",", namespace)


def test_a_key_never_rides_on_p_in_the_magic_either():
    with pytest.raises(UsageError) as caught:
        parse_options("-p api_key=sk-SENTINEL-42")
    assert "is not a body field" in str(caught.value) and "sk-SENTINEL-42" not in str(caught.value)
