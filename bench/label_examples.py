"""Labelled examples in the prompt, measured on held-out labels.

The labelled cases of a shipped example suite (its LLM-judged cases' ``human:`` labels,
and its ``<suite>.labels.jsonl`` when there is one) are split into F folds by the product's
fold hash (:func:`judge.core.scoring.calibration.fold_of`, the folds of a rubric's ``examples:``).
Each held-out fold's cases are judged twice through the product's run path
(:func:`judge.app.runs.running.run_suite`), each time in a fresh workspace:

- **before**: template ``judge``, the shipped rubric: no examples;
- **after**: template ``judge-examples``, a workspace copy of the rubric with ``examples:
  {count: K, folds: F, seed: S}``: each held-out case is shown K labelled cases of the
  other folds (:func:`judge.core.formats.label_examples.example_ids`).

Agreement with the labels, over the held-out cases only, is ``judge compare``'s
(:func:`judge.core.stats.agreement.compare_runs` with its seeded bootstrap 95 % intervals): ρ,
MAD and exact band agreement on the pooled AI scores (what the judge said) and on the
overall scores (the core's blend), and the paired bootstrap of "after is closer to the
people than before" (MAD of the overall scores, after minus before).

Judges:

- ``--judge fake``: tests/fakes/fake_server.py on loopback, behind a front that records every
  request as sent. Its answer is a hash of the request: examples change the prompt and so
  redraw the answer, but no mode of the fake reads them, so no gain is possible and none is
  claimed. What it shows: the pipeline runs end to end, and (checked on every recorded
  prompt) a held-out case is never shown itself or another case of its fold, nor their
  labels; the before prompts show no example at all.
- ``--judge local``: ``local/smollm2`` (llama.cpp, 20-180 s a judgment on the shared 2-core
  machine): bound it with ``--fold`` and ``--max-cases``. The same check runs on the
  requests of its workspaces' cache entries (what it was sent, as keyed).

Run (writes the rows to bench/out/label_examples-<judge>.json and prints a table):

    PYTHONPATH=$PWD .venv/bin/python bench/label_examples.py --judge fake
    PYTHONPATH=$PWD .venv/bin/python bench/label_examples.py --judge local \\
        --suite examples/task-evaluation/suite.yaml --fold 2 --max-cases 8
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

from judge.app.admin.cache_ops import export_cache
from judge.app.judges.comparing import labels_file_labels
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.core.formats.label_examples import example_ids
from judge.core.formats.models import CaseResult
from judge.core.formats.rubric import LabelExamples, Rubric
from judge.core.formats.suite import Case, HumanLabel
from judge.core.scoring.calibration import fold_of
from judge.core.stats.agreement import HumanAgreement, PairStats, compare_runs
from judge.core.text.seals import NO_SECRET
from judge.render.prompts import ExampleView, input_text
from judge.system.resources import load_rubric, open_suite

ROOT = Path(__file__).resolve().parents[1]
SUITES = (ROOT / "examples" / "task-evaluation" / "suite.yaml",
          ROOT / "examples" / "research-agent" / "suite.yaml")
FAKE_MODEL = "hosted_vllm/fake-judge"
LOCAL_MODEL = "local/smollm2"
HEAD = "## Examples scored by people"


def _fake() -> ModuleType:
    if str(ROOT / "tests" / "fakes") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests" / "fakes"))  # the loopback fake judge
    return importlib.import_module("fake_server")


# -- the recording front of the fake judge ---------------------------------------------------


class RecordingFake:
    """The fake judge's answers (``FakeModelServer.answer_body``) on 127.0.0.1, every request
    body kept as received, so the prompts checked are the bytes the judge was sent."""

    def __init__(self, seed: int = 7) -> None:
        self.fake = _fake().FakeModelServer(_fake().ServerOptions(seed=seed))
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        front = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with front._lock:
                    front.bodies.append(body)
                    status, payload = front.fake.answer_body(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        """What ``judge run --api-base`` takes."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> RecordingFake:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


# -- folds, runs, agreement -------------------------------------------------------------------


def suite_labels(suite_file: Path, rubric: Rubric) -> tuple[dict[str, Case], dict[str, HumanLabel]]:
    """The suite's cases and the labels the prompt's examples are drawn from (as
    :func:`judge.app.judges.prompt_examples.with_label_examples` reads them): per-category
    labels."""
    cases = {c.id: c for c in open_suite(suite_file).cases()}
    labels = {cid: c.human for cid, c in cases.items() if c.human is not None}
    labels |= labels_file_labels(suite_file, rubric, NO_SECRET)
    return cases, {cid: h for cid, h in labels.items() if cid in cases and h.categories}


def folds_of(cases: dict[str, Case], labels: dict[str, HumanLabel],
             config: LabelExamples) -> dict[int, list[str]]:
    """The labelled LLM-judged cases of each fold, by id."""
    out: dict[int, list[str]] = {f: [] for f in range(config.folds)}
    for cid in sorted(labels):
        if cases[cid].judged_by == "llm":
            out[fold_of(cid, config.folds, config.seed)].append(cid)
    return out


def workspace(root: Path, suite_file: Path, rubric_id: str, config: LabelExamples | None,
              settings: dict[str, Any]) -> Workspace:
    """A fresh workspace at ``root`` judging a copy of the suite: with ``config``, under
    ``judge-examples`` and a copy of the rubric that asks for examples; else as shipped."""
    root.mkdir(parents=True)
    shutil.copy(suite_file, root / "suite.yaml")
    labels = suite_file.with_name(suite_file.name.removesuffix(".yaml") + ".labels.jsonl")
    if labels.is_file():
        shutil.copy(labels, root / "suite.labels.jsonl")
    template = "judge"
    if config is not None:
        text = (ROOT / "rubrics" / f"{rubric_id}.yaml").read_text(encoding="utf-8")
        (root / "rubrics").mkdir()
        (root / "rubrics" / f"{rubric_id}.yaml").write_text(
            text + f"examples: {{count: {config.count}, folds: {config.folds}, "
                   f"seed: {config.seed}}}\n", encoding="utf-8")
        template = "judge-examples"
    return Workspace.open(root, {**settings, "template": template}, env={})


def judge_cases(ws: Workspace, ids: Sequence[str]) -> tuple[list[CaseResult], float]:
    """One run of ``ws``'s suite over ``ids``; its results and wall seconds."""
    start = time.perf_counter()
    outcome = run_suite(ws, RunRequest(suite=ws.root / "suite.yaml", ids=tuple(ids),
                                       check=False))
    wall = time.perf_counter() - start
    with ws.open_store() as store:
        return list(store.iter_results(outcome.run.id)), wall


def cached_requests(ws: Workspace) -> list[dict[str, Any]]:
    """The requests of a fresh workspace's cache entries (``judge cache export``): what the
    local judge was sent, as keyed (its server keeps no log of prompts)."""
    out = io.StringIO()
    export_cache(ws, out)
    return [json.loads(line)["request"] for line in out.getvalue().splitlines() if line]


def _progress(path: Path, fold: int, name: str, results: Sequence[CaseResult],
              wall: float) -> None:
    """One line per judged case, written as it comes: what a stopped run still leaves."""
    with path.open("a", encoding="utf-8") as out:
        for r in results:
            if r.judge is None:
                continue
            out.write(json.dumps({
                "fold": fold, "condition": name, "case": r.id, "status": r.status,
                "overall": r.overall_score, "band": r.band, "wall": round(wall, 1),
                "load": round(os.getloadavg()[0], 2),
                "ai": {c.category: c.ai_score for c in r.category_scores}}) + "\n")


def agreement(before: list[CaseResult], after: list[CaseResult], rubric: Rubric,
              labels: dict[str, HumanLabel]) -> dict[str, Any]:
    """``compare_runs`` of the two conditions against the labels, with intervals."""
    comparison = compare_runs({"before": before, "after": after}, rubric.bands, human=labels,
                              intervals=True)
    by_name = {h.judge: h for h in comparison.human}
    (pair,) = comparison.human_pairs  # judge A is "before": MAD(before) - MAD(after)
    assert (pair.judge_a, pair.judge_b) == ("before", "after")
    return {"before": _row(by_name["before"]), "after": _row(by_name["after"]),
            "madBeforeMinusAfter": _dump(pair.mad_difference), "pairVerdict": pair.verdict}


def _dump(value: Any) -> Any:
    return None if value is None else value.model_dump(mode="json")


def _stats(s: PairStats) -> dict[str, Any]:
    ci = s.intervals
    return {"n": s.n, **{name: {"value": getattr(s, attr),
                                "interval": _dump(getattr(ci, attr)) if ci else None}
                         for name, attr in (("rho", "spearman_rho"), ("mad", "mean_abs_diff"),
                                            ("sameBand", "exact_band_agreement"),
                                            ("kappa", "weighted_kappa"))}}


def _row(h: HumanAgreement) -> dict[str, Any]:
    return {"labelled": h.labelled, "ai": _stats(h.ai_all), "overall": _stats(h.overall)}


# -- the leak check on the prompts as sent ----------------------------------------------------


def _first_line(case: Case) -> str:
    return input_text(case.input).splitlines()[0]


def _which(text: str, cases: dict[str, Case]) -> list[str]:
    return [cid for cid, c in cases.items() if f"```\n  {_first_line(c)}" in text
            or f"\n{_first_line(c)}\n" in text]


def label_line(case: Case, label: HumanLabel, rubric: Rubric) -> str:
    """The people's scores of ``case`` as the shipped partial prints them."""
    view = ExampleView.of(case, label, rubric)
    return "The people's scores: " + "; ".join(f"{c} {s} ({n})" for c, s, n in view.scores)


def check_prompts(bodies: Sequence[dict[str, Any]], cases: dict[str, Case],
                  labels: dict[str, HumanLabel], rubric: Rubric, held_out: Sequence[str],
                  config: LabelExamples | None) -> dict[str, Any]:
    """Every held-out case's prompt: the examples it shows are of training folds only (never
    itself, never its fold) and are exactly :func:`example_ids`'; its own label is absent.

    AssertionError on the first breach; else counts of what was checked.
    """
    held = set(held_out)
    seen: dict[str, tuple[str, ...]] = {}
    for body in bodies:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        head, sep, own = ("\n" + user).partition("\n## Task\n")
        assert sep, "a prompt without its case"
        (case_id,) = [cid for cid in _which("\n" + own, cases) if cid in held] or [None]
        assert case_id is not None, "a prompt of a case that was not held out"
        if config is None:
            assert HEAD not in head, f"{case_id}: examples in a prompt without examples"
            seen[case_id] = ()
            continue
        shown: list[str] = []
        for part in head.split("\n### Example ")[1:]:
            (example,) = _which(part, cases)
            shown.append(example)
            assert example not in held, f"{case_id} was shown held-out case {example}"
            assert label_line(cases[example], labels[example], rubric) in part
        assert tuple(shown) == example_ids(case_id, labels, config), case_id
        own_line = label_line(cases[case_id], labels[case_id], rubric)
        assert own_line not in head or any(
            own_line == label_line(cases[e], labels[e], rubric) for e in shown), \
            f"{case_id}: its own label is in its prompt"
        seen[case_id] = tuple(shown)
    assert set(seen) == held, f"prompts of {sorted(held - set(seen))} were not sent"
    return {"prompts": len(bodies), "cases": len(seen),
            "examplesShown": sum(len(v) for v in seen.values())}


# -- the measurement ----------------------------------------------------------------------------


@contextmanager
def _judge(kind: str, timeout: float) -> Iterator[tuple[dict[str, Any], RecordingFake | None]]:
    if kind == "fake":
        with RecordingFake() as front:
            yield {"model": [FAKE_MODEL], "api_base": front.api_base}, front
    else:
        yield {"model": [LOCAL_MODEL], "timeout": timeout, "concurrency": 1}, None


def measure(kind: str, suite_file: Path, config: LabelExamples, folds: Sequence[int] | None,
            max_cases: int, root: Path, progress: Path,
            timeout: float = 900.0) -> dict[str, Any]:
    """Before/after over the held-out folds of one suite: per fold and pooled."""
    rubric_id = open_suite(suite_file).rubric or "task-evaluation"
    rubric = load_rubric(rubric_id)
    cases, labels = suite_labels(suite_file, rubric)
    by_fold = folds_of(cases, labels, config)
    chosen = list(folds) if folds is not None else [f for f, ids in by_fold.items() if ids]
    out: dict[str, Any] = {"judge": kind, "suite": str(suite_file.relative_to(ROOT)),
                           "rubric": rubric_id, "examples": config.model_dump(mode="json"),
                           "labelled": len(labels), "folds": [],
                           "loadAtStart": round(os.getloadavg()[0], 2)}
    pooled: dict[str, list[CaseResult]] = {"before": [], "after": []}
    for fold in chosen:
        ids = by_fold[fold][:max_cases]
        row: dict[str, Any] = {"fold": fold, "heldOut": ids,
                               "heldOutOfFold": len(by_fold[fold])}
        conditions = (("before", None), ("after", config))
        with _judge(kind, timeout) as (settings, front):
            spaces = {name: workspace(root / f"{fold}-{name}", suite_file, rubric_id, cfg,
                                       settings) for name, cfg in conditions}
            # The local judge: a case at a time, before then after, so a stop keeps pairs.
            batches = [ids] if front is not None else [[cid] for cid in ids]
            bodies: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            walls = {"before": 0.0, "after": 0.0}
            for batch in batches:
                for name, _ in conditions:
                    if front is not None:
                        front.bodies.clear()
                    results, wall = judge_cases(spaces[name], batch)
                    if front is not None:
                        bodies[name] += front.bodies
                    walls[name] += wall
                    pooled[name] += results
                    _progress(progress, fold, name, results, wall)
        for name, cfg in conditions:
            sent = bodies[name] if front is not None else cached_requests(spaces[name])
            row[f"promptCheck{name.title()}"] = check_prompts(sent, cases, labels, rubric,
                                                             ids, cfg)
            row[f"wall{name.title()}"] = round(walls[name], 1)
            row[f"scored{name.title()}"] = sum(r.status == "scored" for r in pooled[name]
                                               if r.judge is not None and r.id in ids)
        row["agreement"] = agreement(*_pick(pooled, ids), rubric, labels)
        out["folds"].append(row)
    out["pooled"] = agreement(pooled["before"], pooled["after"], rubric, labels)
    out["loadAtEnd"] = round(os.getloadavg()[0], 2)
    return out


def _pick(pooled: dict[str, list[CaseResult]], ids: Sequence[str],
          ) -> tuple[list[CaseResult], list[CaseResult]]:
    keep = set(ids)
    return ([r for r in pooled["before"] if r.id in keep],
            [r for r in pooled["after"] if r.id in keep])


def _cell(stat: dict[str, Any], places: int, share: bool = False) -> str:
    value, ci = stat["value"], stat["interval"]
    if value is None:
        return "—"
    text = f"{value:.0%}" if share else f"{value:.{places}f}"
    if ci is None or ci["low"] is None:
        return text
    if share:
        return f"{text} [{ci['low']:.0%}, {ci['high']:.0%}]"
    return f"{text} [{ci['low']:.{places}f}, {ci['high']:.{places}f}]"


def table(result: dict[str, Any]) -> str:
    """Markdown rows: per fold and pooled, before and after, AI pooled and overall."""
    lines = ["| suite | folds | condition | cases | AI ρ | AI MAD | AI same band | "
             "overall ρ | overall MAD | overall same band |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rows = [(f"fold {f['fold']}", f["agreement"]) for f in result["folds"]]
    if len(result["folds"]) > 1:
        rows.append(("pooled", result["pooled"]))
    suite = Path(result["suite"]).parent.name
    for label, agree in rows:
        for name in ("before", "after"):
            r = agree[name]
            lines.append(f"| {suite} | {label} | {name} | {r['overall']['n']} | "
                         f"{_cell(r['ai']['rho'], 2)} | {_cell(r['ai']['mad'], 1)} | "
                         f"{_cell(r['ai']['sameBand'], 0, True)} | "
                         f"{_cell(r['overall']['rho'], 2)} | {_cell(r['overall']['mad'], 1)} | "
                         f"{_cell(r['overall']['sameBand'], 0, True)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table and the paired verdicts, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--judge", choices=("fake", "local"), default="fake")
    parser.add_argument("--suite", type=Path, action="append",
                        help="an example suite with labels (default: both shipped ones)")
    parser.add_argument("--count", type=int, default=3, help="K, examples per prompt")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fold", type=int, action="append",
                        help="only this held-out fold (repeat; default: every fold)")
    parser.add_argument("--max-cases", type=int, default=1000,
                        help="at most this many held-out cases of a fold")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds one local judgment may take")
    parser.add_argument("--work", type=Path,
                        help="keep the workspaces (stores, caches) here instead of a temporary "
                             "folder")
    args = parser.parse_args(argv)
    config = LabelExamples(count=args.count, folds=args.folds, seed=args.seed)
    suites = [p.resolve() for p in args.suite] if args.suite else list(SUITES)
    root = args.work.resolve() if args.work else Path(tempfile.mkdtemp(
        prefix="judge-label-examples-"))
    out = ROOT / "bench" / "out" / f"label_examples-{args.judge}.json"
    out.parent.mkdir(exist_ok=True)
    progress = out.with_suffix(".progress.jsonl")
    progress.write_text("", encoding="utf-8")
    results = []
    try:
        for n, suite in enumerate(suites):
            result = measure(args.judge, suite, config, args.fold, args.max_cases,
                             root / str(n), progress, args.timeout)
            results.append(result)
            print(table(result))
            for f in result["folds"]:
                print(f"fold {f['fold']}: {f['agreement']['pairVerdict']}")
            if len(result["folds"]) > 1:
                print(f"pooled: {result['pooled']['pairVerdict']}")
            sys.stdout.flush()
    finally:
        if args.work is None:
            shutil.rmtree(root, ignore_errors=True)
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                       encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
