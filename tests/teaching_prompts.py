"""Every question the README and the notebooks ask a model, read from them (so a new one is
checked too): the prompts a class sees first, which a local model must answer and end."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A call that asks a question: sw.show("..."), run("..."), compare("...", ...), %%stream's cell...
_CALL = re.compile(
    r"""\b(?:show|run|arun|astream|stream|compare|ask|chat|send)\(\s*(?:f?)(["'])((?:(?!\1).){3,300})\1"""
)
#: Short teaching questions beyond the documents (a haiku loops when nothing guards it).
EXTRA = (
    "Write a haiku about rain",
    "Translate 'good morning' into French",
    "What is 12 + 30?",
    "Explain binary search in two sentences",
)


def _texts() -> list[str]:
    texts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        texts += ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    return texts


def teaching_prompts() -> list[str]:
    """The questions, each once, in the order first met; demo scenario names and placeholders out."""
    found: dict[str, None] = {}
    for text in _texts():
        for match in _CALL.finditer(text):
            prompt = match.group(2).strip()
            if "demo" in text[match.end() : match.end() + 200].split(")")[0]:
                continue  # asked of a demo scenario (model="demo-long"), not of a model
            if prompt.startswith(("demo", "http", "{")) or "..." in prompt or prompt.endswith((".jsonl", ".gguf")):
                continue
            found.setdefault(prompt, None)
    for prompt in EXTRA:
        found.setdefault(prompt, None)
    return list(found)
