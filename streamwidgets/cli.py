"""The command line: `streamwidgets serve | ask | demo | replay | providers`.

`ask` streams an answer as plain text into the terminal from any provider; `serve` runs the
embedded offline provider; `demo` is the headless quickstart (no browser, no key, no network).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import re
import sys
import threading
from collections.abc import Sequence
from typing import Any, Optional

import anyio

from .client import make_request, stream_into
from .providers import PROVIDERS
from .recording import is_recording, recording_meta, replay_into
from .state import StreamState
from .terminal import TerminalPrinter

__all__ = ["main"]

QUICKSTART_PROMPT = "How does streaming an LLM answer with server-sent events work?"


async def _ask(args: argparse.Namespace, prompt: str) -> int:
    params = dict(args.param)
    if args.max_tokens is not None:
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
    printer = TerminalPrinter(state, sys.stdout, redact=request.redact, status=sys.stderr)
    await stream_into(request, state, notify=printer.notify, record=args.record)
    printer.finish()
    return 0 if state.status == "complete" else 1


_SSE_LINE = re.compile(rb"^(data|event|id|retry)?:", re.M)


def _check_replayable(path: str) -> None:
    """A recording, or a raw event stream (some line is an SSE field or comment); else say what it is."""
    with open(path, "rb") as f:
        head = f.read(64 * 1024)
    if is_recording(head) or _SSE_LINE.search(head):
        return
    raise ValueError(f"{path} is not a streamwidgets recording or an event stream (record one with `ask --record`)")


async def _replay(args: argparse.Namespace) -> int:
    _check_replayable(args.file)
    when = recording_meta(args.file).get("recorded_at")
    print(f"(Replay of a recording{f' made {when}' if when else ''}.)", file=sys.stderr)
    state = StreamState()
    printer = TerminalPrinter(state, sys.stdout)
    await replay_into(args.file, state, speed=args.speed, notify=printer.notify)
    printer.finish()
    return 0 if state.status == "complete" else 1


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a whole number of tokens, 1 or more")
    return value


def _param(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError("expected NAME=VALUE, e.g. temperature=0.2")
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        return name.strip(), value  # a plain word: a string


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamwidgets", description="Stream LLM answers live (and offline).")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the embedded offline provider (OpenAI / Responses / Messages APIs)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)

    for name, help_ in (
        ("ask", "stream an answer into the terminal"),
        ("demo", "the headless quickstart: stream a demo answer offline and print it"),
    ):
        p = sub.add_parser(name, help=help_)
        if name == "ask":
            p.add_argument("prompt", help="the question; '-' reads it from standard input")
        p.add_argument("--provider", default="demo", choices=sorted(PROVIDERS), help="provider preset (default: demo)")
        p.add_argument("--model")
        p.add_argument("--api", choices=["chat", "responses", "messages"])
        p.add_argument("--base-url")
        p.add_argument("--system", help="a system prompt")
        p.add_argument("--max-tokens", type=_positive, help="the answer's token limit")
        p.add_argument(
            "--param",
            "-p",
            action="append",
            type=_param,
            default=[],
            metavar="NAME=VALUE",
            help="a request body field, e.g. -p temperature=0.2 (VALUE is read as JSON when it parses)",
        )
        p.add_argument("--offline", action="store_true", help="use the embedded provider's imitation of the preset")
        p.add_argument("--record", metavar="FILE", help="save the stream as a recording for replay")

    replay = sub.add_parser("replay", help="replay a recording (or a raw SSE file) into the terminal")
    replay.add_argument("file")
    replay.add_argument("--speed", type=float, default=1.0, help="1 = original pace, 0 = no waiting")

    sub.add_parser("providers", help="list the provider presets")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; a user's mistake (a bad option, a missing file, a busy port) is one
    line on stderr and exit status 2, never a traceback."""
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except (ValueError, OSError) as exc:
        print(f"streamwidgets {args.command}: {_plain(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `streamwidgets ask ... | head`: the reader left, nothing to say
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        from .server import DemoServer

        server = DemoServer(args.host, args.port).start()  # bind first: announce only a real server
        print(f"streamwidgets embedded provider on {server.base_url} (Ctrl+C stops it)", flush=True)
        try:
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
        finally:
            server.stop()
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
        prompt = sys.stdin.read().strip()
        if not prompt:
            raise ValueError("no question arrived on standard input")
    return anyio.run(_ask, args, prompt)


def _plain(exc: BaseException) -> str:
    """An OS error in words (`[Errno 98] Address already in use` says less than it could)."""
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {exc.filename}"
    if isinstance(exc, IsADirectoryError):
        return f"{exc.filename} is a folder, not a file"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename}"
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return "that port is already in use (another server runs there): pass --port 0 for a free one"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f": {exc.filename}" if exc.filename else "")
    return str(exc)
