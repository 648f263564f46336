// The Pyodide side of bench_pyodide.py: Pyodide in Node, running `_pyodide_workload.run_once`.
//
//   node benchmarks/_pyodide_run.mjs PYODIDE_DIR WHEELS_DIR OWN_WHEEL_DIR WORKLOAD_PY BODY_FILE
//
// Loads Pyodide from PYODIDE_DIR (the npm package, core only), installs micropip by unpacking its
// wheel into site-packages, then every wheel of WHEELS_DIR and OWN_WHEEL_DIR with
// `micropip.install("emfs:...", deps=False)` (the folders are mounted read-only with NODEFS), imports
// the workload (copied into the file system as source) and splits the SSE body of BODY_FILE into
// its events. It prints one JSON line with the startup's parts, then answers each line "run" on
// stdin with one JSON line: the workload's result, its wall time (performance.now) and the CPU
// time of this Node process around it (process.cpuUsage: user + system, all its threads).
// A line "quit", or the end of stdin, ends it.

import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [pyodideDir, wheelsDir, ownDir, workload, bodyFile] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);

function cpuSeconds() {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
}

function say(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

const began = performance.now();
const py = await loadPyodide({ indexURL: `${pyodideDir}/`, stdout: (s) => process.stderr.write(`${s}\n`) });
const loaded = performance.now();

py.mountNodeFS("/wheels", wheelsDir);
py.mountNodeFS("/own", ownDir);
py.runPython(`
import glob, sys, zipfile
site = next(p for p in sys.path if p.endswith("site-packages"))
zipfile.ZipFile(glob.glob("/wheels/micropip-*.whl")[0]).extractall(site)
`);
await py.runPythonAsync(`
import glob, micropip
wheels = [w for w in sorted(glob.glob("/wheels/*.whl")) if "/micropip-" not in w] + glob.glob("/own/*.whl")
await micropip.install(["emfs:" + w for w in wheels], deps=False)
`);
const installed = performance.now();

py.FS.mkdirTree("/bench");
py.FS.writeFile(`/bench/${basename(workload)}`, readFileSync(workload));
py.FS.writeFile("/bench/_wire.py", readFileSync(join(dirname(workload), "_wire.py")));  // the workload's recording comm
py.FS.writeFile("/bench/body.sse", readFileSync(bodyFile));
py.runPython("import ipywidgets"); // with IPython, traitlets and comm
const widgets = performance.now();
py.runPython(`
import gc, json, sys
sys.path.insert(0, "/bench")
import _pyodide_workload as workload

with open("/bench/body.sse", "rb") as f:
    _events = workload.events_of(f.read())

def _bench_run():
    return json.dumps(workload.run_once(_events))
`);
const imported = performance.now();
const python = py.runPython("sys.version.split()[0]");
say({
  startup: {
    load_s: (loaded - began) / 1000,
    install_s: (installed - loaded) / 1000,
    import_s: (imported - installed) / 1000,
    import_ipywidgets_s: (widgets - installed) / 1000,
    python: `Pyodide ${py.version} (Python ${python})`,
    json: py.runPython("workload.json_backend()"),
  },
});

const run = py.globals.get("_bench_run");
const collect = py.runPython("gc.collect");
for await (const line of createInterface({ input: process.stdin })) {
  const command = line.trim();
  if (command === "quit") break;
  if (command !== "run") {
    say({ error: `unknown command ${JSON.stringify(command)}` });
    continue;
  }
  collect();
  const cpu0 = cpuSeconds();
  const wall0 = performance.now();
  const result = run();
  const wall = (performance.now() - wall0) / 1000;
  const cpu = cpuSeconds() - cpu0;
  say({ ...JSON.parse(result), wall_s: wall, cpu_s: cpu });
}
process.exit(0);
