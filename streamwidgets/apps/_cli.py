"""The command line: `streamwidgets serve | ask | demo | replay | providers | pull`.

`ask` streams an answer as plain text into the terminal from any provider; `serve` runs the
embedded offline provider; `demo` is the headless quickstart (no browser, no key, no network).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import heapq
import json
import math
import os
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

import anyio

from ..core import APIS, FIELDS, PROVIDERS, STAND_IN_EXTRAS, Token, closest, is_recording, scrub
from ..net import Live, RunOptions, Source, Stream, make_request, replay
from ._terminal import TerminalPrinter, printable

__all__ = ["main"]

QUICKSTART_PROMPT = "How does streaming an LLM answer with server-sent events work?"


async def _ask(args: argparse.Namespace, prompt: str) -> int:
    params = dict(args.param)
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    if args.logprobs is not None:
        params["logprobs"] = args.logprobs
    request = make_request(
        prompt,
        provider=args.provider,
        model=args.model,
        api=args.api,
        base_url=args.base_url,
        system=args.system,
        offline=True if args.offline else None,
        local_model=args.local_model,
        **params,
    )
    return await _print(Live(request), record=args.record, parts=args.parts)


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
    source = replay(args.file, speed=args.speed)
    print(printable(f"({source.labels().note})"), file=sys.stderr)  # the header's words: a recording's own
    return await _print(source)


async def _print(source: Source, *, record: Optional[str] = None, parts: int = 1) -> int:
    """Stream `source` onto the terminal (the answer on stdout, what happens meanwhile on stderr)."""
    stream = Stream(source, RunOptions(record=record, parts=parts))
    printer = TerminalPrinter(
        stream.state, sys.stdout, redact=lambda text: cli_words(scrub(source.redact(text))), status=sys.stderr
    )
    stream.notify = printer.notify
    stream.on_part.append(printer.attach)
    await stream.run()
    printer.finish()
    if stream.state.tokens:
        print(
            printable(least_likely_text(stream.state.tokens, simulated=stream.state.script is not None)),
            file=sys.stderr,
        )
    return 0 if stream.state.status == "complete" else 1


def least_likely_text(tokens: Sequence[Token], *, simulated: bool, rows: int = 5) -> str:
    """`ask --logprobs N`: the least likely choices of the answer, as a few lines for the terminal."""
    chosen = heapq.nsmallest(
        rows, (pair for pair in enumerate(tokens) if pair[1].text.strip()), key=lambda p: p[1].logprob
    )
    source = " (simulated by the scripted demo)" if simulated else ""
    lines = [f"[{len(tokens):,} tokens{source}; the least likely choices:]"]
    for position, token in sorted(chosen, key=lambda pair: pair[0]):
        others = ", ".join(f"{text!r} {math.exp(lp):.0%}" for text, lp in token.top[:3] if text != token.text)
        lines.append(
            f"  #{position + 1:<5} {token.text!r:>14} {token.probability:6.1%}"
            + (f"   instead: {others}" if others else "")
        )
    return "\n".join(lines)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a whole number, 1 or more")
    return value


def _param(text: str) -> tuple[str, Any]:
    """`-p NAME=VALUE`: a request body field, its value read as JSON when it parses. The package's
    own options have flags of their own; a key never rides on a command line (shell history,
    `ps`), so `-p api_key=...` is refused without repeating the value."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError("expected NAME=VALUE, e.g. temperature=0.2")
    if "key" in name.lower() or name in ("api_key", "base_url", "provider"):
        raise argparse.ArgumentTypeError(
            f"-p {name}=... is not a body field: a key goes in the provider's environment variable "
            "(e.g. OPENAI_API_KEY), and the provider and address have flags of their own"
        )
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value  # a plain word: a string


def unknown_arguments(extras: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's "unrecognized arguments" in one line that names the closest option of
    `parser` for each typo (`--modle` -> `--model`). Only the option names are quoted, never
    what follows them: a value given to an option that does not exist may be a key."""
    options = [option for action in parser._actions for option in action.option_strings]
    named = []
    for extra in extras:
        if not extra.startswith("-") or extra == "-":
            continue
        flag = extra.split("=", 1)[0]
        if "key" in flag.lower():
            named.append(
                f"{flag} (there is no option for the key: it is read from the provider's environment variable)"
            )
            continue
        close = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
        if close:
            named.append(f"{flag} (did you mean {close[0]}?)")
        elif "--param" in options:
            field = _body_field(flag.lstrip("-").replace("-", "_"))
            named.append(f"{flag} (a request body field is passed as -p {field}=VALUE)")
        else:
            named.append(flag)
    if not named:
        return f"unrecognized arguments: {len(extras)} more than expected (quote a question with spaces in it)"
    return f"unrecognized arguments: {', '.join(named)}"


def _body_field(name: str) -> str:
    """The body field a flag names, or most likely misspells (`temprature` -> `temperature`): one
    step from a typo to the line that works."""
    fields = set().union(*FIELDS.values(), *STAND_IN_EXTRAS.values())
    return name if name in fields else closest(name, fields) or name


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command line's parser and each command's own (whose options a typo is matched to)."""
    parser = argparse.ArgumentParser(prog="streamwidgets", description="Stream LLM answers live (and offline).")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the embedded offline provider (OpenAI / Responses / Messages APIs)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web page that may read the answers (CORS), e.g. a JupyterLite site on http://127.0.0.1:8000; "
        "repeat for more. By default no page may.",
    )

    local = sub.add_parser(
        "serve-local",
        help="run one local model for a whole class (llama.cpp's server, one slot per student, until Ctrl+C)",
    )
    local.add_argument("--model", help="a curated name or a .gguf file (default: the first found)")
    local.add_argument("--slots", type=_positive, default=10, help="answers at once, one per student (default: 10)")
    local.add_argument("--port", type=int, default=8080)
    local.add_argument(
        "--key-file",
        default="class-model.key",
        help="the key students' gateway uses: read from this file, made (mode 0600) if missing",
    )

    for name, help_ in (
        ("ask", "stream an answer into the terminal"),
        ("demo", "the headless quickstart: stream a demo answer offline and print it"),
    ):
        p = sub.add_parser(name, help=help_)
        if name == "ask":
            p.add_argument("prompt", help="the question; '-' reads it from standard input")
        if name == "ask":
            p.add_argument(
                "--provider",
                choices=sorted(PROVIDERS),
                help="provider preset (default: none — a class-quality local model if this machine has one, else the scripted demo)",
            )
            p.add_argument(
                "--local-model",
                metavar="GGUF_OR_NAME",
                help="the local model's file, or a curated name (streamwidgets pull --list)",
            )
        else:
            p.set_defaults(provider="demo", local_model=None)
        p.add_argument("--model")
        p.add_argument("--api", choices=APIS)
        p.add_argument("--base-url")
        p.add_argument("--system", help="a system prompt")
        p.add_argument("--max-tokens", type=_positive, help="the answer's token limit")
        if name == "ask":
            p.add_argument(
                "--logprobs",
                type=int,
                choices=range(21),
                metavar="N",
                help="ask for token probabilities with N alternatives (0-20); the least likely are listed at the end",
            )
        else:
            p.set_defaults(logprobs=None)  # `demo` asks for none; `_ask` reads the same namespace
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
        p.add_argument(
            "--parts",
            type=_positive,
            default=1,
            metavar="N",
            help="continue an answer that is cut off, up to N parts in all (default: 1, no Continue)",
        )

    replay = sub.add_parser("replay", help="replay a recording (or a raw SSE file) into the terminal")
    replay.add_argument("file")
    replay.add_argument("--speed", type=float, default=1.0, help="1 = original pace, 0 = no waiting")

    sub.add_parser("providers", help="list the provider presets")

    pull = sub.add_parser("pull", help="fetch a curated local model into the Hugging Face cache (once, with a network)")
    pull.add_argument("name", nargs="?", help="the model's name (default: the recommended one; see --list)")
    pull.add_argument("--list", action="store_true", help="list the curated models")
    return parser, dict(sub.choices)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command; a user's mistake (a bad option, a missing file, a busy port) is one
    line on stderr and exit status 2, never a traceback."""
    parser, commands = _parsers()
    args, extras = parser.parse_known_args(argv)
    if extras:
        print(
            printable(f"streamwidgets {args.command}: {unknown_arguments(extras, commands[args.command])}"),
            file=sys.stderr,
        )
        return 2
    try:
        return _run(args)
    except KeyboardInterrupt:  # Ctrl+C: the answer so far is printed; one line, the shell's status
        print(f"\nstreamwidgets {args.command}: stopped by Ctrl+C", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `streamwidgets demo | head -2`: the reader left, nothing to say
        _drop_stdout()
        return 1
    except (ValueError, TypeError, OSError) as exc:  # a bad option or value: its words, not a traceback
        print(printable(f"streamwidgets {args.command}: {cli_words(_plain(exc))}"), file=sys.stderr)
        return 2


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's own flush at exit does not fail again
    on the closed pipe (and print an error after we said nothing)."""
    with contextlib.suppress(OSError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


#: The Python API's words in the library's messages, as the CLI's own flags and commands.
_CLI_WORDS = (
    ("`offline=True`", "`--offline`"),
    ("offline=True", "--offline"),
    ("`sw.replay(path)`", "`streamwidgets replay FILE`"),
    ("`show_replay()`", "`streamwidgets replay FILE`"),
)


def cli_words(text: str) -> str:
    """A message of the library, worded for someone at the command line."""
    for python, flag in _CLI_WORDS:
        text = text.replace(python, flag)
    return text


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        from ..server import DemoServer

        # bind first, announce a real one; origins are checked and written as a browser does
        server = DemoServer(args.host, args.port, allow_origins=args.allow_origin).start()
        print(f"streamwidgets embedded provider on {server.base_url} (Ctrl+C stops it)", flush=True)
        if server.allow_origins:
            print(f"pages that may read its answers (CORS): {', '.join(server.allow_origins)}", flush=True)
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
    if args.command == "pull":
        return _pull(args)
    if args.command == "serve-local":
        return _serve_local(args)
    prompt = QUICKSTART_PROMPT if args.command == "demo" else args.prompt
    if prompt == "-":
        prompt = sys.stdin.read().strip()
        if not prompt:
            raise ValueError("no question arrived on standard input")
    return anyio.run(_ask, args, prompt)


class _Signalled(Exception):
    """`serve-local` was asked to stop by a signal (its words: "Ctrl+C", "SIGTERM"...)."""


_STOP_SIGNALS = {"SIGINT": "Ctrl+C", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP (its terminal closed)"}


def _serve_local(args: argparse.Namespace) -> int:
    """One local model for a class, in the foreground: a fixed port and a key kept in a file, so
    that the class gateway is configured once (docs/classroom.md); it never leaves when idle. Its
    model server ends with it however it ends: Ctrl+C, SIGTERM (a hub's culler, `kill`), SIGHUP,
    each said in one line, or SIGKILL (the server watches a pipe from this process and ends when
    the pipe does). The key file must be the user's alone; the state goes in their private folder."""
    import signal

    from ..server.local import (
        CONTEXT_PER_SLOT,
        base_url,
        class_key,
        default_threads,
        find_weights,
        fits_in_memory,
        local_model_missing,
        state_folder,
    )

    missing = local_model_missing()
    if missing is not None:
        raise ValueError(missing)
    weights = find_weights(args.model)
    if weights is None:
        raise ValueError("no local model file on this machine: streamwidgets pull, or --model path.gguf")
    fits_in_memory(weights, args.slots)
    if not 0 < args.port < 65536:
        raise ValueError(f"--port {args.port} is not a port (1 to 65535)")
    class_key(Path(args.key_file))  # made if missing; refused, in one line, if not the user's alone
    print(
        f"streamwidgets: {weights.describe()} for {args.slots} students on {base_url(args.port)}, "
        f"its key in {args.key_file} (Ctrl+C stops it)",
        flush=True,
    )
    command = [
        sys.executable, "-m", "streamwidgets.server.local._host",
        "--weights", str(weights.path), "--alias", weights.alias,
        "--state", str(state_folder() / f"serve-local-{args.port}.json"),
        "--threads", str(default_threads()), "--slots", str(args.slots), "--ctx", str(CONTEXT_PER_SLOT),
        "--idle", "0", "--linger", "0", "--port", str(args.port), "--key-file", args.key_file, "--with-parent",
    ]  # fmt: skip

    def stop(signum: int, frame: Any) -> None:
        raise _Signalled(_STOP_SIGNALS[signal.Signals(signum).name])

    names = [name for name in _STOP_SIGNALS if hasattr(signal, name)]
    previous = {name: signal.signal(getattr(signal, name), stop) for name in names}
    try:
        with subprocess.Popen(
            command, stdin=subprocess.PIPE, env=dict(os.environ, OMP_WAIT_POLICY="PASSIVE"), start_new_session=True
        ) as process:
            try:
                return process.wait()
            except _Signalled as why:
                for name in names:
                    signal.signal(getattr(signal, name), signal.SIG_IGN)  # one stop at a time
                process.terminate()
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                print(f"streamwidgets serve-local: stopped by {why}, and the model server with it", file=sys.stderr)
                return 0
    finally:
        for name, handler in previous.items():
            signal.signal(getattr(signal, name), handler)


def _pull(args: argparse.Namespace) -> int:
    """`pull --list` prints the catalog; `pull [NAME]` fetches the model and names where it went."""
    from ..server.local import PullError, catalog_table, pull

    if args.list:
        print(catalog_table())
        return 0
    try:
        weights = pull(args.name, say=lambda words: print(f"streamwidgets pull: {words}", file=sys.stderr))
    except (PullError, ValueError) as exc:
        print(printable(f"streamwidgets pull: {exc}"), file=sys.stderr)
        return 1
    print(f"{weights.describe()}: {weights.path}")
    return 0


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
