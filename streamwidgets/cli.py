"""The command line: `streamwidgets serve | ask | demo | replay | providers`.

`ask` streams an answer as plain text into the terminal from any provider; `serve` runs the
embedded offline provider; `demo` is the headless quickstart (no browser, no key, no network).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

import anyio

from .client import make_request, stream_into
from .providers import PROVIDERS
from .recording import replay_into
from .state import StreamState
from .terminal import TerminalPrinter

__all__ = ["main"]

QUICKSTART_PROMPT = "How does streaming an LLM answer with server-sent events work?"


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
    printer = TerminalPrinter(state, sys.stdout, redact=request.redact)
    await stream_into(request, state, notify=printer.notify, record=args.record)
    printer.finish()
    return 0 if state.status == "complete" else 1


async def _replay(args: argparse.Namespace) -> int:
    state = StreamState()
    printer = TerminalPrinter(state, sys.stdout)
    await replay_into(args.file, state, speed=args.speed, notify=printer.notify)
    printer.finish()
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

