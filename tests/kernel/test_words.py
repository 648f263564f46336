"""What a teacher reads in a real kernel, word for word: the small model's note wherever it
answers, a field of another API, a misspelt provider, a sum said in words (docs/local-model.md,
docs/wire-formats.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernels import Kernel

pytestmark = pytest.mark.kernel


def error_of(kernel: Kernel, code: str) -> str:
    return kernel.value(f"_err(lambda: {code})")


@pytest.fixture(scope="module")
def words(kernel: Kernel) -> Kernel:
    kernel.execute(
        "def _err(call):\n"
        "    try:\n"
        "        call()\n"
        "    except Exception as exc:\n"
        "        return f'{type(exc).__name__}: {exc}'\n"
        "    return 'no error'\n"
    )
    return kernel


@pytest.mark.local
def test_the_small_model_says_it_is_small_when_asked_for_by_name(words: Kernel, tmp_path: Path):
    words.execute(f"import os\nos.environ['STREAMWIDGETS_LOCAL_STATE'] = {str(tmp_path)!r}")
    warnings = words.value('(await sw.arun("What is a closure?", provider="local", max_tokens=8)).warnings')
    assert any("a very small model, its answers are often wrong" in w for w in warnings), warnings


def test_a_field_of_another_api_is_named_as_such(words: Kernel):
    said = error_of(words, 'sw.make_request("hi", provider="demo", api="messages", seed=1)')
    assert said.startswith("ValueError: seed= is not a field of the Anthropic Messages API"), said
    assert "OpenAI-compatible chat" in said and "api='chat'" in said and "did you mean" not in said


def test_a_misspelt_provider_is_named(words: Kernel):
    said = error_of(words, 'sw.show("hi", provider="lokal")')
    assert "unknown provider 'lokal'; did you mean 'local'?" in said, said


@pytest.mark.parametrize("question", ["What is 12 times 7?", "twelve times seven"])
def test_the_demo_works_out_a_sum_said_in_words(words: Kernel, question: str):
    text = words.value(f'(await sw.show({question!r}, provider="demo", demo={{"tokens_per_second": 0}})).text')
    assert text.startswith("**12 × 7 = 84**"), text
