"""Inside the model, in a real kernel: `%%stream --logprobs` fills the token view, and
`compare()` over temperatures gives one labelled column per value, each with its token view."""

from __future__ import annotations

import pytest
from kernels import Kernel

pytestmark = pytest.mark.kernel

FAST = "demo={'tokens_per_second': 0, 'first_token_delay': 0}"


def test_the_magic_fills_the_token_view(kernel: Kernel):
    kernel.execute("%%stream --base-url {BASE} --model demo --logprobs 3 --as lp\nWhat is a closure in Python?")
    status, count, joined, simulated = kernel.value(
        "[(await lp).status, len(lp.view.tokens.tokens), ''.join(t.text for t in lp.view.tokens.tokens) == lp.text,"
        " 'simulated by the scripted demo' in lp.view.tokens.heading.value]"
    )
    assert status == "complete" and count > 50 and joined and simulated


def test_compare_over_temperatures_labels_each_column_and_shows_its_tokens(kernel: Kernel):
    kernel.execute(
        "sweep = sw.compare('Write a haiku about rain', base_url=BASE, model='demo', temperature=[0, 0.7, 1.5],"
        f" logprobs=3, {FAST})"
    )
    kernel.execute("states = await sweep")
    rows, panes, means = kernel.value(
        "[[r['model'] for r in sweep.rows()], [h.view.tokens is not None for h in sweep.handles],"
        " [sum(t.probability for t in s.tokens) / len(s.tokens) for s in states]]"
    )
    assert [row.split(" · ")[-1] for row in rows] == ["temperature 0", "temperature 0.7", "temperature 1.5"]
    assert panes == [True, True, True]
    assert means[0] > means[1] > means[2]  # the simulated probabilities spread as the temperature rises
