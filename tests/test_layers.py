"""The package reads as the data path, and every layer is crossed once, downward.

Each folder is a layer: `core` (sans-IO) at the bottom, then `markdown` and `server`, then `net`,
`widgets` and `apps`. A module may import its own layer and the ones below it, never one above;
the top-level `__init__` (the lazy facade) and `__main__` may import anything. Across folders, a
module imports through the other folder's `__init__` (`from ..core import StreamState`), never
from its private modules (`from ..core._state import ...`). The rules are read off the source
itself (every `import` and `from ... import`, lazy ones inside functions too), so a shortcut
upward or inward fails here, not in a review.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "streamwidgets"

#: Layer -> its rank; a module may import only from layers of a rank lower than or equal to its own.
LAYERS = {"core": 0, "markdown": 1, "server": 1, "net": 2, "widgets": 3, "apps": 4}
#: Layers of the same rank that must not import each other either.
APART = {("markdown", "server"), ("server", "markdown")}
#: What the sans-IO core must never load.
HEAVY = ("httpx", "httpcore", "anyio", "ipywidgets", "IPython", "pygments", "markdown_it", "mdit_py_plugins")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def layer_of(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else None  # None: the facade (__init__, __main__)


def imported(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the module at `path` (its text, or
    `source`), resolving relative ones."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    package = ["streamwidgets", *path.relative_to(PACKAGE).with_suffix("").parts][:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            for alias in node.names:  # `from .. import formatting` imports a module by name
                found.append((node.lineno, f"{name}.{alias.name}"))
    return found


def target_layer(name: str) -> str | None:
    parts = name.split(".")
    if parts[0] != "streamwidgets" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in LAYERS else None


def test_every_module_lives_in_a_layer():
    loose = [p.name for p in modules() if layer_of(p) is None and p.name not in ("__init__.py", "__main__.py")]
    assert loose == [], "modules at the top level mix the layers; put each in its folder"
    assert {layer_of(p) for p in modules()} - {None} == set(LAYERS)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_its_own(path: Path):
    own = layer_of(path)
    if own is None:
        return
    upward = []
    for line, name in imported(path):
        target = target_layer(name)
        if target is None or target == own:
            continue
        if LAYERS[target] > LAYERS[own] or (own, target) in APART:
            upward.append(f"line {line}: {name}")
    assert upward == [], f"{own} imports a layer above it (or beside it): {upward}"


@pytest.mark.parametrize("path", [p for p in modules() if layer_of(p) == "core"], ids=lambda p: p.name)
def test_the_core_imports_no_network_widget_or_renderer(path: Path):
    heavy = [f"line {line}: {name}" for line, name in imported(path) if name.split(".")[0] in HEAVY]
    assert heavy == [], f"the sans-IO core imports {heavy}"


def test_importing_the_core_loads_none_of_them():
    code = (
        "import sys, streamwidgets.core, streamwidgets.core.dialects; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def private_reaches(path: Path, source: str | None = None) -> list[str]:
    """The imports of the module at `path` that reach into another top-level folder's private
    modules: a component below the folder that starts with `_` (`streamwidgets.core._state`,
    `streamwidgets.server.local._shared`, `from ..core import _formatting`)."""
    own = layer_of(path)
    found = []
    for line, name in imported(path, source):
        parts = name.split(".")
        target = target_layer(name)
        if target is None or target == own:
            continue
        if any(part.startswith("_") for part in parts[2:]):
            found.append(f"line {line}: {name}")
    return found


@pytest.mark.parametrize(
    "path", [p for p in modules() if layer_of(p) is not None], ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_imports_across_folders_go_through_their_init(path: Path):
    reached = private_reaches(path)
    assert reached == [], (
        f"{path.name} imports another folder's private modules; export the name from its __init__: {reached}"
    )


def test_the_checker_sees_a_private_import_across_folders():
    probe = PACKAGE / "widgets" / "_probe.py"  # never written: its text is given
    assert private_reaches(probe, "def f():\n    from ..core._state import StreamState\n") == [
        "line 2: streamwidgets.core._state",
        "line 2: streamwidgets.core._state.StreamState",
    ]
    assert private_reaches(probe, "from ..core import _formatting as formatting\n") == [
        "line 1: streamwidgets.core._formatting"
    ]
    assert private_reaches(probe, "from ..server.local._shared import X\n") != []
    assert private_reaches(probe, "from ..core.dialects._request import X\n") != []
    assert private_reaches(probe, "from ..core import StreamState, formatting\nfrom ..server.local import X\n") == []
    assert private_reaches(probe, "from ._view import StreamView\n") == []  # its own folder
    inside = PACKAGE / "core" / "_probe.py"
    assert private_reaches(inside, "from .dialects._request import X\n") == []


def test_the_checker_sees_an_upward_import():
    """The rule is not vacuous: a core module that imported the network edge, lazily too, is caught."""
    probe = PACKAGE / "core" / "_probe.py"  # never written: its text is given
    names = [name for _, name in imported(probe, "def f():\n    from ..net import Stream\n")]
    assert "streamwidgets.net" in names and LAYERS[target_layer("streamwidgets.net") or "core"] > LAYERS["core"]
    inside = PACKAGE / "core" / "dialects" / "_probe.py"
    assert "streamwidgets.core._state" in [name for _, name in imported(inside, "from .._state import X\n")]


def module_name(path: Path) -> str:
    parts = ["streamwidgets", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_circles(folder: str, sources: dict[str, str] | None = None) -> list[list[str]]:
    """The import circles among the modules of one folder (`net`, `widgets`...), each as its
    modules' names, sorted: every import counts, lazy and type-only ones too (each is a
    dependency, and a lazy one only hides a circle). `sources` gives texts in place of files
    (a module name relative to the folder → its text), to test the checker."""
    root = PACKAGE / folder
    texts: dict[Path, str | None] = {path: None for path in root.rglob("*.py")}
    for name, text in (sources or {}).items():
        texts[root / f"{name}.py"] = text
    names = {module_name(path): path for path in texts}
    # The folder's `__init__` is its facade, above every module (it imports them all); `from . import
    # _panes` names the package only to reach a module of it.
    names.pop(module_name(root / "__init__.py"), None)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        graph[name] = {target for _, target in imported(path, texts[path]) if target in names and target != name}
    return [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of a directed graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in sorted(graph[node]):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("folder", ["net", "widgets"])
def test_no_import_circle_inside_a_folder(folder: str):
    """A folder reads one way: no module imports, even lazily, one that imports it back (in
    `widgets/`: pane specs and styles at the bottom, the front ends above them, the handle and the
    cell bookkeeping above those)."""
    assert import_circles(folder) == [], f"{folder}/ has import circles"


def test_the_circle_check_sees_a_lazy_circle():
    lazy = {"_probe_a": "def f():\n    from ._probe_b import x\n", "_probe_b": "from . import _probe_a\n"}
    assert ["streamwidgets.net._probe_a", "streamwidgets.net._probe_b"] in import_circles("net", lazy)
    typed = {"_probe_a": "if TYPE_CHECKING:\n    from ._probe_b import X\n", "_probe_b": "from ._probe_a import Y\n"}
    assert import_circles("net", typed) != []
    assert import_circles("net", {"_probe_a": "from ._request import X\n"}) == []
    three = {"_cells": "def f():\n    from ._handle import running\n"}
    assert any(
        {"streamwidgets.widgets._cells", "streamwidgets.widgets._handle"} <= set(c)
        for c in import_circles("widgets", three)
    )


def test_the_design_page_lists_every_module():
    """docs/design.md is the map: every module of every layer has its row (or its name in a
    shared row), so the map cannot fall behind the code unnoticed."""
    design = (PACKAGE.parent / "docs" / "design.md").read_text(encoding="utf-8")
    missing = []
    for path in modules():
        layer = layer_of(path)
        if layer is None or path.name == "__init__.py":
            continue
        name = path.relative_to(PACKAGE / layer).as_posix()
        if f"`{name}`" not in design and f"`{path.name}`" not in design:
            missing.append(f"{layer}/{name}")
    assert missing == [], f"docs/design.md does not list {missing}"


#: The names of the APIs (and the embedded provider's legacy completions).
API_NAMES = {"chat", "responses", "messages", "gemini", "completions"}


def api_branches(path: Path, source: str | None = None) -> list[str]:
    """Where the module at `path` compares an API's name (`api == "messages"`, `dialect_name in
    ("chat", ...)`): each API's rules belong in its own spec module, so a new API is one module."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))

    def named(node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        return ""

    def names_an_api(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in API_NAMES
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(isinstance(e, ast.Constant) and e.value in API_NAMES for e in node.elts)
        return False

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any("api" in named(s).lower() or "dialect" in named(s).lower() for s in sides) and any(
            names_an_api(s) for s in sides
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def is_api_spec(path: Path) -> bool:
    """An API's own module: a client dialect (`core/dialects/_chat.py`...) or a server spec
    (`server/demo/apis/chat.py`...)."""
    parts = path.relative_to(PACKAGE).parts
    return (parts[:2] == ("core", "dialects") and path.stem.lstrip("_") in API_NAMES) or parts[:3] == (
        "server",
        "demo",
        "apis",
    )


@pytest.mark.parametrize(
    "path", [p for p in modules() if not is_api_spec(p)], ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_module_but_an_apis_own_branches_on_its_name(path: Path):
    assert api_branches(path) == [], f"{path.name} branches on an API's name; put the rule in that API's spec"


def test_the_api_branch_check_sees_a_branch():
    probe = PACKAGE / "net" / "_probe.py"  # never written: its text is given
    assert api_branches(probe, "if request.api == 'messages':\n    pass\n") == ["line 1: request.api == 'messages'"]
    assert api_branches(probe, "x = dialect_name in ('chat', 'responses')\n") != []
    assert api_branches(probe, "if kind == 'chat':\n    pass\n") == []
