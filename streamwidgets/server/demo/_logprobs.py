"""Simulated token log-probabilities for the scripted demo, in OpenAI's entry shape.

The scripted demo has no model, so it has no probabilities: when a request asks for them (chat
`logprobs`, Responses' `include`), it makes up plausible ones, the same for the same token at
the same place every time. Most tokens are near-certain, some are one of a few likely choices,
and now and then a less likely token was "chosen" — what a real sampler does — so the token view
has something to show offline. The client says they are simulated (the `X-Demo-Script` header
marks every scripted answer). The temperature spreads them out as it would a model's (the
scripted text stays the same); at 0 the chosen token is always the most likely one.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Optional

__all__ = ["simulated_logprobs"]

#: Alternatives by the shape of the chosen token (then common tokens, to fill up to 20).
_WORDS = (" the", " a", " this", " that", " it", " an", " its", " one", " each", " our", " some", " any")
_PUNCTUATION = (",", ".", ";", ":", " -", "!", "?", " (")
_SPACES = ("\n\n", "\n", " ", "\n\n\n")
_FILL = (" and", " of", " to", " is", " in", " for", " with", " on", " as", " by", " or", " be", *_WORDS)
_TEMPERATURE_FLOOR = 0.25  # scaled as if sampled at this temperature when asked for less (0: greedy)
_REST = math.log(50)  # the rest of the vocabulary, as fifty tokens as likely as the last alternative


def simulated_logprobs(token: str, position: int, top: int, temperature: Optional[float]) -> dict[str, Any]:
    """One element of `choices[0].logprobs.content` (or a Responses delta's `logprobs`) for the
    scripted `token` at `position`, with `top` alternatives (the chosen token among them)."""
    digest = hashlib.blake2b(f"{position}|{token}".encode("utf-8", "surrogatepass"), digest_size=24).digest()
    u = [b / 255 for b in digest]
    if u[0] < 0.70:
        gap = 2.5 + 6.0 * u[1]  # near-certain
    elif u[0] < 0.94:
        gap = 0.2 + 2.2 * u[1]  # one of a few likely choices
    else:
        gap = -(0.1 + 1.3 * u[1])  # the sampler took a less likely token
    t = 1.0 if temperature is None else float(temperature)
    if t <= 0:
        gap = abs(gap) + 0.5  # greedy: the chosen token is the most likely one
    t = max(_TEMPERATURE_FLOOR, t)
    others = _alternatives(token, digest, max(top, 1) + 1)
    logits = [0.0]
    step = -gap
    for i in range(len(others)):
        logits.append(step)
        step -= 0.3 + 1.6 * u[2 + i % 20]
    scaled = [logit / t for logit in logits]
    rest = step / t + _REST
    peak = max(*scaled, rest)
    norm = peak + math.log(sum(math.exp(x - peak) for x in scaled) + math.exp(rest - peak))
    logprobs = [round(x - norm, 6) for x in scaled]
    candidates = sorted(zip([token, *others], logprobs, strict=True), key=lambda pair: -pair[1])[:top]
    return {
        "token": token,
        "logprob": logprobs[0],
        "bytes": list(token.encode("utf-8", "surrogatepass")),
        "top_logprobs": [
            {"token": text, "logprob": lp, "bytes": list(text.encode("utf-8", "surrogatepass"))}
            for text, lp in candidates
        ],
    }


def _alternatives(token: str, digest: bytes, wanted: int) -> list[str]:
    """`wanted` distinct tokens other than `token` that could have stood in its place."""
    core = token.strip()
    spaced = token.startswith(" ")
    pool: list[str] = []
    if core.isalpha():
        lead = " " if spaced else ""
        pool += [lead + core.lower(), lead + core.capitalize(), core]
        if len(core) > 3:
            pool += [lead + core + "s", lead + core[:-1]]
        pool += list(_WORDS) if spaced else []
    elif core.isdigit():
        pool += [(" " if spaced else "") + str((int(core[-1]) + k) % 10) for k in range(1, 10)]
    elif not core:
        pool += list(_SPACES)
    else:
        pool += list(_PUNCTUATION)
    start = digest[-1] % max(1, len(pool))
    pool = pool[start:] + pool[:start] + list(_FILL)
    out: list[str] = []
    for candidate in pool:
        if candidate != token and candidate not in out:
            out.append(candidate)
            if len(out) == wanted:
                break
    return out
