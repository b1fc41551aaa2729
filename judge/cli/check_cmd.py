"""``judge check``: gate a stored run against its suite's baseline (CI, later or elsewhere).

``judge run`` gates the run it just judged through the same gate
(:mod:`judge.app.runs.gate`); this door gates a run already in the store: in a CI step
after the judging, on another machine that shares the store, or a sharded group once its
last shard is in. Defaults come from the settings: ``threshold``, ``block_on_regression``,
``across_judges``, ``require_baseline``; a flag wins over all of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..app.judges.judge_quality import run_quality
from ..app.runs.baselines import check_run
from ..app.runs.gate import GateVerdict, run_headline
from ..app.runs.sharding import GroupCheck, check_group
from ..app.runs.stored import get_run
from ..app.workspace.workspace import Workspace
from ..core.formats.models import CaseResult
from ..core.text.errors import UsageError
from .gate_reports import (
    GATE_DETAIL,
    print_verdict_body,
    print_verdict_head,
    write_gate_reports,
)
from .options import (
    RUN_HELP,
    AcrossJudgesFlag,
    BaselinesDirAlias,
    BaselinesDirOption,
    JsonFlag,
    JunitOption,
    MarkdownOption,
    RequireBaselineFlag,
    StoreOption,
    ThresholdOption,
)
from .output import emit_json, err_console, print_detail_hint
from .run_cmd import group_json, print_group

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``check`` to ``app``."""
    app.command("check")(check)


def _workspace(store: str | None, directory: str | None, threshold: float | None,
               block: bool | None, *, across: bool, require: bool) -> Workspace:
    return Workspace.open(overrides={"store_url": store, "baselines_dir": directory,
                                     "threshold": threshold, "block_on_regression": block,
                                     "across_judges": True if across else None,
                                     "require_baseline": True if require else None})


def check(
    run_id: Annotated[str | None, typer.Argument(
        metavar="RUN", help=RUN_HELP + " (default: the latest complete run).")] = None,
    suite: Annotated[str | None, typer.Option(
        "--suite", metavar="SUITE_ID_OR_FILE",
        help="Use this suite's latest complete run.")] = None,
    baseline_file: Annotated[Path | None, typer.Option(
        "--baseline", metavar="FILE",
        help="Baseline file (default: baselines/<suite>.json).")] = None,
    threshold: ThresholdOption = None,
    block: Annotated[bool | None, typer.Option(
        "--block/--no-block",
        help="Exit 1 on a regression (default: setting block_on_regression, on).")] = None,
    store: StoreOption = None,
    directory: BaselinesDirOption = None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="NAME",
        help="Gate a sharded group (judge run --shard I/N --group NAME) as one run.")] = None,
    dir_alias: BaselinesDirAlias = None,
    detail: Annotated[bool, typer.Option(
        "--detail", help=f"Add {GATE_DETAIL}.")] = False,
    json_out: JsonFlag = False,
    across_judges: AcrossJudgesFlag = False,
    require_baseline: RequireBaselineFlag = False,
    junit: JunitOption = None,
    markdown: MarkdownOption = None,
) -> None:
    """Gate a stored run against its suite's baseline: the regression gate, for CI.

    `judge run` gates the run it judged; this gates a run already stored: later, on another
    machine sharing the store, or a sharded group once its last shard is in.

    With no baseline yet at the default place, one is recorded from this run when every
    case of it is scored (exit 0: first baseline recorded, nothing compared); where a
    baseline is required (CI set, or --require-baseline) a missing one fails (exit 5),
    naming the file to commit.

    Threshold precedence: --threshold > JUDGE_THRESHOLD > judge.toml / [tool.judge] >
    the baseline file's own threshold > 0.05.

    Exit 0: no regression, or --no-block, or a first baseline recorded. Exit 1: a
    regression while blocking (or, with --group, an incomplete group).

    Exit 2: bad input (unknown run, malformed or missing --baseline file).

    Exit 5: not compared although a comparison was due: the baseline is another judge's,
    rubric's or template's (unless --across-judges), no case in common, the run has
    judgments missing from an offline replay, or a required baseline is missing.
    """
    workspace = _workspace(store, directory or dir_alias, threshold, block,
                           across=across_judges, require=require_baseline)
    verdict, results, found = _gated(workspace, group, run_id, suite, baseline_file)
    _show_verdict(verdict, found, json_out=json_out, detail=detail)
    quality = (run_quality(workspace, get_run(workspace, verdict.run))
               if markdown is not None and found is None else None)
    write_gate_reports(verdict, results, junit=junit, markdown=markdown,
                       quality=quality.said() if quality else None)
    raise typer.Exit(verdict.exit_code if found is None else found.exit_code)


def _gated(workspace: Workspace, group: str | None, run_id: str | None, suite: str | None,
           baseline_file: Path | None,
           ) -> tuple[GateVerdict, tuple[CaseResult, ...], GroupCheck | None]:
    """The verdict, the results it compared, and the group's state with ``--group``."""
    if group is None:
        verdict = check_run(workspace, run_id, suite=suite, baseline_file=baseline_file)
        return verdict, tuple(run_headline(workspace, verdict.run)), None
    if run_id is not None:
        raise UsageError("--group gates the group's runs: a RUN is not taken with it",
                         fix="drop RUN, or drop --group")
    found = check_group(workspace, group, suite=suite, baseline_file=baseline_file)
    return found.verdict, found.results, found


def _show_verdict(verdict: GateVerdict, found: GroupCheck | None, *, json_out: bool,
                  detail: bool) -> None:
    """The verdict as JSON (notices on stderr), or for a person: the verdict's line first."""
    if json_out:
        for notice in verdict.notices:
            err_console().print(notice, markup=False)
        emit_json({**verdict.model_dump(mode="json"),
                   **({"group": group_json(found)} if found is not None else {})})
        return
    if found is not None and not found.status.complete:
        print_group(found)  # an incomplete group is the verdict: nothing was gated
        return
    print_verdict_head(verdict)
    if found is not None:
        print_group(found)
    if print_verdict_body(verdict, detail=detail):
        print_detail_hint(GATE_DETAIL)
