"""The kernel side of one answer in Pyodide (JupyterLite's Python) beside CPython, per token.

One 20,000-token chat-completions answer (the demo's asyncio tutorial, `_segment_server`'s `long`
text: headings, lists, tables, code; one SSE event per token, 1,000 tokens/s) goes through the
whole kernel side of `show()` — SSE bytes → normalized events → `StreamState` → incremental
markdown → widget updates, every comm message recorded — in `_pyodide_workload.run_once`, the
same Python source in both runtimes (its docstring says how, and why its clock is virtual: the
frames, reads and messages are those of a stream at 1,000 tokens/s, identical in both runtimes,
and nothing sleeps, so the wall time is the processing):

* **CPython**: this interpreter, in this process, with the standard library's JSON: orjson is
  kept out (`sys.modules`), so both run the same code. Pyodide has no orjson here: its own
  distribution builds one (its lock file lists it), but the npm package carries no wheels, and
  PyPI has none for its platform. CPU is `time.process_time()` around the call.
* **Pyodide** in Node (`_pyodide_run.mjs`, started once): the npm package `pyodide@314.0.6`
  (Python 3.14, core only) from the npm registry, kept with its extraction under
  `~/.cache/streamwidgets/pyodide-node/`; the package's dependencies as wheels for Pyodide's
  platform (`pip download --only-binary=:all: --platform pyemscripten_..._wasm32`: pure wheels,
  and pydantic_core's own build), pinned to the versions this interpreter has on the measured
  path, and streamwidgets' own wheel built from this tree (`pip wheel --no-deps`), installed with
  `micropip.install("emfs:...")`. CPU is Node's `process.cpuUsage()` (user + system, the whole
  Node process) around the call. Its startup (load, install, imports) is reported apart.
* **CPython + orjson** (`streamwidgets[fast]`, what a desktop kernel has), in a subprocess of this
  script, when orjson is installed here (`--no-orjson` leaves it out).

Each runtime streams the answer once untimed first (Pygments compiling its lexers, the kernel-wide
stylesheet sent once), then `--runs` times, the runtimes in turn and the order rotating every
round; figures are medians, with the ratio of Pyodide to CPython.

    .venv/bin/python benchmarks/bench_pyodide.py             # ~25 s (the first run downloads ~20 MB)
    .venv/bin/python benchmarks/bench_pyodide.py --runs 9 --tokens 5000
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import IO, Any, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = Path.home() / ".cache" / "streamwidgets" / "pyodide-node"
PYODIDE = "314.0.6"
#: What the package needs in Pyodide (pyproject's dependencies, and micropip to install them).
REQUIREMENTS = (
    "ipywidgets",
    "httpx",
    "anyio",
    "h11",
    "markdown-it-py",
    "mdit-py-plugins",
    "pygments",
    "latex2mathml",
    "pydantic",
    "micropip",
)
#: Pinned to this interpreter's versions, so that both runtimes run the same libraries on the
#: measured path (IPython is not on it, and its newer releases need psutil, which has no wheel).
PINNED = (
    "ipywidgets",
    "comm",
    "traitlets",
    "httpx",
    "httpcore",
    "anyio",
    "h11",
    "markdown-it-py",
    "mdurl",
    "mdit-py-plugins",
    "pygments",
    "latex2mathml",
    "pydantic",
    "pydantic-core",
    "typing-extensions",
)


# ---------------------------------------------------------------------------------------- the stream


def sse_body(tokens: int) -> tuple[bytes, str]:
    """A chat-completions SSE body of `tokens` content events, as `_segment_server` sends it
    (without its HTTP chunk framing): a role event, one event per token, the finish, the usage
    and `[DONE]`; and the answer's text."""
    sys.path.insert(0, str(HERE))
    from _segment_server import answer_tokens

    envelope = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}

    def event(obj: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"

    def choice(delta: dict[str, Any], finish: Optional[str] = None) -> dict[str, Any]:
        return {**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    usage = {"prompt_tokens": 12, "completion_tokens": tokens, "total_tokens": tokens + 12}
    words = answer_tokens("long", tokens)
    events = [event(choice({"role": "assistant", "content": ""}))]
    events += [event(choice({"content": word})) for word in words]
    events += [event(choice({}, "stop")), event({**envelope, "choices": [], "usage": usage}), b"data: [DONE]\n\n"]
    return b"".join(events), "".join(words)


# ---------------------------------------------------------------------------------------- Pyodide


def ensure_pyodide() -> Path:
    """The npm package, packed once into the cache and extracted beside it."""
    home = CACHE / f"pyodide-{PYODIDE}"
    if (home / "pyodide.mjs").exists():
        return home
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"pyodide-{PYODIDE}.tgz"
    if not tarball.exists():
        print(f"npm pack pyodide@{PYODIDE} ...", file=sys.stderr)
        packed = subprocess.run(["npm", "pack", f"pyodide@{PYODIDE}"], cwd=CACHE, capture_output=True, text=True)
        if packed.returncode:
            raise SystemExit(f"npm pack pyodide@{PYODIDE} failed:\n{packed.stderr}")
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, filter="data")
        os.replace(Path(tmp) / "package", home)
    return home


def _platform(pyodide: Path) -> tuple[str, str]:
    """(wheel platform tag, Python version) of this Pyodide, from its lock file."""
    info = json.loads((pyodide / "pyodide-lock.json").read_text())["info"]
    python = ".".join(info["python"].split(".")[:2])
    return f"pyemscripten_{info['abi_version']}_{info['arch']}", python


def ensure_wheels(pyodide: Path) -> Path:
    """The dependencies' wheels for this Pyodide, downloaded once per set of pins."""
    tag, python = _platform(pyodide)
    pins = {name: importlib.metadata.version(name) for name in PINNED}
    wanted = sorted({*REQUIREMENTS, *(f"{name}=={version}" for name, version in pins.items())} - set(pins))
    key = hashlib.sha256(json.dumps([tag, python, wanted]).encode()).hexdigest()[:12]
    folder = CACHE / f"wheels-{key}"
    if folder.is_dir():
        return folder
    print(f"pip download {len(wanted)} requirements for {tag} ...", file=sys.stderr)
    tmp = tempfile.mkdtemp(dir=CACHE)
    command = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--platform", tag]
    command += ["--python-version", python, "-d", tmp, *wanted]
    try:
        subprocess.run(command, check=True)
    except BaseException:
        shutil.rmtree(tmp)
        raise
    os.replace(tmp, folder)
    return folder


def own_wheel(into: Path) -> Path:
    """streamwidgets' wheel, built from this tree."""
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(into)]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return into


class Worker:
    """A runtime in another process, answering "run" with one JSON line (`_pyodide_run.mjs`, or
    this script with `--worker`)."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.startup = self._line()["startup"]

    def _line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name} ended (exit {self.process.wait()}): see its stderr above")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"{self.name}: {answer['error']}")
        return answer

    def run(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        return self._line()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


# ---------------------------------------------------------------------------------------- CPython


def run_here(events: list[bytes]) -> dict[str, Any]:
    """One timed run in this interpreter."""
    import _pyodide_workload as workload

    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    result = workload.run_once(events)
    result["wall_s"] = time.perf_counter() - wall
    result["cpu_s"] = time.process_time() - cpu
    return result


def here_startup() -> dict[str, Any]:
    import _pyodide_workload as workload

    return {"python": f"CPython {platform.python_version()}", "json": workload.json_backend()}


def serve(body_file: str, out: IO[str]) -> None:
    """`--worker`: this interpreter as a worker, on the protocol of `_pyodide_run.mjs`."""
    sys.path.insert(0, str(HERE))
    began = time.perf_counter()
    import ipywidgets  # noqa: F401  # timed apart, as in `_pyodide_run.mjs`

    widgets = time.perf_counter()
    import _pyodide_workload as workload

    imported = time.perf_counter()
    events = workload.events_of(Path(body_file).read_bytes())
    startup = {**here_startup(), "import_s": imported - began, "import_ipywidgets_s": widgets - began}
    print(json.dumps({"startup": startup}), file=out, flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        print(json.dumps(run_here(events)), file=out, flush=True)


# ---------------------------------------------------------------------------------------- the table


def report(
    runs: dict[str, list[dict[str, Any]]], labels: dict[str, str], tokens: int, load: tuple[float, float]
) -> None:
    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name])

    n = len(next(iter(runs.values())))
    print(
        f"\n{tokens:,} tokens at 1,000 tokens/s (virtual clock), {n} runs each, medians; "
        f"load average {load[0]:.2f} before, {load[1]:.2f} after\n"
    )
    print(
        "| runtime | JSON | tokens | wall s | CPU s | µs / token (wall) | µs / token (CPU) | widget messages "
        "| bytes / markdown byte | frames / reads |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, rows in runs.items():
        last = rows[-1]
        wall, cpu = median(name, "wall_s"), median(name, "cpu_s")
        print(
            f"| {labels[name]} | {last['json']} | {tokens:,} | {wall:.3f} | {cpu:.3f} | {wall / tokens * 1e6:,.1f} "
            f"| {cpu / tokens * 1e6:,.1f} | {last['messages']} | {last['wire_bytes'] / last['markdown_bytes']:.2f}x "
            f"| {last['frames']} / {last['reads']} |"
        )
    if "pyodide" in runs and "cpython" in runs:
        wall = median("pyodide", "wall_s") / median("cpython", "wall_s")
        cpu = median("pyodide", "cpu_s") / median("cpython", "cpu_s")
        print(f"\nPyodide / CPython (both stdlib json): {wall:.2f}x the wall time, {cpu:.2f}x the CPU time.")
    if "pyodide" in runs and "orjson" in runs:
        wall = median("pyodide", "wall_s") / median("orjson", "wall_s")
        cpu = median("pyodide", "cpu_s") / median("orjson", "cpu_s")
        print(f"Pyodide / CPython + orjson: {wall:.2f}x the wall time, {cpu:.2f}x the CPU time.")
    spread = {name: (min(r["cpu_s"] for r in rows), max(r["cpu_s"] for r in rows)) for name, rows in runs.items()}
    print("CPU s range over the runs: " + "; ".join(f"{labels[k]} {lo:.3f}–{hi:.3f}" for k, (lo, hi) in spread.items()))


def check(runs: dict[str, list[dict[str, Any]]], text: str) -> None:
    """Every run complete with the whole answer, and every runtime doing the same work."""
    import _pyodide_workload as workload

    want = ("complete", len(text.encode()), workload.digest(text))
    seen = {(r["status"], r["markdown_bytes"], r["text_hash"]) for rows in runs.values() for r in rows}
    if seen != {want}:
        raise SystemExit(f"the runs did not all end complete with the whole answer {want}: {seen}")
    work = {
        name: {(r["messages"], r["wire_bytes"], r["frames"], r["reads"]) for r in rows} for name, rows in runs.items()
    }
    if len({frozenset(w) for w in work.values()}) != 1:
        print(f"warning: the runtimes did not send the same messages: {work}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--no-orjson", action="store_true", help="leave out the CPython + orjson subprocess")
    parser.add_argument("--worker", metavar="BODY_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, sys.stdout)
        return
    has_orjson = importlib.util.find_spec("orjson") is not None
    sys.modules["orjson"] = None  # type: ignore[assignment]  # this process runs what Pyodide can
    sys.path.insert(0, str(HERE))

    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is needed (Node 18 or newer)")
    pyodide = ensure_pyodide()
    wheels = ensure_wheels(pyodide)
    body, text = sse_body(args.tokens)
    import _pyodide_workload as workload

    events = workload.events_of(body)
    with tempfile.TemporaryDirectory() as tmp:
        body_file = Path(tmp) / "body.sse"
        body_file.write_bytes(body)
        own = own_wheel(Path(tmp) / "own")
        started = time.perf_counter()
        workers = {
            "pyodide": Worker(
                "pyodide",
                [
                    node,
                    str(HERE / "_pyodide_run.mjs"),
                    str(pyodide),
                    str(wheels),
                    str(own),
                    str(HERE / "_pyodide_workload.py"),
                    str(body_file),
                ],
            )
        }
        startup_s = time.perf_counter() - started
        if has_orjson and not args.no_orjson:
            workers["orjson"] = Worker("cpython + orjson", [sys.executable, __file__, "--worker", str(body_file)])
        node_version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
        labels = {
            "cpython": f"{here_startup()['python']}, in this process",
            "pyodide": f"{workers['pyodide'].startup['python']} in Node {node_version}",
            "orjson": f"{here_startup()['python']} + orjson, a subprocess",
        }
        json_of = {"cpython": here_startup()["json"], **{k: w.startup["json"] for k, w in workers.items()}}

        def one(name: str) -> dict[str, Any]:
            result = run_here(events) if name == "cpython" else workers[name].run()
            return {**result, "json": json_of[name]}

        names = ["cpython", *workers]
        load_before = os.getloadavg()[0]
        for name in names:  # untimed: each runtime's first stream
            one(name)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for i in range(args.runs):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                runs[name].append(one(name))
                print(f"round {i + 1}: {name} {runs[name][-1]['cpu_s']:.3f} CPU s", file=sys.stderr)
        load_after = os.getloadavg()[0]
        for worker in workers.values():
            worker.close()

    check(runs, text)
    report(runs, labels, args.tokens, (load_before, load_after))
    s = workers["pyodide"].startup
    print(
        f"\nPyodide's startup, once per kernel: load {s['load_s']:.2f} s, install the wheels with micropip "
        f"{s['install_s']:.2f} s, imports {s['import_s']:.2f} s (ipywidgets with IPython {s['import_ipywidgets_s']:.2f} s, "
        f"then streamwidgets' view and pipeline); {startup_s:.2f} s in all from starting Node."
    )
    if "orjson" in workers:
        s = workers["orjson"].startup
        print(
            f"The same imports in a fresh CPython (the orjson subprocess): {s['import_s']:.2f} s "
            f"(ipywidgets {s['import_ipywidgets_s']:.2f} s)."
        )


if __name__ == "__main__":
    main()
