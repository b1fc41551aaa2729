"""Milliseconds a prompt render takes: the shipped template and a workspace copy of it.

Renders N generated task-evaluation cases (:func:`judge.app.workspace.fixtures.generate_cases`, the
same cases every time) through :class:`judge.render.prompts.PromptRenderer`, in-process,
bundles built once beforehand, so the figure is the render alone. Two renderers: the
shipped ``judge`` template, and a workspace ``prompts/`` holding a byte-identical copy of
it and its partials (the path a team's edited template takes). Prints the median over
``--repeats`` passes of the per-render mean, and checks that both give the same messages.

Rerun (a few seconds):

    PYTHONPATH=. .venv/bin/python bench/render.py [--cases 200] [--repeats 7]

To compare two checkouts, run it once from each with its own PYTHONPATH, alternating.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from judge.app.workspace.fixtures import generate_cases
from judge.core.formats.evidence import build_bundle
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, shipped_dir


def _per_render_ms(renderer: PromptRenderer, work: list, repeats: int) -> float:
    passes = []
    for _ in range(repeats):
        start = time.process_time()
        for rubric, case, bundle in work:
            renderer.render(rubric, case, bundle)
        passes.append((time.process_time() - start) * 1000 / len(work))
    return statistics.median(passes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rubric = load_rubric("task-evaluation")
    cases = generate_cases("render-bench", args.cases, rubric=rubric).cases
    work = [(rubric, case, build_bundle(case.evidence, rubric.evidence)) for case in cases]
    with tempfile.TemporaryDirectory() as tmp:
        prompts = Path(tmp) / "prompts"
        shutil.copytree(shipped_dir("prompts"), prompts)
        shipped, workspace = PromptRenderer(), PromptRenderer(workspace=Path(tmp))
        for rubric_, case, bundle in work[:20]:
            assert shipped.render(rubric_, case, bundle).messages == \
                workspace.render(rubric_, case, bundle).messages
        for renderer in (shipped, workspace):  # warm: compile, first-call caches
            _per_render_ms(renderer, work[:10], 1)
        result = {"cases": len(work), "repeats": args.repeats,
                  "shipped_ms": round(_per_render_ms(shipped, work, args.repeats), 4),
                  "workspace_ms": round(_per_render_ms(workspace, work, args.repeats), 4)}
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
