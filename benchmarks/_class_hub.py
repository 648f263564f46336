"""A class on a real JupyterHub, on loopback: what `bench_class.py` measures and `tests/apps/test_hub.py` checks.

`ClassHub` starts, each in its own process and on 127.0.0.1: the embedded provider
(`python -m streamwidgets serve`), one LiteLLM proxy as the class gateway (from its own venv, with
one key per student checked by `class_keys.py`), and JupyterHub with configurable-http-proxy,
SimpleLocalProcessSpawner and the dummy authenticator. Students are created, given a token and a
server through the hub's REST API (an admin service token); the spawner gives each student's
server `LITELLM_BASE_URL` and the student's own `LITELLM_API_KEY`, as docs/classroom.md says a real
hub does. Each student's notebook is run the way JupyterLab runs it: a session through the
single-user server's REST API, then `execute_request`s over the kernel websocket, through the proxy.

The gateway's `config.yaml` is written by `gateway_config()` alone (one server or several under one
model name, with the router settings the docs show); `Gateway` runs one on its own, for
`bench_class.py --local` and `tests/apps/test_class_servers.py`.

Everything is started here and stopped by its PID (and its children's); `close()` says which
process outlived the orderly stop. The hub gets its own working directory (database, cookie
secret, pid files) and every student a home of their own (their Jupyter and IPython dirs), so
that runs never share state.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import httpx
import psutil
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
NOTEBOOK = HERE / "class_notebook.ipynb"
CACHE = Path.home() / ".cache" / "streamwidgets"
LITELLM_VENV = Path(os.environ.get("SW_LITELLM_VENV", CACHE / "litellm-venv"))
CHP_DIR = Path(os.environ.get("SW_CHP_DIR", CACHE / "chp"))
#: The question the classroom notebook asks (the embedded provider's answer to it is known).
PROMPT = "Explain recursion"
MODEL = "demo"
RECONNECTS = 5
#: Seconds a kernel may still be exiting after its server left (seen once in CI: all three, at once).
_EXIT_GRACE = 10.0
SETUP_HINT = "`source scripts/_setup.sh; setup_litellm; setup_hub` installs it (scripts/test does)"

#: Run in each kernel after the notebook: what the driver reads back (never the key).
PROBE = """
import hashlib as _hashlib, json as _json, os as _os
print(_json.dumps({
    "pid": _os.getpid(),
    "key_sha256": _hashlib.sha256(_os.environ.get("LITELLM_API_KEY", "").encode()).hexdigest(),
    "status": state.status,
    "message": state.message,
    "text": state.text,
    "ttft": state.time_to_first_token,
    "tokens_per_second": state.tokens_per_second,
    "tokens": state.completion_tokens[0],
    "elapsed": state.elapsed,
    "origin": state.origin,
    "base_url": answer.request.base_url,
    "offline_note": answer.request.offline_note,
}))
"""


class MissingPart(RuntimeError):
    """A part of the class (the hub, the proxy, the gateway) is not installed: a failure, never a skip."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_tree(pid: int, grace: float = 15.0) -> None:
    """SIGTERM a process and its children by PID, SIGKILL what is still there after `grace` s."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=5)


def _alive(p: psutil.Process) -> bool:
    """Still running, and still the process that was seen (a PID can be reused)."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def requirement(path: Path, what: str) -> Path:
    if not path.exists():
        raise MissingPart(f"{what} is missing ({path} does not exist): {SETUP_HINT}")
    return path


# ----------------------------------------------------------------------------- the kernel websocket


@dataclass
class Cell:
    """One executed cell as the frontend saw it."""

    code: str
    status: str
    stdout: str
    sent: float
    replied: float
    messages: int
    widget_updates: int
    traceback: str = ""


class KernelChannel:
    """The kernel websocket of one notebook session, spoken as JupyterLab's (JSON) protocol."""

    def __init__(self, ws: WebSocketClientConnection, session: str, username: str) -> None:
        self.ws = ws
        self.session = session
        self.username = username
        #: Every text frame received, kept so that a test can prove what never reached the browser.
        self.received: list[str] = []

    def _message(self, msg_type: str, content: dict[str, Any], channel: str = "shell") -> tuple[str, str]:
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "username": self.username,
            "session": self.session,
            "msg_type": msg_type,
            "version": "5.3",
            "date": datetime.now(timezone.utc).isoformat(),
        }
        body = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": channel}
        return msg_id, json.dumps(body)

    async def _receive(self) -> dict[str, Any]:
        frame = await self.ws.read_message()
        if frame is None:
            raise ConnectionError(f"{self.username}'s kernel websocket closed")
        if isinstance(frame, bytes):  # a message with binary buffers: offsets, then the JSON part
            count = int.from_bytes(frame[:4], "big")
            offsets = [int.from_bytes(frame[4 * i : 4 * i + 4], "big") for i in range(1, count + 1)]
            frame = frame[offsets[0] : offsets[1]].decode() if len(offsets) > 1 else "{}"
        self.received.append(frame)
        return json.loads(frame)  # type: ignore[no-any-return]

    async def kernel_info(self, timeout: float = 120.0) -> None:
        """What JupyterLab sends first; the reply says the kernel is there."""
        msg_id, text = self._message("kernel_info_request", {})
        await self.ws.write_message(text)

        async def reply() -> None:
            while True:
                msg = await self._receive()
                if msg.get("parent_header", {}).get("msg_id") == msg_id and msg["msg_type"] == "kernel_info_reply":
                    return

        await asyncio.wait_for(reply(), timeout)

    async def execute(self, code: str, timeout: float = 300.0) -> Cell:
        """Run a cell; return when its reply and its `idle` status have both arrived."""
        msg_id, text = self._message(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": True,  # as JupyterLab sends it
                "stop_on_error": True,
            },
        )
        sent = time.monotonic()
        await self.ws.write_message(text)
        cell = Cell(code=code, status="", stdout="", sent=sent, replied=sent, messages=0, widget_updates=0)
        stdout: list[str] = []

        async def reply_and_idle() -> None:
            idle = False
            while not cell.status or not idle:
                msg = await self._receive()
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                cell.messages += 1
                kind, content = msg["msg_type"], msg["content"]
                if kind == "execute_reply":
                    cell.status, cell.replied = content["status"], time.monotonic()
                    cell.traceback = "\n".join(content.get("traceback", []))
                elif kind == "status" and content["execution_state"] == "idle":
                    idle = True
                elif kind == "stream" and content["name"] == "stdout":
                    stdout.append(content["text"])
                elif kind == "comm_msg" and content["data"].get("method") == "update":
                    cell.widget_updates += 1

        await asyncio.wait_for(reply_and_idle(), timeout)
        cell.stdout = "".join(stdout)
        return cell


# ----------------------------------------------------------------------------- students


@dataclass
class Student:
    name: str
    key: str
    token: str = ""
    server_pid: int = 0
    kernel_pid: int = 0
    channel: Optional[KernelChannel] = None
    #: How often the kernel websocket had to be opened again before the kernel answered.
    reconnects: int = 0


@dataclass
class Answer:
    """One student's run of the notebook: the cells as the frontend saw them and the probe's reading."""

    student: str
    cells: list[Cell]
    probe: dict[str, Any]

    @property
    def ok(self) -> bool:
        return all(c.status == "ok" for c in self.cells) and self.probe.get("status") == "complete"

    @property
    def widget_updates(self) -> int:
        return sum(c.widget_updates for c in self.cells)


@dataclass
class ProcessUse:
    """CPU seconds over a window and the peak RSS sampled in it, for one process found by PID."""

    role: str
    owner: str
    pid: int
    cpu: float
    rss_peak: int


@dataclass
class ClassRun:
    """All students ran the notebook at once."""

    students: int
    seconds: float
    answers: list[Answer]
    use: list[ProcessUse]
    load: tuple[float, float]

    def by_role(self, role: str) -> list[ProcessUse]:
        return [u for u in self.use if u.role == role]


class Sampler:
    """RSS of every process of the class, every `interval` s, from /proc by PID (psutil)."""

    def __init__(self, procs: dict[tuple[str, str], psutil.Process], interval: float = 0.25) -> None:
        self.procs = procs
        self.interval = interval
        self.peak: dict[tuple[str, str], int] = dict.fromkeys(procs, 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _sample(self) -> None:
        for key, p in self.procs.items():
            with contextlib.suppress(psutil.NoSuchProcess):
                self.peak[key] = max(self.peak[key], p.memory_info().rss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def cpu_seconds(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(t.user + t.system)


# ----------------------------------------------------------------------------- the hub's config

HUB_CONFIG = """\
# Written by benchmarks/_class_hub.py for one run; everything on 127.0.0.1.
import json

c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.pid_file = {hub_pid!r}
c.JupyterHub.db_url = {db_url!r}
c.JupyterHub.cookie_secret_file = {cookie_secret!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"  # SimpleLocalProcessSpawner: every server as the current user
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.Spawner.ip = "127.0.0.1"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--ServerApp.allow_root=True"]  # CI machines run as root; a real hub's users are not
c.Spawner.start_timeout = 600
c.Spawner.http_timeout = 600
c.Spawner.env_keep = ["PATH", "PYTHONPATH", "LANG", "LC_ALL"]

KEYS = {keys!r}


def student_key(spawner):
    \"\"\"The student's own gateway key (a real hub would look it up, e.g. in a pre_spawn_hook).\"\"\"
    with open(KEYS, encoding="utf-8") as f:
        return json.load(f)[spawner.user.name]


c.Spawner.environment = {{
    "LITELLM_BASE_URL": {gateway!r},
    "LITELLM_API_KEY": student_key,
    "JUPYTER_CONFIG_DIR": lambda spawner: spawner.home_dir + "/.jupyter",
    "JUPYTER_DATA_DIR": lambda spawner: spawner.home_dir + "/.local/share/jupyter",
    "JUPYTER_RUNTIME_DIR": lambda spawner: spawner.home_dir + "/.local/share/jupyter/runtime",
    "IPYTHONDIR": lambda spawner: spawner.home_dir + "/.ipython",
}}
c.JupyterHub.services = [{{"name": "class-driver", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [
    {{
        "name": "class-driver",
        "scopes": ["admin:users", "admin:servers", "tokens", "access:servers", "list:users"],
        "services": ["class-driver"],
    }}
]
"""


@dataclass(frozen=True)
class Deployment:
    """One model server behind the gateway: where it answers, its key, and LiteLLM's name for it."""

    base_url: str
    key: str
    model: str = f"openai/{MODEL}"
    #: What LiteLLM's logs and errors call it (a machine's name); LiteLLM makes one up if empty.
    name: str = ""


#: How the gateway spreads a class over several servers of one model (LiteLLM's router): each
#: request to the server with the fewest tokens and requests this minute ("usage-based-routing-v2";
#: LiteLLM 1.106.12's "least-busy" sent every answer of a class asking at once to the first server,
#: measured behind its proxy). A server that fails is out for `cooldown_time` seconds from its first
#: failure, and the request is sent again to another (`num_retries`). Only a request that has not
#: started fails over: an answer cut off mid-stream ends with an error, its words kept.
ROUTER_SETTINGS = {
    "routing_strategy": "usage-based-routing-v2",
    "num_retries": 2,
    "allowed_fails": 0,
    "cooldown_time": 60,
}


def gateway_config(model: str, deployments: Sequence[Deployment], master_key: str) -> str:
    """The class gateway's LiteLLM `config.yaml`: every deployment under the one model name the
    students ask for, the router settings above when there are several, the teacher's master key,
    and one key per student checked by `class_keys.py` beside the file (docs/classroom.md shows
    its output for two servers)."""
    lines = ["model_list:"]
    for d in deployments:
        lines += [
            f"  - model_name: {model}",
            f'    litellm_params: {{model: {d.model}, api_base: "{d.base_url}", api_key: "{d.key}"}}',
        ]
        if d.name:
            lines.append(f"    model_info: {{id: {d.name}}}")
    if len(deployments) > 1:
        lines.append("router_settings:")
        lines += [f"  {name}: {value}" for name, value in ROUTER_SETTINGS.items()]
    lines += ["general_settings:", f"  master_key: {master_key}", "  custom_auth: class_keys.user_api_key_auth"]
    return "\n".join(lines) + "\n"


class Gateway:
    """A class gateway on its own: LiteLLM in front of `deployments` under one model name, with a
    key per student (`class_keys.py`, `students` of them), in a folder of its own under `root`.
    Started at once; `wait()` until it answers; `stop()` by its PID."""

    def __init__(self, root: Path, model: str, deployments: Sequence[Deployment], students: int) -> None:
        litellm = requirement(LITELLM_VENV / "bin" / "litellm", "the LiteLLM proxy (the class gateway)")
        self.folder = root.resolve() / f"gateway-{secrets.token_hex(4)}"
        self.folder.mkdir(mode=0o700, parents=True)
        shutil.copy(HERE / "class_keys.py", self.folder / "class_keys.py")
        self.master_key = "sk-teacher-" + secrets.token_hex(16)
        self.config = self.folder / "config.yaml"
        self.config.write_text(gateway_config(model, deployments, self.master_key))
        self.keys = ["sk-class-" + secrets.token_urlsafe(24) for _ in range(students)]
        digests = {hashlib.sha256(k.encode()).hexdigest(): f"student{i:02d}" for i, k in enumerate(self.keys, 1)}
        (self.folder / "class_keys.json").write_text(json.dumps(digests))
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no cost map fetched from the network
            "CLASS_KEYS_FILE": str(self.folder / "class_keys.json"),
            "NO_PROXY": "127.0.0.1,localhost",
        }
        env.pop("PYTHONPATH", None)
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self.log = self.folder / "gateway.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [str(litellm), "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(port)],
                cwd=self.folder,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait(self, timeout: float = 300.0) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base_url.removesuffix("/v1") + "/health/liveliness", timeout=2).status_code == 200:
                    return time.monotonic() - started
            if self.process.poll() is not None:
                break
            time.sleep(0.25)
        raise RuntimeError(f"the gateway did not start:\n{self.log.read_text(errors='replace')[-3000:]}")

    def processes(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(self.process.pid)
            return [root, *root.children(recursive=True)]
        return []

    def stop(self) -> None:
        stop_tree(self.process.pid)
        self.process.wait()


# ----------------------------------------------------------------------------- the class


@dataclass
class ClassHub:
    """The provider, the gateway and the hub for up to `capacity` students, under `root`."""

    root: Path
    capacity: int
    notebook: Path = NOTEBOOK
    students: dict[str, Student] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    #: Every process of the class ever seen, by (PID, start time): what must be gone at the end.
    seen: dict[tuple[int, float], tuple[str, psutil.Process]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.port, self.hub_port, self.api_port = free_port(), free_port(), free_port()
        self.gateway_port, self.provider_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.gateway = f"http://127.0.0.1:{self.gateway_port}/v1"
        self.provider = f"http://127.0.0.1:{self.provider_port}/v1"
        self.service_token = secrets.token_hex(32)
        self.master_key = "sk-teacher-" + secrets.token_hex(16)
        self.roster = {f"student{i:02d}": "sk-class-" + secrets.token_urlsafe(24) for i in range(1, self.capacity + 1)}

    # -------------------------------------------------------------- starting

    def _launch(self, name: str, argv: Sequence[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 (the child holds it; closed in close())
        process = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.processes[name] = process
        self._remember(name, process.pid)
        return process

    def _remember(self, role: str, pid: int) -> Optional[psutil.Process]:
        try:
            p = psutil.Process(pid)
            self.seen.setdefault((pid, p.create_time()), (role, p))  # the first name it was seen under
            return p
        except psutil.NoSuchProcess:
            return None

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def _wait_http(self, name: str, url: str, timeout: float, headers: Optional[dict[str, str]] = None) -> float:
        process = self.processes[name]
        started = time.monotonic()
        while True:
            try:
                if httpx.get(url, timeout=2, headers=headers).status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                raise RuntimeError(f"the {name} stopped (exit {process.returncode}):\n{self.log_tail(name)}")
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"the {name} did not answer {url} within {timeout:.0f} s:\n{self.log_tail(name)}")
            time.sleep(0.25)

    def start(self) -> dict[str, float]:
        """Start the provider, the gateway and the hub, side by side; return when the provider and
        the hub answer (the gateway takes longest: `gateway_ready()` waits for it)."""
        litellm = requirement(LITELLM_VENV / "bin" / "litellm", "the LiteLLM proxy (the class gateway)")
        chp_bin = requirement(CHP_DIR / "node_modules" / ".bin", "configurable-http-proxy")
        requirement(chp_bin / "configurable-http-proxy", "configurable-http-proxy")
        hub_bin = Path(sys.executable).parent
        jupyterhub = requirement(hub_bin / "jupyterhub", "JupyterHub (the `hub` extra)")
        singleuser = requirement(hub_bin / "jupyterhub-singleuser", "JupyterHub (the `hub` extra)")
        requirement(self.notebook, "the classroom notebook")

        base_env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(TREE), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "NO_PROXY": "127.0.0.1,localhost",
        }
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
            base_env.pop(var, None)

        self._launch(
            "provider",
            [sys.executable, "-m", "streamwidgets", "serve", "--port", str(self.provider_port)],
            base_env,
            self.root,
        )

        gateway_dir = self.root / "gateway"
        gateway_dir.mkdir()
        shutil.copy(HERE / "class_keys.py", gateway_dir / "class_keys.py")
        (gateway_dir / "config.yaml").write_text(
            gateway_config(MODEL, [Deployment(self.provider, "upstream-demo")], self.master_key)
        )
        digests = {hashlib.sha256(key.encode()).hexdigest(): name for name, key in self.roster.items()}
        (gateway_dir / "class_keys.json").write_text(json.dumps(digests))
        gateway_env = {
            **base_env,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no cost map fetched from the network
            "CLASS_KEYS_FILE": str(gateway_dir / "class_keys.json"),
        }
        gateway_env.pop("PYTHONPATH")
        self._launch(
            "gateway",
            [str(litellm), "--config", "config.yaml", "--host", "127.0.0.1", "--port", str(self.gateway_port)],
            gateway_env,
            gateway_dir,
        )

        hub_dir = self.root / "hub"
        (hub_dir / "homes").mkdir(parents=True)
        (hub_dir / "roster.json").write_text(json.dumps(self.roster))
        (hub_dir / "jupyterhub_config.py").write_text(
            HUB_CONFIG.format(
                port=self.port,
                hub_port=self.hub_port,
                api_port=self.api_port,
                proxy_pid=str(hub_dir / "proxy.pid"),
                hub_pid=str(hub_dir / "hub.pid"),
                db_url=f"sqlite:///{hub_dir / 'jupyterhub.sqlite'}",
                cookie_secret=str(hub_dir / "cookie_secret"),
                homes=str(hub_dir / "homes"),
                singleuser=str(singleuser),
                keys=str(hub_dir / "roster.json"),
                gateway=self.gateway,
                token=self.service_token,
            )
        )
        hub_env = {**base_env, "PATH": os.pathsep.join([str(chp_bin), str(hub_bin), base_env.get("PATH", "")])}
        self._launch("hub", [str(jupyterhub), "-f", "jupyterhub_config.py"], hub_env, hub_dir)

        took = {"provider": self._wait_http("provider", self.provider.removesuffix("/v1") + "/_demo/health", 60)}
        took["hub"] = self._wait_http("hub", f"{self.url}/hub/api/", 180)
        self._remember("proxy", int((hub_dir / "proxy.pid").read_text().strip()))
        return took

    def gateway_ready(self) -> float:
        """Wait for the gateway, then send one answer through it: LiteLLM's first request pays for
        its imports, which no student should wait for."""
        took = self._wait_http("gateway", f"http://127.0.0.1:{self.gateway_port}/health/liveliness", 300)
        key = next(iter(self.roster.values()))
        body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "demo": {"tokens_per_second": 0}}
        r = httpx.post(
            f"{self.gateway}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )
        r.raise_for_status()
        return took

    # -------------------------------------------------------------- the hub's REST API

    def _hub(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=f"{self.url}/hub/api", headers={"Authorization": f"token {self.service_token}"}, timeout=60
        )

    async def admit(self, names: Iterable[str], timeout: float = 900.0) -> list[Student]:
        """Create the students, a token each, and start their servers, all at once; wait until ready."""
        names = list(names)
        for name in names:
            home = self.root / "hub" / "homes" / name
            home.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.notebook, home / self.notebook.name)  # what the teacher hands out
        async with self._hub() as hub:
            known = {u["name"] for u in (await hub.get("/users")).raise_for_status().json()}
            new = [n for n in names if n not in known]
            if new:
                (await hub.post("/users", json={"usernames": new})).raise_for_status()

            async def admit_one(name: str) -> Student:
                student = self.students.get(name) or Student(name, self.roster[name])
                student.kernel_pid = student.reconnects = 0  # a fresh server, a fresh kernel
                if not student.token:
                    r = await hub.post(
                        f"/users/{name}/tokens",
                        json={"scopes": [f"access:servers!user={name}"], "note": "class driver"},
                    )
                    student.token = r.raise_for_status().json()["token"]
                (await hub.post(f"/users/{name}/server")).raise_for_status()
                deadline = time.monotonic() + timeout
                while True:
                    user = (await hub.get(f"/users/{name}")).raise_for_status().json()
                    server = user.get("servers", {}).get("")
                    if server and server.get("ready"):
                        break
                    pid = (server or {}).get("state", {}).get("pid")
                    if not server or (pid and not psutil.pid_exists(pid)) or time.monotonic() > deadline:
                        raise RuntimeError(f"{name}'s server did not start:\n{self.log_tail('hub')}")
                    await asyncio.sleep(0.5)
                student.server_pid = int(server["state"]["pid"])
                self._remember(f"server:{name}", student.server_pid)
                self.students[name] = student
                return student

            return list(await asyncio.gather(*(admit_one(n) for n in names)))

    async def dismiss(self, students: Iterable[Student]) -> None:
        """Stop the students' servers through the hub (which stops their kernels); wait until gone."""
        students = list(students)
        for s in students:
            if s.channel is not None:
                s.channel.ws.close()
                s.channel = None
        async with self._hub() as hub:

            async def stop_one(s: Student) -> None:
                r = await hub.delete(f"/users/{s.name}/server")
                if r.status_code not in (202, 204):
                    r.raise_for_status()
                while (await hub.get(f"/users/{s.name}")).json().get("servers", {}).get(""):
                    await asyncio.sleep(0.5)

            await asyncio.gather(*(stop_one(s) for s in students))

    # -------------------------------------------------------------- the notebook, as JupyterLab runs it

    def code_cells(self) -> list[str]:
        cells = json.loads(self.notebook.read_text())["cells"]
        return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]

    async def open_notebook(self, student: Student) -> KernelChannel:
        """Open the notebook's session (a new kernel) and connect to its websocket, through the proxy."""
        base = f"{self.url}/user/{student.name}"
        headers = {"Authorization": f"token {student.token}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=300) as server:
            path = self.notebook.name
            (await server.get(f"/api/contents/{path}")).raise_for_status()  # the file is there
            r = await server.post(
                "/api/sessions", json={"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}
            )
            kernel_id = r.raise_for_status().json()["kernel"]["id"]
        # The kernel's PID: the server's child whose connection file names this kernel.
        for child in _children(student.server_pid):
            if any(kernel_id in part for part in _cmdline(child)):
                student.kernel_pid = child.pid
                self._remember(f"kernel:{student.name}", child.pid)
                break
        else:
            raise RuntimeError(f"no process of {student.name}'s server runs kernel {kernel_id}")
        session = uuid.uuid4().hex
        request = HTTPRequest(
            f"ws://127.0.0.1:{self.port}/user/{student.name}/api/kernels/{kernel_id}/channels?session_id={session}",
            headers=headers,
            connect_timeout=300,  # 30 kernels starting at once on 2 cores take their time
            request_timeout=300,
        )
        # The server closes the websocket when the kernel has not answered `kernel_info` in time
        # (a crowd of kernels starting on two cores); JupyterLab then connects again, and so do we.
        for attempt in range(1, RECONNECTS + 2):
            ws = await websocket_connect(request, max_message_size=64 * 1024 * 1024)
            channel = KernelChannel(ws, session, student.name)
            try:
                await channel.kernel_info()
                break
            except (ConnectionError, asyncio.TimeoutError):
                ws.close()
                if attempt > RECONNECTS:
                    raise
                student.reconnects += 1
                await asyncio.sleep(1.0)
        student.channel = channel
        return channel

    async def run_notebook(self, student: Student) -> Answer:
        """Run every code cell in order, as Run All does, then the probe; the kernel's PID comes back."""
        if student.channel is None:
            await self.open_notebook(student)
        assert student.channel is not None
        cells = []
        for code in self.code_cells():
            cell = await student.channel.execute(code)
            cells.append(cell)
            if cell.status != "ok":
                return Answer(student.name, cells, {"status": "cell failed", "message": cell.traceback})
        probe = await student.channel.execute(PROBE)
        if probe.status != "ok":
            return Answer(student.name, cells, {"status": "probe failed", "message": probe.traceback})
        reading = json.loads(probe.stdout.strip().splitlines()[-1])
        if reading["pid"] != student.kernel_pid:
            raise RuntimeError(
                f"{student.name}'s cells ran in PID {reading['pid']}, not their kernel {student.kernel_pid}"
            )
        return Answer(student.name, cells, reading)

    def class_processes(self, students: Sequence[Student]) -> dict[tuple[str, str], psutil.Process]:
        """Every process to measure, found by PID: each student's server and kernel, and the class's own."""
        procs: dict[tuple[str, str], psutil.Process] = {}
        for s in students:
            procs[("server", s.name)] = psutil.Process(s.server_pid)
            if s.kernel_pid:
                procs[("kernel", s.name)] = psutil.Process(s.kernel_pid)
        proxy_pid = int((self.root / "hub" / "proxy.pid").read_text().strip())
        for role, pid in (
            ("hub", self.processes["hub"].pid),
            ("proxy", proxy_pid),
            ("gateway", self.processes["gateway"].pid),
            ("provider", self.processes["provider"].pid),
        ):
            procs[(role, "class")] = psutil.Process(pid)
        for child in psutil.Process(self.processes["gateway"].pid).children(recursive=True):
            procs[("gateway", f"class/{child.pid}")] = child  # LiteLLM's workers, if it runs any
        return procs

    async def run_class(self, students: Sequence[Student]) -> ClassRun:
        """Every student runs the notebook at once; CPU and RSS of every process over that window."""
        if any(s.channel is None for s in students):
            await asyncio.gather(*(self.open_notebook(s) for s in students if s.channel is None))
        procs = self.class_processes(students)
        before = {k: cpu_seconds(p) for k, p in procs.items()}
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        with Sampler(procs) as sampler:
            answers = list(await asyncio.gather(*(self.run_notebook(s) for s in students)))
        seconds = time.monotonic() - started
        use = [
            ProcessUse(
                role=role,
                owner=owner.split("/")[0],
                pid=p.pid,
                cpu=cpu_seconds(p) - before.get((role, owner), 0.0),
                rss_peak=max(sampler.peak.get((role, owner), 0), _rss(p)),
            )
            for (role, owner), p in procs.items()
        ]
        return ClassRun(len(students), seconds, answers, use, (load_before, os.getloadavg()[0]))

    # -------------------------------------------------------------- stopping

    def close(self) -> list[str]:
        """Stop the hub (it stops the proxy and the servers, the servers their kernels), then the
        gateway and the provider, each by PID. Return what outlived that orderly stop (then killed by PID)."""
        for s in self.students.values():
            s.channel = None  # its socket goes with the event loop that opened it
        for name in ("hub", "gateway", "provider"):
            if name in self.processes:
                for child in _children(self.processes[name].pid):
                    self._remember(f"{name} child", child.pid)
        hub = self.processes.get("hub")
        if hub is not None and hub.poll() is None:
            hub.send_signal(signal.SIGTERM)  # the hub's own shutdown: servers and proxy first
            with contextlib.suppress(subprocess.TimeoutExpired):
                hub.wait(timeout=90)
        for name in ("gateway", "provider"):
            process = self.processes.get(name)
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
        # A server asks its kernels to shut down and may be gone before they are: a kernel still
        # exiting a moment later was stopped; one alive after the grace was left behind.
        deadline = time.monotonic() + _EXIT_GRACE
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = self.running()
        for _, p in left:
            stop_tree(p.pid, grace=5)
        return [f"{role} (PID {p.pid})" for role, p in left]

    def running(self) -> list[tuple[str, psutil.Process]]:
        """The processes of the class that still run (by PID and start time: a PID can be reused)."""
        return [(role, p) for role, p in self.seen.values() if _alive(p)]


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def _rss(p: psutil.Process) -> int:
    try:
        return int(p.memory_info().rss)
    except psutil.NoSuchProcess:
        return 0
