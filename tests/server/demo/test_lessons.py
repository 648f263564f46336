"""Every question the README and the notebooks ask gets a scripted answer on its own topic.

The prompts are read from the files themselves (string literals passed to `sw.show`, `run`,
`arun`, `astream`, `compare`, SDK `messages`, `%%stream` cells with their `{name}` filled, CLI
examples), so a new prompt without a lesson fails here. Each is checked against the words its
lesson's title must contain, and over real HTTP against the `X-Demo-Script` header; a question
the demo has no lesson for gets the short reply that says so, never another lesson.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamwidgets.server import DemoServer, scripted_answer
from streamwidgets.server.demo._lessons import GREETING, LESSONS, NO_LESSON, choose_lesson, real_answers

ROOT = Path(__file__).resolve().parents[3]
FAST = {"tokens_per_second": 0, "first_token_delay": 0}

#: The words the lesson's title must contain, for every prompt of the README and the notebooks.
EXPECTED: dict[str, tuple[str, ...]] = {
    "What is a closure?": ("closure",),
    "How does streaming with server-sent events work?": ("server-sent", "stream"),
    "Explain recursion to a class of fifteen-year-olds.": ("recursion",),
    "How does streaming an LLM answer with server-sent events work?": ("server-sent", "stream"),
    "What is the difference between a list and a tuple in Python?": ("collections",),
    "Explain binary search on a sorted list.": ("binary search",),
    "How does photosynthesis work?": ("photosynthesis",),
    "How does Python's asyncio event loop work?": ("asyncio",),
    "Write a long tutorial on Python's asyncio.": ("asyncio",),
    "How does token streaming lower the latency of LLM answers?": ("stream",),
    "Explain recursion with a small example.": ("recursion",),
    "How does binary search work?": ("binary search",),
    "What is the water cycle?": ("water cycle",),
    "What is Big-O notation?": ("big-o",),
    "How does Unicode encode emoji?": ("unicode",),
    "What is a Jupyter kernel?": ("jupyter",),
    "How does recursion work?": ("recursion",),
    "What's the weather in Paris and in Tokyo right now?": ("weather",),
    "What is recursion, in one paragraph?": ("recursion",),
    "What are server-sent events?": ("server-sent",),
    # Asked in the issue: the README's example with a suffix, and the offline fallback's classic.
    "What is a closure in Python?": ("closure",),
    "What is 2+2?": ("arithmetic",),
}

#: Prompts the notebooks send to `demo-tools`, the tool-calling model: it answers from the tools'
#: results, not from a lesson (tests/server/demo/test_demo_tools.py covers what it does with them).
TOOL_PROMPTS = {
    "Search the web for the history of Python.",
    "What do the course notes say about loops?",
    "What is 12 * (3 + 4), and what do the course notes say about recursion?",
    "What is 12 * (3 + 4)?",
    "What is 2 + 3 * 4?",
}

_CALLS = {"show", "run", "arun", "astream", "compare", "make_request", "show_sdk", "send"}


# ---------------------------------------------------------------------------- reading the prompts


def _readme_prompts(text: str) -> list[str]:
    prompts = re.findall(r"\b(?:sw\.)?(?:show|run|arun|astream|compare|make_request)\(\s*\"([^\"\n]+)\"", text)
    prompts += re.findall(r"\.send\(\s*\"([^\"\n]+)\"", text)
    prompts += re.findall(r"streamwidgets ask \"([^\"\n]+)\"", text)
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("%%stream"):
                prompts.append("\n".join(lines[i + 1 :]).strip())
    return prompts


def _strings(node: ast.AST, names: dict[str, list[str]]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        return names.get(node.id, [])
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for item in node.elts for s in _strings(item, names)]
    return []


def _notebook_prompts(notebook: dict[str, Any], variables: dict[str, list[str]]) -> list[str]:
    cells = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    prompts = [cell.split("\n", 1)[1].strip() for cell in cells if cell.startswith("%%stream")]
    trees = [
        ast.parse("\n".join(line for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))))
        for cell in cells
        if not cell.startswith("%%")
    ]
    nodes = [node for tree in trees for node in ast.walk(tree)]
    names: dict[str, list[str]] = {}
    for _ in range(2):  # a loop variable can stand for a list assigned in another cell
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if found := _strings(node.value, names):
                    names[node.targets[0].id] = found
            elif (
                isinstance(node, (ast.comprehension, ast.For))
                and isinstance(node.target, ast.Name)
                and (found := _strings(node.iter, names))
            ):
                names[node.target.id] = found
    for name, found in names.items():
        if len(found) == 1:
            variables.setdefault(name, found)
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CALLS:
            if node.args:
                prompts += _strings(node.args[0], names)
        elif isinstance(node, ast.Dict):
            fields = {k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}
            if isinstance(fields.get("role"), ast.Constant) and fields["role"].value == "user" and "content" in fields:
                prompts += _strings(fields["content"], names)
    return prompts


def documented_prompts() -> dict[str, str]:
    """Every prompt of the README and the notebooks, `{name}` filled, with the file that asks it."""
    variables: dict[str, list[str]] = {}
    asked: list[tuple[str, str]] = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        asked += [(p, path.name) for p in _notebook_prompts(notebook, variables)]
    asked += [(p, "README.md") for p in _readme_prompts((ROOT / "README.md").read_text(encoding="utf-8"))]
    prompts: dict[str, str] = {}
    for prompt, where in asked:
        if not re.search(r"[^\W\d_]", prompt):
            continue  # a placeholder such as "..."
        for name in re.findall(r"\{(\w+)\}", prompt):
            assert name in variables, f"{where}: {prompt!r} uses {{{name}}}, which no notebook or README defines"
            prompt = prompt.replace("{" + name + "}", variables[name][0])
        prompts.setdefault(prompt, where)
    return prompts


PROMPTS = documented_prompts()


def test_the_prompts_are_read_from_the_files():
    # The extraction itself must see the prompts it is meant to see (a broken reader passes nothing).
    assert len(PROMPTS) >= 15
    assert PROMPTS["What is a closure?"] == "README.md"
    assert "Explain recursion to a class of fifteen-year-olds." in PROMPTS  # %%stream with {topic}
    assert "How does recursion work?" in PROMPTS  # an SDK's messages=[...]
    assert "What is a Jupyter kernel?" in PROMPTS  # a list looped over in a comprehension
    assert "What's the weather in Paris and in Tokyo right now?" in PROMPTS  # a variable in a dict


def test_every_documented_prompt_has_an_expected_topic():
    assert all(PROMPTS.get(p) == "10_tools.ipynb" for p in TOOL_PROMPTS), "a tool prompt moved: check TOOL_PROMPTS"
    new = sorted(set(PROMPTS) - set(EXPECTED) - TOOL_PROMPTS)
    assert not new, (
        "prompts with no expected lesson topic (add a lesson in server/_lessons.py if none fits, and an entry "
        f"in EXPECTED): {[(p, PROMPTS[p]) for p in new]}"
    )


@pytest.mark.parametrize("prompt", sorted(EXPECTED))
def test_the_lesson_is_on_the_prompts_topic(prompt: str):
    lesson = choose_lesson(prompt)
    assert lesson.title != NO_LESSON.title, f"{prompt!r} gets no lesson"
    assert any(word in lesson.title.lower() for word in EXPECTED[prompt]), (prompt, lesson.title)
    assert scripted_answer("demo", prompt).text == lesson.text


# ---------------------------------------------------------------------------- over real HTTP


def _ask(server: DemoServer, api: str, model: str, prompt: str, stream: bool = True) -> httpx.Response:
    body: dict[str, Any] = {"model": model, "stream": stream, "demo": FAST}
    if api == "responses":
        body["input"] = prompt
    else:
        body["messages"] = [{"role": "user", "content": prompt}]
    if api == "messages":
        body["max_tokens"] = 4096
    path = {"chat": "chat/completions", "responses": "responses", "messages": "messages"}[api]
    response = httpx.post(f"{server.base_url}/{path}", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response


def _answer_text(api: str, response: httpx.Response, stream: bool = True) -> str:
    """The answer text, read from the stream or the JSON object of each API."""
    if not stream:
        body = response.json()
        if api == "chat":
            return body["choices"][0]["message"]["content"]
        if api == "responses":
            return "".join(part["text"] for item in body["output"] for part in item.get("content", []))
        return "".join(block["text"] for block in body["content"] if block["type"] == "text")
    events = [json.loads(line[len("data: ") :]) for line in response.text.splitlines() if line.startswith("data: {")]
    if api == "chat":
        return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices"))
    if api == "responses":
        return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    return "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta" and "text" in e["delta"])


def test_every_documented_prompt_is_answered_by_its_lesson_over_http(demo_server):
    for prompt in sorted(EXPECTED):
        response = _ask(demo_server, "chat", "demo", prompt)
        lesson = choose_lesson(prompt)
        assert response.headers["x-demo-script"] == lesson.title, prompt
        assert _answer_text("chat", response) == lesson.text, prompt


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("stream", [True, False])
def test_a_question_with_no_lesson_gets_the_reply_that_says_so(demo_server, api: str, stream: bool):
    response = _ask(demo_server, api, "demo", "What is the capital of Mongolia?", stream)
    assert response.headers["x-demo-script"] == "none"
    text = _answer_text(api, response, stream)
    assert text == choose_lesson("What is the capital of Mongolia?").text
    assert text.startswith("This is the scripted offline demo: it has no lesson about that, so it cannot answer it.")
    assert real_answers() in text and "{" not in text


def test_no_lesson_is_short_and_names_what_the_demo_can_answer():
    script = scripted_answer("demo", "Tell me about the French Revolution")
    assert script.label == "none" and script.text == choose_lesson("Tell me about the French Revolution").text
    assert len(script.text_tokens) < min(len(scripted_answer("demo", lesson.title).text_tokens) for lesson in LESSONS)
    assert all(lesson.title in NO_LESSON.text for lesson in LESSONS)
    for model in ("demo-reasoning", "demo-fast", "demo-deep", "demo-slow"):
        other = scripted_answer(model, "Tell me about the French Revolution")
        assert other.label == "none" and "no lesson about that" in other.text, model


def test_greetings_get_a_greeting_and_a_question_beats_a_greeting():
    assert scripted_answer("demo", "Hello!").label == "greeting"
    assert scripted_answer("demo", "hi").text == choose_lesson("hi").text
    assert scripted_answer("demo", "Hi! What is a closure?").label == "closures"
    assert scripted_answer("demo", "What was his name?").label == "none"  # "his" is not "hi"


def test_small_sums_are_worked_out_exactly():
    assert choose_lesson("What is 2+2?").text.startswith("**2 + 2 = 4**")
    assert choose_lesson("what's 2 + 3 x 4?").text.startswith("**2 + 3 × 4 = 14**")
    assert "2 + 3 × 4 = 2 + 12 = 14" in choose_lesson("2 + 3 * 4 = ?").text
    assert choose_lesson("What is 0.1 + 0.2?").text.startswith("**0.1 + 0.2 = 0.3**")
    assert choose_lesson("What is 7/3?").text.startswith("**7 ÷ 3 ≈ 2.333333333**")
    assert "has no value" in choose_lesson("What is 1/0?").text
    assert choose_lesson("What is 10^100?").title == NO_LESSON.title  # not a small sum
    assert choose_lesson("What is 2+2 in binary?").title == NO_LESSON.title  # not only a sum


def test_the_lesson_choice_is_deterministic():
    prompts = [*sorted(EXPECTED), "qwertyuiop zxcv", "Hello", "What is 12*12?"]
    code = (
        "import json, sys; from streamwidgets.server.demo._lessons import choose_lesson; "
        "print(json.dumps([choose_lesson(p).title for p in json.loads(sys.stdin.read())]))"
    )
    runs = []
    for seed in ("1", "2"):  # a hash-based choice would differ between these
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code], input=json.dumps(prompts), capture_output=True, text=True, env=env, check=True
        )
        runs.append(json.loads(out.stdout))
    assert runs[0] == runs[1] == [choose_lesson(p).title for p in prompts]
    assert runs[0][-3:] == ["none", "greeting", "arithmetic"]


@pytest.mark.parametrize(
    "model, label",
    [
        ("demo-markdown", "demo-markdown"),
        ("demo-long", "demo-long"),
        ("demo-xss", "demo-xss"),
        ("demo-tools", "demo-tools"),
        ("demo-error-early", "demo-error-early"),
        ("demo-search", "photosynthesis (web search)"),
        ("demo-reasoning", "photosynthesis"),
        ("demo-cutoff", "photosynthesis"),
        ("venym/demo-fast:online", "photosynthesis"),
    ],
)
def test_every_200_answer_says_what_answered_it(demo_server, model: str, label: str):
    response = _ask(demo_server, "chat", model, "How does photosynthesis work?")
    assert response.headers["x-demo-script"] == label


def test_script_labels_fit_a_header():
    labels = [lesson.title for lesson in (*LESSONS, GREETING, NO_LESSON)] + ["arithmetic"]
    labels += [
        scripted_answer(model, "Why do plants need light?").label
        for model in ("demo-search", "demo-markdown", "demo-long")
    ]
    assert len(set(labels)) == len(labels)
    for label in labels:
        assert label.isascii() and 0 < len(label) <= 60 and label == label.strip() and "\n" not in label, label


def test_every_lesson_is_asked_for_by_its_own_title():
    # A lesson no question can reach is dead text; its own title is the least a question says.
    for lesson in LESSONS:
        assert choose_lesson(f"Tell me about {lesson.title}.") is lesson, lesson.title


@pytest.mark.parametrize(
    "question, title",
    [
        ("Good morning!", "greeting"),
        ("hi there", "greeting"),
        ("Translate 'good morning' into French", "none"),  # mentions a greeting; is not one
        ("Hi! What is a closure?", "closures"),
    ],
)
def test_a_greeting_is_a_question_that_starts_with_one(question: str, title: str):
    assert choose_lesson(question).title == title


@pytest.mark.parametrize("question", ["What is 12 times 7?", "twelve times seven", "What is 12 * 7?"])
def test_a_sum_said_in_words_is_worked_out_like_one_in_figures(question: str):
    lesson = choose_lesson(question)
    assert lesson.title == "arithmetic" and lesson.text.startswith("**12 × 7 = 84**"), lesson.text


def test_the_demo_tells_how_to_get_real_answers_as_this_machine_needs():
    """The dev venv has the `[local]` extra and only the 135M model: pull, never install again."""
    said = real_answers()
    assert "streamwidgets pull" in said and "pip install" not in said
    for question in ("What is the capital of Mongolia?", "hi"):
        text = choose_lesson(question).text
        assert said in text and "{real_answers}" not in text and "pip install" not in text
