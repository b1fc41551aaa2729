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

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..core.formats.evidence import citable_id
from ..core.text.errors import UsageError
from .case import Collected
from .shape import Fields, ShapeError, load_json
from .sources import read_source

__all__ = ["FAILED", "collect_gh_pr", "collect_gh_run", "parse_gh_pr", "parse_gh_run",
           "pr_description"]

FAILED = frozenset({"FAILURE", "ERROR", "TIMED_OUT", "CANCELLED", "ACTION_REQUIRED",
                    "STARTUP_FAILURE"})
"""Check and job conclusions (upper-cased) that count as failed."""
PASSED = frozenset({"SUCCESS"})
VERDICTS = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})
"""Review states that set a reviewer's verdict (a plain COMMENTED review does not)."""


_V = TypeVar("_V")


def _clean(item: Mapping[str, _V | None]) -> dict[str, _V]:
    return {k: v for k, v in item.items() if v is not None}


def _conclusion(raw: Fields) -> str:
    # CheckRun: status + conclusion; StatusContext: state (SUCCESS, FAILURE, PENDING...).
    return (raw.text("conclusion") or raw.text("state") or "").upper()


def _check_items(checks: list[Fields]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    items = []
    counts = {"total": 0, "passed": 0, "failed": 0, "pending": 0}
    for n, raw in enumerate(checks, start=1):
        name = raw.text("name") or raw.text("context") or f"check {n}"
        workflow = raw.text("workflowName")
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
            "startedAt": raw.text("startedAt"), "completedAt": raw.text("completedAt"),
            "url": raw.text("detailsUrl") or raw.text("targetUrl")}))
    return items, counts


def _review_items(data: Fields, pr: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    items = []
    latest: dict[str, str] = {}
    reviews = data.objects("reviews")
    for n, raw in enumerate(reviews, start=1):
        state = (raw.text("state") or "").upper()
        reviewer = raw.login("author") or "unknown"
        if state in VERDICTS:
            latest[reviewer] = state  # gh lists reviews oldest first: the last one stands
        commit = raw.obj("commit")
        oid = commit.text("oid") if commit is not None else None
        items.append(_clean({
            "id": citable_id("reviews", f"review:{raw.ident('id') or n}"), "pr": pr,
            "state": state.lower() or None, "reviewer": reviewer,
            "at": raw.text("submittedAt"),
            "commit": oid[:12] if oid else None,
            "body": raw.text("body")}))
    comments = data.objects("comments")
    for n, raw in enumerate(comments, start=1):
        items.append(_clean({
            "id": citable_id("reviews", f"comment:{raw.ident('id') or n}"), "pr": pr,
            "state": "comment", "reviewer": raw.login("author") or "unknown",
            "at": raw.text("createdAt"), "body": raw.text("body")}))
    counts = {"total": len(reviews), "comments": len(comments),
              "approved": sum(s == "APPROVED" for s in latest.values()),
              "changes_requested": sum(s == "CHANGES_REQUESTED" for s in latest.values())}
    return items, counts


def parse_gh_pr(raw: Mapping[str, Any]) -> Collected:
    """A pull request's reviews, comments and checks (``gh pr view --json ...``).

    ShapeError names the path of a field of the wrong type (``reviews[2].author``).
    """
    data = Fields(raw)
    number = data.integer("number")
    pr = str(number) if number is not None else "pr"
    reviews, rcounts = _review_items(data, pr)
    checks, ccounts = _check_items(data.objects("statusCheckRollup"))
    facts: dict[str, Any] = {}
    if data.has("reviews"):
        facts.update({"reviews.total": rcounts["total"], "reviews.approved": rcounts["approved"],
                      "reviews.changes_requested": rcounts["changes_requested"]})
    if data.has("comments"):
        facts["reviews.comments"] = rcounts["comments"]
    if data.has("statusCheckRollup"):
        facts.update({f"checks.{k}": v for k, v in ccounts.items()})
    state = data.text("state")
    if state is not None:
        facts["pr.state"] = state.upper()
    merged_at = data.text("mergedAt")
    if state is not None or data.has("mergedAt"):
        facts["pr.merged"] = (state or "").upper() == "MERGED" or bool(merged_at)
    decision = data.text("reviewDecision")
    if decision is not None:
        facts["pr.review_decision"] = decision.upper()
    source = _clean({"kind": "gh-pr", "pr": number, "title": data.text("title"),
                     "url": data.text("url")})
    evidence = {k: v for k, v in (("reviews", reviews), ("workflow", checks)) if v}
    return Collected(source=source, evidence=evidence, facts=facts,
                     output=pr_description(data))


def pr_description(data: Fields) -> str | None:
    """The pull request's description (``body``) under its title, or None when empty.

    Its author's account of the change: the case's output under review when no task file or
    agent log gives one.
    """
    body = data.text("body")
    if body is None or not body.strip():
        return None
    title = data.text("title")
    return f"{title}\n\n{body.strip()}" if title else body.strip()


def _failed_steps(job: Fields) -> list[str]:
    return [str(s.text("name")) for s in job.objects("steps")
            if (s.text("conclusion") or "").upper() in FAILED]


def parse_gh_run(raw: Mapping[str, Any]) -> Collected:
    """A workflow run and its jobs (``gh run view --json ...``).

    ShapeError names the path of a field of the wrong type (``jobs[0].steps``).
    """
    data = Fields(raw)
    run_id = data.integer("databaseId")
    title = data.text("displayTitle") or data.text("name") or "workflow run"
    conclusion = (data.text("conclusion") or "").lower()
    status = (data.text("status") or "").lower()
    items: list[dict[str, Any]] = [_clean({
        "id": citable_id("workflow", f"run:{run_id if run_id is not None else title}"),
        "name": f"{data.text('workflowName') or data.text('name') or 'Run'}: {title}",
        "status": conclusion or status or None, "event": data.text("event"),
        "branch": data.text("headBranch"),
        "headSha": (data.text("headSha") or "")[:12] or None,
        "attempt": data.integer("attempt"),
        "createdAt": data.text("createdAt"), "updatedAt": data.text("updatedAt"),
        "url": data.text("url")})]
    jobs = data.objects("jobs")
    counts = {"passed": 0, "failed": 0}
    for n, job in enumerate(jobs, start=1):
        job_conclusion = (job.text("conclusion") or "").upper()
        if job_conclusion in PASSED:
            counts["passed"] += 1
        elif job_conclusion in FAILED:
            counts["failed"] += 1
        failed = _failed_steps(job)
        items.append(_clean({
            "id": citable_id("workflow", f"job:{job.ident('databaseId') or n}"),
            "name": job.text("name") or f"job {n}",
            "status": job_conclusion.lower() or (job.text("status") or "").lower() or None,
            "startedAt": job.text("startedAt"),
            "completedAt": job.text("completedAt"), "url": job.text("url"),
            "excerpt": f"failed steps: {', '.join(failed)}" if failed else None}))
    facts: dict[str, Any] = {}
    if conclusion:
        facts.update({"run.conclusion": conclusion, "run.success": conclusion == "success"})
    if data.has("jobs"):
        facts.update({"jobs.total": len(jobs), "jobs.passed": counts["passed"],
                      "jobs.failed": counts["failed"]})
    source = _clean({"kind": "gh-run", "run": run_id, "url": data.text("url")})
    return Collected(source=source, evidence={"workflow": items}, facts=facts)


_FIX = "pass what `{command} --json FIELDS` prints, unedited"


def _parsed(path: Path, flag: str, command: str,
            parse: Callable[[Mapping[str, Any]], Collected]) -> Collected:
    text = read_source(path, flag, f"{command} JSON")
    try:
        data = load_json(text)
        if not isinstance(data, Mapping):
            raise ShapeError("", "expected a JSON object (one pull request or run)")
        return parse(data)
    except ShapeError as exc:
        raise UsageError(str(exc), file=str(path), where=flag,
                         fix=_FIX.format(command=command)) from None


def collect_gh_pr(path: Path, base: Path) -> Collected:
    """``--gh-pr FILE`` (relative to ``base``)."""
    found = _parsed(base / path, "--gh-pr", "gh pr view", parse_gh_pr)
    return Collected(source={**found.source, "file": str(path)}, evidence=found.evidence,
                     facts=found.facts, output=found.output)


def collect_gh_run(path: Path, base: Path) -> Collected:
    """``--gh-run FILE`` (relative to ``base``)."""
    found = _parsed(base / path, "--gh-run", "gh run view", parse_gh_run)
    return Collected(source={**found.source, "file": str(path)}, evidence=found.evidence,
                     facts=found.facts)
