"""`python -m streamwidgets.server --scenarios-table`: print the demo models' table.

The README's "For teachers" table and the package docstring's table are this output (a test
holds them to it), so after changing a scenario, paste what this prints. To run the server
itself, use `streamwidgets serve`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from .demo import scenarios_table


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streamwidgets.server", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenarios-table",
        nargs="?",
        const="markdown",
        choices=("markdown", "text"),
        help="print the scenario table: markdown (the README's, the default) or text (the package docstring's)",
    )
    args = parser.parse_args(argv)
    if args.scenarios_table is None:
        parser.print_help()
        return 2
    sys.stdout.write(scenarios_table(args.scenarios_table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
