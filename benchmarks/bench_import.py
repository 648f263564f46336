"""What `import` costs: wall time and modules loaded for the entry points a user meets.

Each import runs in a fresh interpreter (`python -X importtime -c "import X"`), alternating between
this checkout and, with `--against DIR`, another one (e.g. a `git worktree` of an older commit),
so that both see the same machine load. The figure is the cumulative import time of the module
itself, as `-X importtime` reports it, median of `--runs`.

    python benchmarks/bench_import.py
    git worktree add /tmp/old <commit> && python benchmarks/bench_import.py --against /tmp/old
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
MODULES = (
    "streamwidgets",
    "streamwidgets.core._sse",
    "streamwidgets.parse",
    "streamwidgets.apps._cli",
    "streamwidgets.widgets",
)
PROBE = "import sys, {module}; print(len(sys.modules), int('IPython' in sys.modules), int('ipywidgets' in sys.modules))"


def measure(tree: Path, module: str) -> tuple[float, int, bool]:
    """(cumulative import µs, modules loaded, notebook stack loaded) for one fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", PROBE.format(module=module)],
        cwd=tree,  # the checkout's package comes first on sys.path
        capture_output=True,
        text=True,
        check=True,
    )
    micros = 0.0
    for line in out.stderr.splitlines():
        if line.startswith("import time:"):
            _, _self, cumulative, name = (part.strip() for part in line.replace("import time:", "|").split("|"))
            if name == module:
                micros = float(cumulative)
    count, ipython, widgets = out.stdout.split()
    return micros, int(count), bool(int(ipython) or int(widgets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, help="another checkout to measure side by side")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    trees = {"this checkout": HERE}
    if args.against:
        trees = {"--against": args.against.resolve(), **trees}
    print("| import | tree | median ms | modules | loads IPython/ipywidgets |")
    print("|---|---|---:|---:|---|")
    for module in MODULES:
        samples: dict[str, list[tuple[float, int, bool]]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():
                samples[name].append(measure(tree, module))
        for name, runs in samples.items():
            ms = statistics.median(r[0] for r in runs) / 1000
            print(f"| `{module}` | {name} | {ms:.0f} | {runs[0][1]} | {'yes' if runs[0][2] else 'no'} |")


if __name__ == "__main__":
    main()
