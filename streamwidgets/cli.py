"""The command line: `streamwidgets serve | ask | demo | replay | providers`.

`ask` streams an answer as plain text into the terminal from any provider; `serve` runs the
embedded offline provider; `demo` is the headless quickstart (no browser, no key, no network).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence, TextIO

import anyio

from .client import make_request, stream_into
from .providers import PROVIDERS
from .recording import replay_into
from .state import StreamState

__all__ = ["main", "TerminalPrinter"]

QUICKSTART_PROMPT = "How does streaming an LLM answer with server-sent events work?"


class TerminalPrinter:
    """Prints what is new in a state each time it is notified: reasoning dimmed, then the answer."""

    def __init__(self, state: StreamState, out: TextIO = sys.stdout, *, reasoning: bool = True) -> None:
        self.state = state
        self.out = out
        self.show_reasoning = reasoning
        self._text = 0
        self._reasoning = 0
        self._color = out.isatty()

    def __call__(self) -> None:
        state = self.state
        if self.show_reasoning and state.reasoning_length > self._reasoning:
            if self._reasoning == 0:
                self._write("[reasoning] ", dim=True)
            self._write(state.reasoning[self._reasoning :], dim=True)
            self._reasoning = state.reasoning_length
        if state.text_length > self._text:
            if self._text == 0 and self._reasoning:
                self._write("\n\n")
            self._write(state.text[self._text :])
            self._text = state.text_length
        self.out.flush()

    def summary(self) -> str:
        state = self.state
        lines = [""]
        for n, source in enumerate(state.sources, 1):
            lines.append(f"[{n}] {source.title or source.url} <{source.url}>")
        for call in state.tool_calls:
            lines.append(f"tool call {call.name}({call.arguments})")
        tokens, estimated = state.completion_tokens
        usage = state.usage
        parts = [f"{'~' if estimated else ''}{tokens} completion tokens"]
        if usage is not None and usage.prompt_tokens is not None:
            parts.insert(0, f"{usage.prompt_tokens} prompt tokens")
        if usage is not None and usage.cost is not None:
            parts.append(f"cost {usage.cost:g}")
        if state.tokens_per_second:
            parts.append(f"{state.tokens_per_second:.0f} tokens/s")
        lines.append(f"[{state.status}] {state.message} · " + ", ".join(parts))
        return "\n".join(lines)

    def _write(self, text: str, dim: bool = False) -> None:
        self.out.write(f"\x1b[2m{text}\x1b[0m" if dim and self._color else text)


async def _ask(args: argparse.Namespace, prompt: str) -> int:
    params = {}
    if args.max_tokens:
        params["max_tokens"] = args.max_tokens
    request = make_request(
        prompt,
        provider=args.provider,
        model=args.model,
        api=args.api,
        base_url=args.base_url,
        system=args.system,
        offline=True if args.offline else None,
        **params,
    )
    if request.offline_note:
        print(f"({request.offline_note})", file=sys.stderr)
    state = StreamState()
    printer = TerminalPrinter(state, reasoning=not args.no_reasoning)
    await stream_into(request, state, notify=printer, record=args.record)
    print(printer.summary())
    return 0 if state.status == "complete" else 1


async def _replay(args: argparse.Namespace) -> int:
    state = StreamState()
    printer = TerminalPrinter(state)
    await replay_into(args.file, state, speed=args.speed, notify=printer)
    print(printer.summary())
    return 0 if state.status == "complete" else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamwidgets", description="Stream LLM answers live (and offline).")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the embedded offline provider (OpenAI / Responses / Messages APIs)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)

    for name, help_ in (("ask", "stream an answer into the terminal"),
                        ("demo", "the headless quickstart: stream a demo answer offline and print it")):
        p = sub.add_parser(name, help=help_)
        if name == "ask":
            p.add_argument("prompt", help="the question; '-' reads it from standard input")
        p.add_argument("--provider", default="demo", choices=sorted(PROVIDERS), help="provider preset (default: demo)")
        p.add_argument("--model")
        p.add_argument("--api", choices=["chat", "responses", "messages"])
        p.add_argument("--base-url")
        p.add_argument("--system", help="a system prompt")
        p.add_argument("--max-tokens", type=int)
        p.add_argument("--offline", action="store_true", help="use the embedded provider's imitation of the preset")
        p.add_argument("--no-reasoning", action="store_true", help="do not print the reasoning")
        p.add_argument("--record", metavar="FILE", help="save the stream as a recording for replay")

    replay = sub.add_parser("replay", help="replay a recording (or a raw SSE file) into the terminal")
    replay.add_argument("file")
    replay.add_argument("--speed", type=float, default=1.0, help="1 = original pace, 0 = no waiting")

    sub.add_parser("providers", help="list the provider presets")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from .server import serve_forever

        print(f"streamwidgets embedded provider on http://{args.host}:{args.port}/v1 (Ctrl+C stops it)", flush=True)
        try:
            serve_forever(args.host, args.port)
        except KeyboardInterrupt:
            pass
        return 0
    if args.command == "providers":
        for p in PROVIDERS.values():
            key = p.key_env or "-"
            print(f"{p.name:<11} {p.default_api:<9} {key:<24} {p.base_url or '(embedded, 127.0.0.1)'}")
        return 0
    if args.command == "replay":
        return anyio.run(_replay, args)
    prompt = QUICKSTART_PROMPT if args.command == "demo" else args.prompt
    if prompt == "-":
        prompt = sys.stdin.read()
    return anyio.run(_ask, args, prompt)

