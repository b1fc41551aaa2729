"""Collect one case from real artefacts and write it to a suite file — ``judge suite collect``.

Every source is read by its adapter (``judge/collect``), the case is built once by
:func:`judge.collect.case.build_case` (scrubbed, bounded by the rubric's evidence profile,
signals by the rubric's rules), then checked the way ``judge suite validate`` checks it,
and only then written: a new suite file, or (``append``) the existing one with the case
added. The write is atomic (a temporary file in the same folder, then a rename), so a
reader or a crash sees the old file or the new one. Appending to YAML adds the case's text
at the end and keeps the file's comments; the result is parsed back and compared, and only
when that fails (``cases`` is not the file's last key) is the whole suite rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ...collect.agent_log import collect_agent_log
from ...collect.case import Collected, build_case
from ...collect.documents import collect_documents
from ...collect.gh import collect_gh_pr, collect_gh_run
from ...collect.git import collect_git
from ...collect.junit import collect_junit
from ...collect.task import collect_task
from ...core.formats.rubric import Rubric
from ...core.formats.suite import (
    Case,
    Suite,
    iter_cases,
    iter_jsonl,
    lacks_output,
    parse_suite,
    validate_cases,
)
from ...core.scoring.signal_rules import SignalOutcome
from ...core.text.canonical import canonical_json
from ...core.text.errors import ConfigError, UsageError
from ...core.text.frozen import Frozen
from ...system.atomic_files import write_atomic
from ...system.resources import load_suite, read_suite_text, suite_file_id
from ..workspace.workspace import Workspace

__all__ = ["NO_OUTPUT_FIX", "CollectRequest", "CollectResult", "collect_case",
           "collect_warnings"]

SUITE_SUFFIXES = (".yaml", ".yml", ".jsonl")


class CollectRequest(Frozen):
    """Which artefacts make the case, and the suite file it goes to."""

    case_id: str
    suite: Path
    """The suite file written (``.yaml``, ``.yml`` or ``.jsonl``)."""
    git: str | None = None
    """``REPO[@RANGE]``."""
    junit: tuple[Path, ...] = ()
    gh_pr: Path | None = None
    gh_run: Path | None = None
    agent_log: Path | None = None
    task: Path | None = None
    documents: tuple[Path, ...] = ()
    rubric: str | None = None
    """Rubric id or path; default: the existing suite's, else the workspace's, else
    task-evaluation."""
    append: bool = False
    """Add the case to an existing suite file (a new file is made when there is none)."""


@dataclass(frozen=True)
class CollectResult:
    """What was written: the case, its signals with their rules, and the suite it is in."""

    path: Path
    suite_id: str
    rubric: str
    case: Case
    signals: dict[str, SignalOutcome]
    capped: dict[str, dict[str, int]]
    """Groups over their cap and how many items they had."""
    redactions: int
    """Credentials scrubbed from the artefacts."""
    appended: bool
    """The case was added to an existing file (else a new file was made)."""
    cases: int
    """Cases in the suite file now."""
    rewritten: bool = False
    """Appending had to rewrite the YAML file (its comments are gone)."""
    warnings: tuple[str, ...] = ()
    """What the case lacks that the judge will miss, each with how to give it."""


NO_OUTPUT_FIX = ("give the output under review with --task FILE (its `output:` key), "
                 "--agent-log FILE (the agent's final message) or --gh-pr FILE printed with "
                 "`gh pr view N --json ...,body` (the pull request's description)")


def collect_warnings(case: Case, path: Path) -> tuple[str, ...]:
    """Warnings at collect time, the ones `judge run` would give later."""
    if not lacks_output(case):
        return ()
    return (f"warning: {path}: case {case.id!r} has no 'output': the judge sees only the "
            f"input and the evidence; fix: {NO_OUTPUT_FIX}",)


def _parts(ws: Workspace, request: CollectRequest) -> list[Collected]:
    # The task first, then the agent log: the first input and output given win. Adapters
    # read under the workspace and record paths as written, so the same command in another
    # checkout writes the same bytes (and a document keeps its citation).
    base = ws.root
    parts: list[Collected] = []
    if request.task is not None:
        parts.append(collect_task(request.task, base))
    if request.agent_log is not None:
        parts.append(collect_agent_log(request.agent_log, base))
    if request.git is not None:
        parts.append(collect_git(request.git, base))
    if request.junit:
        parts.append(collect_junit(request.junit, base))
    if request.gh_pr is not None:
        parts.append(collect_gh_pr(request.gh_pr, base))
    if request.gh_run is not None:
        parts.append(collect_gh_run(request.gh_run, base))
    if request.documents:
        parts.append(collect_documents(request.documents, base))
    return parts


class _Dumper(yaml.SafeDumper):
    """Multi-line text as a literal block (``|``): a traceback reads as one in a diff."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted style by itself where a block cannot hold the text.
    return dumper.represent_scalar("tag:yaml.org,2002:str", value,
                                   style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _case_block(case: Case) -> str:
    return _dump([case.model_dump(mode="json", exclude_defaults=True)])


def _indent(block: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in block.splitlines(True))


def _append_yaml(text: str, existing: Suite, case: Case, source: str) -> tuple[str, bool]:
    """The file's text with ``case`` appended (comments kept if possible), and if rewritten."""
    want = (*existing.cases, case)
    base = text if text.endswith("\n") else text + "\n"
    block = _case_block(case)
    for spaces in (0, 2, 4):
        candidate = base + _indent(block, spaces)
        try:
            parsed = parse_suite(candidate, source, default_id=existing.id)
        except ConfigError:
            continue
        if parsed.cases == want and parsed.id == existing.id \
                and parsed.rubric == existing.rubric:
            return candidate, False
    return _suite_yaml(existing.model_copy(update={"cases": want})), True


def _jsonl_line(case: Case) -> str:
    return canonical_json(case.model_dump(mode="json", exclude_defaults=True)) + "\n"


def _existing_jsonl(path: Path, case_id: str) -> tuple[str, int]:
    text = read_suite_text(path)
    count = 0
    for case in iter_cases(iter_jsonl(text.splitlines(), str(path)), str(path)):
        count += 1
        if case.id == case_id:
            raise _duplicate(path, case_id)
    return text, count


def _duplicate(path: Path, case_id: str) -> UsageError:
    return UsageError(f"suite {path} already has a case {case_id!r}", where="--id",
                      fix="choose another --id, or remove that case from the file first")


def _write_atomic(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc}", where="-o",
                         fix="check the folder's permissions and free space") from None


def _check_request(request: CollectRequest, path: Path) -> None:
    if path.suffix not in SUITE_SUFFIXES:
        raise UsageError(f"a suite file ends in {', '.join(SUITE_SUFFIXES)}, not {path.name!r}",
                         where="-o", fix="write e.g. -o cases.yaml")
    given = (request.git, request.junit, request.gh_pr, request.gh_run, request.agent_log,
             request.task, request.documents)
    if not any(given):
        raise UsageError("nothing to collect", where="judge suite collect",
                         fix="name at least one artefact: --git, --junit, --gh-pr, --gh-run, "
                             "--agent-log, --task or --document")
    if path.exists() and not request.append:
        raise UsageError(f"{request.suite} already exists", where="-o",
                         fix="pass --append to add the case to it, or choose another file")


def _new_suite_text(path: Path, suite: Suite) -> str:
    if path.suffix == ".jsonl":
        return "".join(_jsonl_line(c) for c in suite.cases)
    return ("# Collected from real artefacts with `judge suite collect`; add cases with --append.\n"
            + _suite_yaml(suite))


def _suite_yaml(suite: Suite) -> str:
    return _dump(suite.model_dump(mode="json", exclude_defaults=True))


def _suite_id(path: Path) -> str:
    """The suite's id: its file's (a JSONL suite has no other); a new YAML file's, made valid.

    A YAML suite written here carries its ``id:``, so a file name with characters an id
    cannot hold still gives one; a JSONL suite is read back by its file's id alone.
    """
    stem = suite_file_id(path)
    if path.suffix == ".jsonl":
        return stem
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in stem).strip("-._")
    return cleaned or "collected"


def _validated(text: str, path: Path, rubric: Rubric, suite_id: str) -> Suite:
    """The suite the text holds, checked as ``judge suite validate`` would check it."""
    suite = parse_suite(text, str(path), default_id=suite_id)
    validate_cases(suite.cases, rubric, str(path))
    return suite


def collect_case(ws: Workspace, request: CollectRequest) -> CollectResult:
    """Build the case from its artefacts and write it; ConfigError (exit 2) on bad input.

    Nothing is written unless the case and the whole resulting file validate.
    """
    path = ws.path(request.suite)
    _check_request(request, path)
    existing: Suite | None = None
    jsonl_text: str | None = None
    jsonl_count = 0
    appending = request.append and path.exists()
    if appending and path.suffix == ".jsonl":
        jsonl_text, jsonl_count = _existing_jsonl(path, request.case_id)
    elif appending:
        existing = load_suite(path)
        if any(c.id == request.case_id for c in existing.cases):
            raise _duplicate(path, request.case_id)
    rubric = ws.rubric(request.rubric, default=existing.rubric if existing else None)
    built = build_case(request.case_id, _parts(ws, request), rubric, ws.secret_pattern)
    case = built.case
    rewritten = False
    if jsonl_text is not None:
        line = _jsonl_line(case)
        validate_cases(iter_cases(iter_jsonl([line], str(path)), str(path)), rubric, str(path))
        sep = "" if not jsonl_text or jsonl_text.endswith("\n") else "\n"
        text, suite_id, count = jsonl_text + sep + line, _suite_id(path), jsonl_count + 1
    elif existing is not None:
        text, rewritten = _append_yaml(read_suite_text(path), existing, case, str(path))
        suite = _validated(text, path, rubric, existing.id)
        suite_id, count = suite.id, len(suite.cases)
    else:
        fresh = Suite(id=_suite_id(path), rubric=request.rubric or rubric.id,
                      description="Cases collected from real artefacts by judge suite collect.",
                      cases=(case,))
        text = _new_suite_text(path, fresh)
        suite = _validated(text, path, rubric, fresh.id)
        suite_id, count = suite.id, len(suite.cases)
    _write_atomic(path, text)
    return CollectResult(path=path, suite_id=suite_id, rubric=rubric.id, case=case,
                         signals=built.signals, capped=built.capped,
                         redactions=built.redactions, appended=appending, cases=count,
                         rewritten=rewritten, warnings=collect_warnings(case, request.suite))
