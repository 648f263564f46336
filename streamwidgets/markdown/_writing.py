"""Markdown written from what happened (a conversation, a class log), for a page a person reads.

Plain markdown text, not rendered: quoted where it came from a person or a model, so that their
own markdown cannot break the page around it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core import formatting

__all__ = ["conversation_markdown", "quote_block"]


def quote_block(text: str) -> str:
    """`text` as a markdown block quote (every line, the empty ones too)."""
    return "\n".join("> " + line if line else ">" for line in text.strip().splitlines()) or ">"


def conversation_markdown(turns: Iterable[Mapping[str, Any]], *, title: str = "Conversation") -> str:
    """A conversation (`ChatPanel.messages`) as markdown: each question, then its answer."""
    lines = [f"# {title}", ""]
    for message in turns:
        role = message.get("role")
        content = str(message.get("content", ""))
        if role == "system":
            lines += [f"**System:** {formatting.one_line(content)}", ""]
        elif role == "user":
            lines += ["**You:**", "", quote_block(content), ""]
        elif role == "assistant":
            lines += ["**Answer:**", "", content.strip(), "", "---", ""]
    return "\n".join(lines).rstrip() + "\n"
