"""The gh adapter: the JSON ``gh pr view --json ...`` and ``gh run view --json ...`` print.

A pull request gives ``reviews`` (each review, cited by its id, and each conversation
comment) and ``workflow`` items for its status checks; a workflow run gives ``workflow``
items for the run and each job (failed steps named in the excerpt). Fields ``gh`` did not
print are simply absent: ask for what you need, e.g.::

    gh pr view 412 --json number,title,body,state,url,mergedAt,reviewDecision,reviews,\
        comments,statusCheckRollup

(``body``, the description, becomes the case's output under review unless a task file or an
agent log gives one).
    gh run view 9001 --json databaseId,name,displayTitle,status,conclusion,event,\
        headBranch,headSha,url,createdAt,updatedAt,attempt,jobs

(each one comma-separated list, without the line break).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..core.evidence import citable_id
from .case import Collected
from .sources import read_source

__all__ = ["FAILED", "collect_gh_pr", "collect_gh_run", "parse_gh_pr", "parse_gh_run",
           "pr_description"]

FAILED = frozenset({"FAILURE", "ERROR", "TIMED_OUT", "CANCELLED", "ACTION_REQUIRED",
                    "STARTUP_FAILURE"})
"""Check and job conclusions (upper-cased) that count as failed."""
PASSED = frozenset({"SUCCESS"})
VERDICTS = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})
"""Review states that set a reviewer's verdict (a plain COMMENTED review does not)."""


def _login(value: Any) -> str | None:
    if isinstance(value, Mapping):
        login = value.get("login") or value.get("name")
        return str(login) if login else None
    return str(value) if value else None


def _str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _clean(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if v is not None}


def _conclusion(raw: Mapping[str, Any]) -> str:
    # CheckRun: status + conclusion; StatusContext: state (SUCCESS, FAILURE, PENDING...).
    value = raw.get("conclusion") or raw.get("state") or ""
    return str(value).upper()


def _check_items(checks: list[Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    items = []
    counts = {"total": 0, "passed": 0, "failed": 0, "pending": 0}
    for n, raw in enumerate(checks, start=1):
        if not isinstance(raw, Mapping):
            continue
        name = _str(raw.get("name")) or _str(raw.get("context")) or f"check {n}"
        workflow = _str(raw.get("workflowName"))
        label = f"{workflow} / {name}" if workflow else name
        # Cited as check:WORKFLOW/NAME, spaces as dashes (the id alphabet has no spaces).
        cite = "/".join(p.strip().replace(" ", "-") for p in (workflow, name) if p)
        conclusion = _conclusion(raw)
        counts["total"] += 1
        if conclusion in PASSED:
            counts["passed"] += 1
        elif conclusion in FAILED:
            counts["failed"] += 1
        elif conclusion in ("", "PENDING", "EXPECTED", "QUEUED", "IN_PROGRESS"):
            counts["pending"] += 1
        items.append(_clean({
            "id": citable_id("workflow", f"check:{cite}"), "name": label,
            "status": conclusion.lower() or "pending",
            "startedAt": _str(raw.get("startedAt")), "completedAt": _str(raw.get("completedAt")),
            "url": _str(raw.get("detailsUrl") or raw.get("targetUrl"))}))
    return items, counts


def _review_items(data: Mapping[str, Any], pr: str) -> tuple[list[dict[str, Any]],
                                                             dict[str, int]]:
    items = []
    latest: dict[str, str] = {}
    reviews = [r for r in data.get("reviews") or [] if isinstance(r, Mapping)]
    for n, raw in enumerate(reviews, start=1):
        state = str(raw.get("state") or "").upper()
        reviewer = _login(raw.get("author")) or "unknown"
        if state in VERDICTS:
            latest[reviewer] = state  # gh lists reviews oldest first: the last one stands
        commit = raw.get("commit")
        oid = _str(commit.get("oid")) if isinstance(commit, Mapping) else None
        items.append(_clean({
            "id": citable_id("reviews", f"review:{raw.get('id') or n}"), "pr": pr,
            "state": state.lower() or None, "reviewer": reviewer,
            "at": _str(raw.get("submittedAt")),
            "commit": oid[:12] if oid else None,
            "body": _str(raw.get("body"))}))
    comments = [c for c in data.get("comments") or [] if isinstance(c, Mapping)]
    for n, raw in enumerate(comments, start=1):
        items.append(_clean({
            "id": citable_id("reviews", f"comment:{raw.get('id') or n}"), "pr": pr,
            "state": "comment", "reviewer": _login(raw.get("author")) or "unknown",
            "at": _str(raw.get("createdAt")), "body": _str(raw.get("body"))}))
    counts = {"total": len(reviews), "comments": len(comments),
              "approved": sum(s == "APPROVED" for s in latest.values()),
              "changes_requested": sum(s == "CHANGES_REQUESTED" for s in latest.values())}
    return items, counts


def parse_gh_pr(data: Mapping[str, Any]) -> Collected:
    """A pull request's reviews, comments and checks (``gh pr view --json ...``)."""
    number = data.get("number")
    pr = str(number) if number is not None else "pr"
    reviews, rcounts = _review_items(data, pr)
    checks, ccounts = _check_items([c for c in data.get("statusCheckRollup") or []])
    facts: dict[str, Any] = {}
    if "reviews" in data:
        facts.update({"reviews.total": rcounts["total"], "reviews.approved": rcounts["approved"],
                      "reviews.changes_requested": rcounts["changes_requested"]})
    if "comments" in data:
        facts["reviews.comments"] = rcounts["comments"]
    if "statusCheckRollup" in data:
        facts.update({f"checks.{k}": v for k, v in ccounts.items()})
    state = _str(data.get("state"))
    if state is not None:
        facts["pr.state"] = state.upper()
    if state is not None or "mergedAt" in data:
        facts["pr.merged"] = (state or "").upper() == "MERGED" or bool(data.get("mergedAt"))
    decision = _str(data.get("reviewDecision"))
    if decision is not None:
        facts["pr.review_decision"] = decision.upper()
    source = _clean({"kind": "gh-pr", "pr": number if isinstance(number, int) else None,
                     "title": _str(data.get("title")), "url": _str(data.get("url"))})
    evidence = {k: v for k, v in (("reviews", reviews), ("workflow", checks)) if v}
    return Collected(source=source, evidence=evidence, facts=facts,
                     output=pr_description(data))


def pr_description(data: Mapping[str, Any]) -> str | None:
    """The pull request's description (``body``) under its title, or None when empty.

    Its author's account of the change: the case's output under review when no task file or
    agent log gives one (issue 33).
    """
    body = _str(data.get("body"))
    if body is None or not body.strip():
        return None
    title = _str(data.get("title"))
    return f"{title}\n\n{body.strip()}" if title else body.strip()


def _failed_steps(job: Mapping[str, Any]) -> list[str]:
    return [str(s.get("name")) for s in job.get("steps") or []
            if isinstance(s, Mapping) and str(s.get("conclusion") or "").upper() in FAILED]


def parse_gh_run(data: Mapping[str, Any]) -> Collected:
    """A workflow run and its jobs (``gh run view --json ...``)."""
    run_id = data.get("databaseId")
    title = _str(data.get("displayTitle")) or _str(data.get("name")) or "workflow run"
    conclusion = (_str(data.get("conclusion")) or "").lower()
    status = (_str(data.get("status")) or "").lower()
    items: list[dict[str, Any]] = [_clean({
        "id": citable_id("workflow", f"run:{run_id if run_id is not None else title}"),
        "name": f"{_str(data.get('workflowName')) or _str(data.get('name')) or 'Run'}: {title}",
        "status": conclusion or status or None, "event": _str(data.get("event")),
        "branch": _str(data.get("headBranch")),
        "headSha": (_str(data.get("headSha")) or "")[:12] or None,
        "attempt": data.get("attempt") if isinstance(data.get("attempt"), int) else None,
        "createdAt": _str(data.get("createdAt")), "updatedAt": _str(data.get("updatedAt")),
        "url": _str(data.get("url"))})]
    jobs = [j for j in data.get("jobs") or [] if isinstance(j, Mapping)]
    counts = {"passed": 0, "failed": 0}
    for n, job in enumerate(jobs, start=1):
        job_conclusion = str(job.get("conclusion") or "").upper()
        if job_conclusion in PASSED:
            counts["passed"] += 1
        elif job_conclusion in FAILED:
            counts["failed"] += 1
        failed = _failed_steps(job)
        items.append(_clean({
            "id": citable_id("workflow", f"job:{job.get('databaseId') or n}"),
            "name": _str(job.get("name")) or f"job {n}",
            "status": job_conclusion.lower() or str(job.get("status") or "").lower() or None,
            "startedAt": _str(job.get("startedAt")),
            "completedAt": _str(job.get("completedAt")), "url": _str(job.get("url")),
            "excerpt": f"failed steps: {', '.join(failed)}" if failed else None}))
    facts: dict[str, Any] = {}
    if conclusion:
        facts.update({"run.conclusion": conclusion, "run.success": conclusion == "success"})
    if "jobs" in data:
        facts.update({"jobs.total": len(jobs), "jobs.passed": counts["passed"],
                      "jobs.failed": counts["failed"]})
    source = _clean({"kind": "gh-run", "run": run_id if isinstance(run_id, int) else None,
                     "url": _str(data.get("url"))})
    return Collected(source=source, evidence={"workflow": items}, facts=facts)


def _load(path: Path, flag: str, command: str) -> Mapping[str, Any]:
    text = read_source(path, flag, f"{command} JSON")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"invalid JSON: {exc.msg} (line {exc.lineno})", file=str(path),
                         where=flag, fix=f"pass what `{command} --json FIELDS` prints") \
            from None
    if not isinstance(data, Mapping):
        raise UsageError("expected a JSON object", file=str(path), where=flag,
                         fix=f"pass what `{command} --json FIELDS` prints (one object)")
    return data


def collect_gh_pr(path: Path, base: Path) -> Collected:
    """``--gh-pr FILE`` (relative to ``base``)."""
    found = parse_gh_pr(_load(base / path, "--gh-pr", "gh pr view"))
    return Collected(source={**found.source, "file": str(path)}, evidence=found.evidence,
                     facts=found.facts, output=found.output)


def collect_gh_run(path: Path, base: Path) -> Collected:
    """``--gh-run FILE`` (relative to ``base``)."""
    found = parse_gh_run(_load(base / path, "--gh-run", "gh run view"))
    return Collected(source={**found.source, "file": str(path)}, evidence=found.evidence,
                     facts=found.facts)
