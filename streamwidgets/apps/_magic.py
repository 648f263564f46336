"""The `%%stream` cell magic: the cell is the question, the line holds the options.

    %load_ext streamwidgets

    %%stream --model demo-deep --system "Answer like a patient teacher." --as answer
    Explain {topic} to a class of fifteen-year-olds.

The answer streams into the cell's output in the full view (`show()`); the handle is `_`, or the
name given with `--as`. `{name}` in the cell is filled from the notebook's variables (`{{` and `}}`
stay braces, and any other brace is left as it is, so code in a question survives). The line
magic `%stream_defaults --model demo-fast` sets options for the cells that follow (`--reset`
forgets them; with nothing, it shows them). `--tools add,search` offers the notebook's functions
of those names to the model, which the answer then runs as it asks (`--max-steps`,
`--tool-timeout`, `--confirm` shape the loop, as in `show()`).

There is no option for the key on purpose: a key typed on the line would be saved with the
notebook. It comes from the provider's environment variable, as everywhere else.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Mapping
from typing import Any, Optional

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from ..core import APIS, PROVIDERS
from ._cli import _param, _positive, unknown_arguments

__all__ = ["StreamMagics", "load_ipython_extension", "fill_variables", "parse_options", "tools_named"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports a mistake as IPython's UsageError (one line, no traceback)."""

    def error(self, message: str) -> Any:
        raise UsageError(f"%%stream: {message}")

    def exit(self, status: int = 0, message: Optional[str] = None) -> Any:
        raise UsageError(message or self.format_help())


def _parser() -> _Parser:
    p = _Parser(prog="%%stream", add_help=False, description="Stream the cell, as a question, into its output.")
    p.add_argument("--provider", choices=sorted(PROVIDERS))
    p.add_argument("--model")
    p.add_argument("--api", choices=APIS)
    p.add_argument("--base-url", dest="base_url")
    p.add_argument("--system", help="a system prompt")
    p.add_argument("--max-tokens", dest="max_tokens", type=_positive)
    p.add_argument("--temperature", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument(
        "--logprobs", type=_logprobs, metavar="N", help="show each token's probability and N alternatives (0-20)"
    )
    p.add_argument("--retries", type=int, help="tries after a 429/503 before the first token (0: none)")
    p.add_argument("--offline", action="store_true", default=None, help="stream from the embedded provider")
    p.add_argument("--record", metavar="FILE", help="save the stream as a recording for sw.replay()")
    p.add_argument("--log", metavar="FILE", help="append the question and answer to a class log (log_to)")
    p.add_argument("--tools", metavar="NAME,NAME", help="functions of the notebook the model may call")
    p.add_argument("--max-steps", dest="max_steps", type=_positive, help="requests in all, tool steps included")
    p.add_argument("--tool-timeout", dest="tool_timeout", type=float, metavar="SECONDS", help="per tool call")
    p.add_argument("--confirm", action="store_true", help="ask Run / Skip before each tool call")
    p.add_argument("--param", "-p", action="append", type=_param, default=None, metavar="NAME=VALUE")
    p.add_argument("--as", dest="name", metavar="NAME", help="the variable that holds the handle (default: _)")
    p.add_argument("--reset", action="store_true", help="(%%stream_defaults) forget the defaults")
    p.add_argument("--help", "-h", action="help")
    return p


def _logprobs(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        count = -1
    if not 0 <= count <= 20:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 0 to 20 (alternatives per token), not {value!r}"
        )
    return count


def parse_options(line: str) -> dict[str, Any]:
    """The options a magic line sets (only those given), as keywords for `show()`."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f'%%stream: {exc} (quote a value with spaces in it: --system "...")') from None
    parser = _parser()
    options, extras = parser.parse_known_args(words)
    if extras:
        raise UsageError(f"%%stream: {unknown_arguments(extras, parser)}")
    given = {k: v for k, v in vars(options).items() if v is not None and v is not False}
    params = dict(given.pop("param", []))
    given.update(params)
    return given


_NAME = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_variables(text: str, namespace: Mapping[str, Any]) -> str:
    """`{name}` becomes `str(namespace[name])`; `{{` and `}}` become braces; other braces stay.

    A name that the notebook does not define is an error that says so, rather than a question
    sent with a hole in it.
    """

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        name = match.group(1)
        if name not in namespace:
            raise UsageError(
                f"%%stream: the cell names {{{name}}}, but no variable {name!r} is defined "
                "(define it in a cell above, or write {{ and }} for literal braces)"
            )
        return str(namespace[name])

    return _NAME.sub(fill, text)


def tools_named(names: str, namespace: Mapping[str, Any]) -> list[Any]:
    """`--tools add,search` as the notebook's functions of those names."""
    found = []
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        value = namespace.get(name)
        if value is None:
            raise UsageError(f"%%stream: --tools names {name!r}, but the notebook defines no function {name!r}")
        if not callable(value):
            raise UsageError(f"%%stream: --tools names {name!r}, which is a {type(value).__name__}, not a function")
        found.append(value)
    if not found:
        raise UsageError("%%stream: --tools needs the names of functions: --tools add,search")
    return found


@magics_class
class StreamMagics(Magics):
    """`%%stream` and `%stream_defaults`; the defaults live as long as the kernel."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.defaults: dict[str, Any] = {}

    @cell_magic("stream")  # type: ignore[arg-type]  # IPython's decorators are typed for functions
    def stream(self, line: str, cell: str) -> None:
        from ._show import show

        shell = self.shell
        assert shell is not None
        options = {**self.defaults, **parse_options(line)}
        options.pop("reset", None)
        name = options.pop("name", None) or "_"
        if not name.isidentifier():
            raise UsageError(f"%%stream: --as needs a variable name, not {name!r}")
        if "tools" in options:
            options["tools"] = tools_named(options["tools"], shell.user_ns)
        prompt = fill_variables(cell.strip("\n"), shell.user_ns)
        if not prompt.strip():
            raise UsageError("%%stream: the cell is empty; write the question under the %%stream line")
        handle = show(prompt, **options)
        shell.user_ns[name] = handle

    @line_magic("stream_defaults")  # type: ignore[arg-type]
    def stream_defaults(self, line: str) -> Optional[dict[str, Any]]:
        options = parse_options(line)
        if options.pop("reset", False):
            self.defaults.clear()
        self.defaults.update(options)
        return dict(self.defaults) if not line.strip() else None


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext streamwidgets` (or `streamwidgets.apps._magic`): register `%%stream` and `%stream_defaults`."""
    ipython.register_magics(StreamMagics)
