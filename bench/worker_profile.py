"""Where the wall time of bench/tuning_loop.py's worker commands goes (issue 32 item 3).

The same two commands as tuning_loop's (a) and (b), through a warm worker that this bench
starts itself from a launcher that wraps the worker's functions with time stamps (and, with
``--cprofile``, a cProfile of the child's ``judge.cli.main``); the client is started from a
launcher that stamps its phases. Nothing of ``judge/`` is changed or configured for this:
the wrapping lives in the launchers below.

Spans, per command (medians over --repeats, wall clock of one machine, so the processes'
stamps compare):
  client:  interpreter start (spawn → first line), imports of the entry point and the
           client, the digest, connect + send, waiting for the answer, exit (last stamp →
           the bench sees the process end: atexit hooks, teardown).
  worker:  accept → fork; in the child: fork → ``judge.cli.main`` called, main's own time
           (tune_process, typer, the command), main's end → ``os._exit``; the parent's
           waitpid → answer sent. The client's "exit call" is its atexit hook, or
           ``client.exit_now`` where the tree has it.
Also the modules a child imports that the warm parent had not (``sys.modules`` growth).

Run:   .venv/bin/python bench/worker_profile.py [--repeats 5] [--cprofile] [--sample] [--tree DIR]
       .venv/bin/python bench/worker_profile.py --start-vs DIR  (the worker's start, paired)
Prints the table; writes bench/out/worker_profile.json (and .prof files with --cprofile).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))

from fake_server import start_in_thread  # noqa: E402
from run import write_suite  # noqa: E402
from tuning_loop import (  # noqa: E402
    NO_TASK_LINE,
    TOUCHED,
    child_env,
    copy_templates,
    suite_without_tasks,
    workspace,
)

SERVER_LAUNCHER = r'''
import json, os, sys, time
LOG = os.environ.pop("WL_LOG")
PROFILE = os.environ.pop("WL_PROFILE", "")
SAMPLE = os.environ.pop("WL_SAMPLE", "")
def sampler(out, stop):
    """Every thread's stack each 2 ms: wall time by stack, threads included (cProfile
    sees only the thread it runs in)."""
    import collections, threading, traceback
    me = threading.get_ident()
    counts = collections.Counter()
    names = {}
    last = time.perf_counter()
    while not stop.wait(0.002):
        now = time.perf_counter()
        step, last = now - last, now
        names.update({t.ident: t.name for t in threading.enumerate()})
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            stack = tuple(f"{fs.filename.split('site-packages/')[-1]}:{fs.lineno}:{fs.name}"
                          for fs in traceback.extract_stack(frame)[-45:])
            counts[(names.get(ident, str(ident)), stack)] += step
    with open(out, "w", encoding="utf-8") as fp:
        json.dump([[n, list(s), c] for (n, s), c in counts.items()], fp)
def stamp(**fields):
    with open(LOG, "a", encoding="utf-8") as fp:
        fp.write(json.dumps(fields) + "\n")
from judge.worker import server
real_child, real_serve = server._child, server._serve
def child(conn, head, fds, listener):
    t_fork = time.time()
    import judge.cli as cli
    real_main = cli.main
    before = set(sys.modules)
    def main():
        t0 = time.time()
        c0 = time.process_time()
        prof = None
        if SAMPLE:
            import threading
            stop = threading.Event()
            t = threading.Thread(target=sampler, args=(
                os.path.join(SAMPLE, f"sample-{os.getpid()}.json"), stop), daemon=True)
            t.start()
        if PROFILE:
            import cProfile
            prof = cProfile.Profile()
            prof.enable()
        try:
            real_main()
        finally:
            t1 = time.time()
            cpu = time.process_time() - c0
            if SAMPLE:
                stop.set()
                t.join()
            if prof is not None:
                prof.disable()
                prof.dump_stats(os.path.join(PROFILE, f"child-{os.getpid()}.prof"))
            stamp(kind="child", pid=os.getpid(), fork=t_fork, main_start=t0, main_end=t1, cpu=cpu,
                  new_modules=sorted(set(sys.modules) - before))
    cli.main = main
    real_exit = os._exit
    def _exit(code):
        stamp(kind="exit", pid=os.getpid(), at=time.time())
        real_exit(code)
    os._exit = _exit
    real_child(conn, head, fds, listener)
def serve(conn, *args):
    t0 = time.time()
    real_fork = os.fork
    seen = {}
    def fork():
        seen["fork"] = time.time()
        return real_fork()
    os.fork = fork
    try:
        real_serve(conn, *args)
    finally:
        os.fork = real_fork
        stamp(kind="parent", accept=t0, fork=seen.get("fork"), answered=time.time())
server._child, server._serve = child, serve
from pathlib import Path
server.serve(Path(sys.argv[1]), 600.0)
os._exit(0)
'''

CLIENT_LAUNCHER = r'''
import time
T0 = time.time()
import atexit, json, os, sys
LOG = os.environ.pop("WL_LOG")
marks = {"start": T0}
import judge.__main__ as entry
from judge.worker import client
marks["imported"] = time.time()
ANSWER = "_answer" if hasattr(client, "_answer") else "_lines"  # a tree before 2026-12-04
real_digest, real_connect, real_answer = client.digest, client._connect, getattr(client, ANSWER)
real_exit_now = getattr(client, "exit_now", None)
def digest():
    marks["digest_start"] = time.time()
    try:
        return real_digest()
    finally:
        marks["digest_end"] = time.time()
def connect(*a):
    marks["connect_start"] = time.time()
    try:
        return real_connect(*a)
    finally:
        marks["connect_end"] = time.time()
def answer(sock):
    marks["hello"] = time.time()
    try:
        return real_answer(sock)
    finally:
        marks["answered"] = time.time()
client.digest, client._connect = digest, connect
setattr(client, ANSWER, answer)
def done():
    if "atexit" in marks:
        return
    marks["atexit"] = time.time()
    with open(LOG, "a", encoding="utf-8") as fp:
        fp.write(json.dumps({"kind": "client", **marks}) + "\n")
atexit.register(done)
def exit_now(code):
    done()
    real_exit_now(code)
if real_exit_now is not None:
    client.exit_now = exit_now
sys.argv = ["judge", *sys.argv[1:]]
entry.main()
'''


def med(values: list[float]) -> float:
    return round(float(statistics.median(values)) * 1000, 1)


class Profiler:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tree = args.tree.resolve()
        self.work = Path(tempfile.mkdtemp(prefix="judge-wprof-"))
        self.runtime = Path(tempfile.mkdtemp(prefix="jw-", dir="/tmp"))
        self.log = self.work / "stamps.jsonl"
        self.server = start_in_thread(latency_ms=0.0, seed=3)
        self.env = child_env(self.tree, XDG_RUNTIME_DIR=str(self.runtime), JUDGE_WORKER="1")
        self.worker: subprocess.Popen[bytes] | None = None

    def close(self) -> None:
        self.stop_worker()
        self.server.stop()
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.runtime, ignore_errors=True)

    def start_worker(self, ws: Path) -> None:
        from judge.worker import client
        os.environ["XDG_RUNTIME_DIR"] = str(self.runtime)
        path = client.socket_path(str(ws))
        env = {**self.env, "WL_LOG": str(self.log)}
        if self.args.cprofile:
            env["WL_PROFILE"] = str(BENCH / "out")
        if self.args.sample:
            env["WL_SAMPLE"] = str(BENCH / "out")
        self.worker = subprocess.Popen([sys.executable, "-c", SERVER_LAUNCHER, str(path)],
                                       cwd=ws, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
        deadline = time.monotonic() + 180
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if not path.exists():
            raise RuntimeError("the profiled worker did not start")

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.send_signal(signal.SIGKILL)
            self.worker.wait(30)
            self.worker = None

    def command(self, ws: Path) -> dict[str, float]:
        """One ``judge run`` through the worker: every stamp, relative to the spawn."""
        self.log.unlink(missing_ok=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        spawned = time.time()
        proc = subprocess.Popen([sys.executable, "-c", CLIENT_LAUNCHER, "run", "suite.jsonl",
                                 "--no-check"], cwd=ws, env={**self.env, "WL_LOG": str(self.log)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _out, err = proc.communicate(timeout=300)
        ended = time.time()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(err.decode()[-2000:])
        deadline = time.monotonic() + 10  # the parent may stamp after the client has ended
        while True:
            rows = [json.loads(x) for x in self.log.read_text(encoding="utf-8").splitlines()]
            kinds = {r["kind"]: r for r in rows}
            if len(kinds) == 4 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        c, p, ch, ex = kinds["client"], kinds["parent"], kinds["child"], kinds["exit"]
        self.new_modules = ch["new_modules"]
        spans = {
            "client: interpreter start": c["start"] - spawned,
            "client: imports (entry + client)": c["imported"] - c["start"],
            "client: enabled, socket path": c["connect_start"] - c["imported"],
            "client: connect": c["connect_end"] - c["connect_start"],
            "client: digest": c["digest_end"] - c["digest_start"],
            "client: send → hello": c["hello"] - c["digest_end"],
            "worker: accept → fork": p["fork"] - p["accept"],
            "child: fork → main": ch["main_start"] - ch["fork"],
            "child: main": ch["main_end"] - ch["main_start"],
            "child: main end → os._exit": ex["at"] - ch["main_end"],
            "child: main end → client has the answer": c["answered"] - ch["main_end"],
            "(worker: child exit → its own answer)": p["answered"] - ex["at"],
            "client: answer → exit call": c["atexit"] - c["answered"],
            "client: exit call → process end": ended - c["atexit"],
            "total (bench sees)": ended - spawned,
            "child: main, CPU (all its threads)": ch["cpu"],
            "client: CPU (user + sys)": (after.ru_utime - before.ru_utime
                                         + after.ru_stime - before.ru_stime),
        }
        return spans

    def one_case(self, suite_big: Path) -> dict[str, Any]:
        one = self.work / "one.jsonl"
        one.write_text(suite_big.read_text(encoding="utf-8").splitlines()[0] + "\n")
        ws = workspace(self.work / "one", self.server.base_url, one)
        self.start_worker(ws)
        runs = []
        try:
            for _ in range(self.args.repeats + 1):
                shutil.rmtree(ws / "cache", ignore_errors=True)
                shutil.rmtree(ws / ".judge", ignore_errors=True)
                runs.append(self.command(ws))
        finally:
            self.stop_worker()
        return {"spans_ms": {k: med([r[k] for r in runs[1:]]) for k in runs[0]},
                "child_new_modules": self.new_modules}

    def five_of_200(self, suite_big: Path) -> dict[str, Any]:
        suite = self.work / "suite-200.jsonl"
        suite_without_tasks(suite_big, suite, 200, TOUCHED)
        ws = workspace(self.work / "loop", self.server.base_url, suite)
        template = copy_templates(ws)
        self.start_worker(ws)
        runs = []
        try:
            self.command(ws)  # all 200 once
            for n in range(1, self.args.repeats + 2):
                text = template.read_text(encoding="utf-8")
                template.write_text(text.replace(f"(no task, edit {n - 1})", NO_TASK_LINE)
                                    .replace(NO_TASK_LINE, f"(no task, edit {n})"),
                                    encoding="utf-8")
                before = self.server.stats()["requests"]
                runs.append(self.command(ws))
                if self.server.stats()["requests"] != before + TOUCHED:
                    raise RuntimeError("a template edit did not re-judge exactly 5 cases")
        finally:
            self.stop_worker()
        return {"spans_ms": {k: med([r[k] for r in runs[1:]]) for k in runs[0]},
                "child_new_modules": self.new_modules}


def start_seconds(tree: Path, ws: Path, runtime: Path) -> float:
    """Seconds from launching ``tree``'s worker to its socket listening (warm() done)."""
    sock = runtime / "start.sock"
    sock.unlink(missing_ok=True)
    env = child_env(tree)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "judge.worker.server", str(sock)], cwd=ws,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while not sock.exists():
            if time.perf_counter() - started > 180 or proc.poll() is not None:
                raise RuntimeError(f"{tree}'s worker did not start")
            time.sleep(0.02)
        return time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait(30)


def start_pairs(base: Path, repeats: int) -> dict[str, Any]:
    """This tree's worker start and ``base``'s, in turn (a workspace of one case)."""
    work = Path(tempfile.mkdtemp(prefix="judge-wstart-"))
    runtime = Path(tempfile.mkdtemp(prefix="jw-", dir="/tmp"))
    try:
        with start_in_thread(latency_ms=0.0, seed=3) as server:
            suite = work / "one.jsonl"
            write_suite(suite, 1)
            ws = workspace(work / "ws", server.base_url, suite)
            this, other = [], []
            for _ in range(repeats):
                this.append(start_seconds(ROOT, ws, runtime))
                other.append(start_seconds(base, ws, runtime))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    return {"this_s": [round(x, 2) for x in this], "base_s": [round(x, 2) for x in other],
            "this_median_s": round(statistics.median(this), 2),
            "base_median_s": round(statistics.median(other), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cprofile", action="store_true",
                        help="profile the child's main (slower: spans then inflate)")
    parser.add_argument("--sample", action="store_true",
                        help="sample every thread's stack in the child every 2 ms")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the judge/ tree to run")
    parser.add_argument("--start-vs", type=Path, default=None, metavar="DIR",
                        help="only time the worker's start, this tree and DIR's in turn")
    args = parser.parse_args()
    if args.start_vs is not None:
        found = start_pairs(args.start_vs.resolve(), args.repeats)
        print(json.dumps({**found, "loadavg": [round(x, 2) for x in os.getloadavg()]}))
        return 0
    load = os.getloadavg()
    prof = Profiler(args)
    try:
        suite_big = prof.work / "suite-big.jsonl"
        write_suite(suite_big, 200)
        results = {"one_case": prof.one_case(suite_big), "five_of_200": prof.five_of_200(suite_big)}
    finally:
        prof.close()
    results["loadavg_before"] = [round(x, 2) for x in load]
    results["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    out = BENCH / "out"
    out.mkdir(exist_ok=True)
    (out / "worker_profile.json").write_text(json.dumps(results, indent=2) + "\n")
    for name in ("one_case", "five_of_200"):
        print(f"{name}:")
        for span, ms in results[name]["spans_ms"].items():
            print(f"  {span:42} {ms:8.1f} ms")
        print(f"  child imports {len(results[name]['child_new_modules'])} new modules: "
              + ", ".join(results[name]["child_new_modules"][:30]))
    print("load", results["loadavg_before"], results["loadavg_after"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
