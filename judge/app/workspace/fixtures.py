"""Seeded fixture generator: synthetic suites reproducible from the suite id.

``generate_cases("checkout-agent", 5, rubric=rubric)`` always gives the same cases, byte
for byte, on every machine: every choice is drawn from the one seeded source
(:mod:`judge.core.stats.seeded`), seeded by ``f"{suite_id}:{seed}"``. No clock, no environment, no
``random``: this module is pure, like the scoring core.

The cases look like real work items. For the task-evaluation profile, an agent worked a
software task (bug fix, feature, refactor, docs, dependency bump, flaky test, migration,
performance fix) and left commits, CI steps, reviews, logs and audit events whose tone
matches the case's target band (a failing case has a red CI and changes requested). For a
research profile (``question``/``sources``/``toolCalls``/``claims``) the agent answered a
question. Any other group a rubric declares gets plain generic items. Deterministic signals
are drawn per category inside the case's target band, and the bands are dealt out in turn,
so a suite of ``n`` cases covers ``min(n, bands)`` bands.

:func:`suite_to_yaml` writes a suite as YAML text that :func:`judge.core.formats.suite.parse_suite`
reads back to an equal :class:`~judge.core.formats.suite.Suite`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict, TypeVar

import yaml

from ...core.formats.rubric import Band, Rubric
from ...core.formats.suite import Case, Suite
from ...core.stats.seeded import SplitMix64, seed_of

__all__ = ["DEFAULT_COUNT", "MAX_COUNT", "generate_cases", "suite_to_yaml"]

DEFAULT_COUNT = 5
"""Fixtures per suite when no count is given (the generator's default)."""
MAX_COUNT = 10_000
"""Most cases one call generates."""

T = TypeVar("T")
Complexity = Literal["simple", "medium", "complex"]


class _Prng:
    """The fixture generator's draws: the one seeded source, seeded by suite id and seed."""

    def __init__(self, suite_id: str, seed: int | None) -> None:
        self._rng = SplitMix64(seed_of(f"{suite_id}:{seed}"))

    def below(self, n: int) -> int:
        """An integer in ``0..n-1``."""
        return self._rng.below(n)

    def between(self, low: int, high: int) -> int:
        """An integer in ``low..high``, both included."""
        return low + self.below(high - low + 1)

    def choice(self, items: Sequence[T]) -> T:
        """One element of ``items``."""
        return self._rng.choice(items)

    def chance(self, percent: int) -> bool:
        """True ``percent`` times in a hundred."""
        return self.below(100) < percent

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A permutation of ``items``."""
        return self._rng.shuffled(items)

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """``k`` distinct elements of ``items`` in drawn order."""
        return self._rng.sample(items, k)

    def hex(self, length: int) -> str:
        """``length`` hex digits (at most 64)."""
        return "".join(f"{self._rng.next64():016x}" for _ in range(4))[:length]


# --- vocabulary -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Kind:
    name: str
    tags: tuple[str, ...]
    commit_type: str
    complexity: tuple[Complexity, ...]
    tasks: tuple[tuple[str, str, str], ...]
    """(id slug, title, task text); ``{c}`` is the component."""
    changes: tuple[str, ...]
    """Commit subject phrases."""
    did: str
    """What the agent reports it did."""


_KINDS = (
    _Kind("bugfix", ("bugfix",), "fix", ("simple", "medium"), (
        ("fix-{c}-null-total", "{c}: crash when an order total is null",
         "The {c} service raises a TypeError when an order total is null (gift-card-only "
         "carts). Fix the crash and add a regression test."),
        ("fix-{c}-timezone", "{c}: dates one day early east of UTC+10",
         "Dates in the {c} views show the previous day for merchants east of UTC+10. Use "
         "the merchant's timezone for day boundaries."),
        ("fix-{c}-double-submit", "{c}: double submit creates duplicates",
         "Submitting the {c} form twice quickly creates duplicate records. Make the endpoint "
         "idempotent."),
    ), ("handle a null total", "use the merchant timezone for day boundaries",
        "idempotency key on create", "regression test for the reported case"),
        "fixed the root cause in {file}"),
    _Kind("feature", ("feature",), "feat", ("medium", "complex"), (
        ("add-{c}-csv-export", "{c}: CSV export",
         "Users need to export {c} data as CSV with the current filters applied. Large "
         "exports must stream rather than time out."),
        ("add-{c}-webhooks", "{c}: emit webhooks on state changes",
         "Emit a webhook when a {c} record changes state, with retries and a delivery log."),
    ), ("streaming export endpoint", "webhook dispatcher with backoff", "admin toggle",
        "delivery log table"),
        "implemented the feature behind a flag in {file}"),
    _Kind("refactor", ("refactor",), "refactor", ("medium", "complex"), (
        ("refactor-{c}-extract-module", "Extract {c} behind an interface",
         "Move the {c} code out of the monolith behind a small interface, with no change in "
         "behaviour."),
        ("refactor-{c}-typed-config", "{c}: typed configuration",
         "Replace the {c} settings dictionary with a typed configuration object validated at "
         "start-up."),
    ), ("introduce the interface", "move call sites", "remove the old shim",
        "typed settings model"),
        "moved the code behind the new interface in {file}"),
    _Kind("docs", ("docs",), "docs", ("simple",), (
        ("docs-{c}-api-guide", "Update the {c} API guide",
         "The {c} API guide still describes v1. Update it for v2 and make the examples run."),
    ), ("rewrite the guide for v2", "runnable examples"),
        "rewrote the guide and ran every example"),
    _Kind("dependency", ("dependency",), "deps", ("simple", "medium", "complex"), (
        ("bump-{c}-sqlalchemy-2", "{c}: upgrade to SQLAlchemy 2.0",
         "Upgrade the {c} service from SQLAlchemy 1.4 to 2.0 and fix the deprecations."),
        ("bump-{c}-node-20", "{c}: move to Node 20",
         "Node 16 is end of life. Move the {c} build and runtime to Node 20."),
    ), ("bump the pinned version", "fix deprecation warnings", "update the lock file"),
        "bumped the dependency and fixed what broke in {file}"),
    _Kind("flaky-test", ("flaky-test", "testing"), "test", ("medium",), (
        ("fix-{c}-flaky-sync-test", "Flaky {c} sync test",
         "test_{c}_sync fails about one run in twenty on CI. Find the cause and make it "
         "reliable without adding retries."),
    ), ("wait on the request instead of sleeping", "isolate the shared fixture"),
        "removed the race in {file}"),
    _Kind("migration", ("migration", "database"), "db", ("medium", "complex"), (
        ("migrate-{c}-settings-table", "Normalise {c} settings",
         "Move {c} preferences from a JSON column into their own table with a reversible, "
         "batched migration."),
    ), ("create the table", "batched backfill", "switch reads to the new table"),
        "wrote a batched, reversible migration in {file}"),
    _Kind("performance", ("performance",), "perf", ("medium",), (
        ("perf-{c}-n-plus-one", "{c}: N+1 queries on the list endpoint",
         "The {c} list endpoint issues one query per row. Remove the N+1 queries and add a "
         "query-count test."),
    ), ("prefetch related rows", "query-count test"),
        "prefetched the related rows in {file}"),
)

_COMPONENTS = ("checkout", "billing", "search", "notifications", "orders", "inventory",
               "reports", "auth", "shipping", "catalog")
_FILES = ("views.py", "service.py", "models.py", "api.py", "tasks.py", "queries.py")
_AUTHORS = ("executor-agent", "executor-agent", "planner-agent")
_REVIEWERS = ("maria.kowalski", "dev.lee", "anna.berg", "sre.olu", "fe.tomas", "dba.ines")
_GAPS = ("the error path has no test", "the docs page was not updated",
         "one edge case from the ticket is still open", "the follow-up cleanup was skipped")
_PRIORITIES = ("low", "medium", "high", "critical")

# Tier 0 (failing) .. 4 (excellent): how the evidence reads.
_REPORTS = (
    "Marked as done: {did}. Everything looked fine locally.",
    "Partly done: {did}, but {gap}. Review asked for changes that are still open.",
    "{Did}. Tests cover the main path only; {gap}. PR #{pr} approved.",
    "{Did}. Added {tests} tests; CI passed after one retry and PR #{pr} was approved and "
    "merged.",
    "{Did}. Added {tests} tests, updated the docs, and every check passed; PR #{pr} was "
    "approved and merged.",
)
_LOGS_GOOD = (
    "Reproduced the problem locally before changing anything.",
    "Ran the affected test modules: {tests} passed, 0 failed.",
    "Checked call sites with grep: {n} found, all updated.",
    "Read the contributing guide: tests and docs are required for this change.",
)
_LOGS_BAD = (
    ("warn", "Skipping tests for this change to meet the deadline."),
    ("error", "ImportError: cannot import name 'Client' from '{c}.service'"),
    ("warn", "Required check failing; merging with an override as it looks unrelated."),
    ("error", "AssertionError: expected 3 rows, got 4"),
)

_MESSAGES = (
    "Why: {change}, as the ticket asks. Touches {file} only.",
    "{change}: {n} call sites updated; behaviour unchanged elsewhere.",
    "Part of the task: {change}. Tests updated in the same commit.",
)

@dataclass(frozen=True)
class _Topic:
    slug: str
    question: str
    source: str
    url: str
    fact: str
    """The main answer, true."""
    aspect: str
    """The second thing the question asks about, true."""
    wrong: str
    """A plausible but false version of the main answer."""


_TOPICS = (
    _Topic("gil-removal", "What is the status of removing the GIL from CPython?", "PEP 703",
           "https://peps.python.org/pep-0703/",
           "PEP 703 was accepted and makes the GIL optional",
           "CPython 3.13 ships an experimental free-threaded build, off by default",
           "CPython 3.12 removed the GIL for every build"),
    _Topic("http3-adoption", "How widely is HTTP/3 deployed, and which browsers enable it?",
           "Web Almanac: HTTP", "https://almanac.httparchive.org/en/2024/http",
           "About a third of sites advertise HTTP/3, mostly through CDNs",
           "Chrome, Edge, Firefox and Safari enable it by default",
           "90% of websites serve HTTP/3"),
    _Topic("sqlite-limits", "What is the largest database SQLite supports?",
           "Limits In SQLite", "https://www.sqlite.org/limits.html",
           "The maximum database size is about 281 TB",
           "it is the maximum page count times the 65536-byte maximum page size",
           "SQLite databases are limited to 2 GB"),
    _Topic("wasm-gc", "Which browsers ship WebAssembly garbage collection?",
           "WebAssembly feature status", "https://webassembly.org/features/",
           "WasmGC is on by default in Chrome 119 and Firefox 120",
           "Safari shipped it in 18.2",
           "WasmGC is still behind a flag in every browser"),
    _Topic("battery-rules",
           "What lithium recovery targets does the EU Batteries Regulation set?",
           "Regulation (EU) 2023/1542", "https://eur-lex.europa.eu/eli/reg/2023/1542/oj",
           "Recyclers must recover 50% of lithium by the end of 2027",
           "the target rises to 80% by the end of 2031",
           "Recyclers must recover 100% of lithium by 2027"),
)


def _answer(topic: _Topic, tier: int) -> str:
    """The research agent's answer for a quality tier (0 fabricated .. 4 complete)."""
    return (
        f"{topic.wrong} [1].",
        f"{topic.fact}.",
        f"{topic.fact} [2]; {topic.aspect}.",
        f"{topic.fact} [1]; {topic.aspect} (date approximate).",
        f"{topic.fact} [1]; {topic.aspect} [1].",
    )[tier]


_RESEARCH_GROUPS = frozenset({"question", "sources", "toolCalls", "claims"})


# --- building blocks ------------------------------------------------------------------------

def _stamp(day: int, minutes: int) -> str:
    """An ISO 8601 UTC time in March 2025, ``minutes`` after midnight of ``day``."""
    day += minutes // 1440
    minutes %= 1440
    return f"2025-03-{min(day, 31):02d}T{minutes // 60:02d}:{minutes % 60:02d}:00Z"


def _signal(rng: _Prng, band: Band) -> int:
    margin = min(2, (band.max - band.min) // 4)
    return rng.between(band.min + margin, band.max - margin)


def _signals(rng: _Prng, rubric: Rubric, bands: Sequence[Band], index: int) -> dict[str, int]:
    """One signal per category inside band ``index``; one category may drift a band."""
    drift = rng.chance(30)
    drifting = rng.below(len(rubric.categories))
    step = rng.choice((-1, 1))
    out: dict[str, int] = {}
    for i, cat in enumerate(rubric.categories):
        at = index + step if drift and i == drifting else index
        out[cat.id] = _signal(rng, bands[max(0, min(len(bands) - 1, at))])
    return out


@dataclass(frozen=True)
class _Ctx:
    """What every group builder of one case needs."""

    case_id: str
    tier: int
    """0 failing .. 4 excellent."""
    complexity: Complexity
    component: str
    kind: _Kind | None
    title: str
    day: int
    pr: int
    files: tuple[str, ...]


# The evidence items each group builder writes, as a suite file holds them (wire names).


class _TaskMetadata(TypedDict):
    id: str
    title: str
    priority: str
    labels: list[str]
    assignee: str
    createdAt: str


class _Commit(TypedDict):
    sha: str
    subject: str
    author: str
    additions: int
    deletions: int
    files: list[str]
    message: str


class _Step(TypedDict):
    id: str
    name: str
    status: str
    durationMs: int
    retries: int


class _Review(TypedDict):
    pr: int
    state: str
    reviewer: str
    body: str
    merged: bool
    mergedAt: NotRequired[str]


class _Document(TypedDict):
    key: str
    revision: int
    title: str
    excerpt: str


class _Activity(TypedDict):
    event: str
    at: str
    actor: str
    text: str


class _LogLine(TypedDict):
    step: str
    level: str
    text: str


class _AuditEvent(TypedDict):
    id: str
    domain: str
    mutation: str
    at: str
    outcome: str


class _Text(TypedDict):
    id: str
    text: str
    title: NotRequired[str]


class _Source(TypedDict):
    id: str
    title: str
    url: str
    kind: str
    excerpt: str


class _ToolCall(TypedDict):
    id: str
    name: str
    args: str
    status: str
    durationMs: int


class _Claim(TypedDict):
    id: str
    text: str
    cites: list[str]
    verified: bool
    note: NotRequired[str]


_Item = (_Commit | _Step | _Review | _Document | _Activity | _LogLine | _AuditEvent | _Text
         | _Source | _ToolCall | _Claim)


def _task_metadata(rng: _Prng, ctx: _Ctx) -> _TaskMetadata:
    labels = [*(ctx.kind.tags if ctx.kind else ("research",)), ctx.component]
    return {"id": f"TASK-{rng.between(1000, 9999)}", "title": ctx.title,
            "priority": rng.choice(_PRIORITIES), "labels": labels,
            "assignee": rng.choice(_AUTHORS), "createdAt": _stamp(ctx.day, rng.between(420, 660))}


def _commits(rng: _Prng, ctx: _Ctx) -> list[_Commit]:
    kind = ctx.kind or _KINDS[0]
    count = {"simple": (1, 2), "medium": (2, 4), "complex": (4, 9)}[ctx.complexity]
    changes = rng.shuffled(kind.changes)
    out: list[_Commit] = []
    for n in range(rng.between(*count)):
        change = changes[n % len(changes)]
        # Complex work revisits its steps: the second pass reads as a follow-up commit.
        prefix = "" if n < len(changes) else "follow-up: "
        subject = f"{kind.commit_type}({ctx.component}): {prefix}{change}"
        files = rng.sample(ctx.files, rng.between(1, min(3, len(ctx.files))))
        message = rng.choice(_MESSAGES).format(change=change, file=files[0],
                                               n=rng.between(2, 30))
        message = message[0].upper() + message[1:]
        out.append({"sha": rng.hex(40), "subject": subject, "author": rng.choice(_AUTHORS),
                    "additions": rng.between(3, 400), "deletions": rng.between(0, 200),
                    "files": files, "message": message})
    if ctx.tier == 0 and rng.chance(60):
        first = out[0]
        out.append({"sha": rng.hex(40), "subject": f"Revert \"{first['subject']}\"",
                    "author": "oncall.bot", "additions": first["deletions"],
                    "deletions": first["additions"], "files": first["files"],
                    "message": "Reverting: the change broke the staging deploy."})
    return out


def _workflow(rng: _Prng, ctx: _Ctx) -> list[_Step]:
    steps = [("lint", "Lint"), ("unit", "Unit tests"), ("e2e", "E2E tests")]
    if ctx.complexity == "complex":
        steps.append(("contract", "Contract tests"))
    failing = rng.below(len(steps)) if ctx.tier <= 1 else -1
    out: list[_Step] = []
    for i, (step_id, name) in enumerate(steps):
        status = "failed" if i == failing else "passed"
        if ctx.tier == 1 and i == failing and rng.chance(50):
            status = "skipped"
        retries = rng.between(0, 2) if ctx.tier <= 2 else rng.between(0, 1) if ctx.tier == 3 else 0
        out.append({"id": step_id, "name": name, "status": status,
                    "durationMs": rng.between(8_000, 900_000), "retries": retries})
    return out


def _reviews(rng: _Prng, ctx: _Ctx) -> list[_Review]:
    reviewer = rng.choice(_REVIEWERS)
    merged_at = _stamp(ctx.day + 1, rng.between(540, 1020))
    if ctx.tier <= 1:
        merged = ctx.tier == 0 and rng.chance(50)  # a failing case may have been forced in
        item: _Review = {
            "pr": ctx.pr, "state": "changes_requested", "reviewer": reviewer,
            "body": f"Please address this before merging: {rng.choice(_GAPS)}.",
            "merged": merged}
        if merged:
            item["mergedAt"] = merged_at
        return [item]
    out: list[_Review] = []
    if ctx.tier == 2 or (ctx.tier == 3 and rng.chance(40)):
        out.append({"pr": ctx.pr, "state": "changes_requested", "reviewer": reviewer,
                    "body": f"One thing: {rng.choice(_GAPS)}.", "merged": False})
    out.append({"pr": ctx.pr, "state": "approved", "reviewer": reviewer,
                "body": "Looks good." if ctx.tier == 4 else "Approving; please file a follow-up.",
                "merged": True, "mergedAt": merged_at})
    return out


def _documents(rng: _Prng, ctx: _Ctx) -> list[_Document]:
    return [{"key": f"docs/{ctx.component}/guide.md", "revision": rng.between(1, 40),
             "title": f"{ctx.component.capitalize()} guide",
             "excerpt": f"How the {ctx.component} service behaves and how to change it safely."}]


def _task_activity(rng: _Prng, ctx: _Ctx) -> list[_Activity]:
    out: list[_Activity] = [{"event": "status_changed",
                             "at": _stamp(ctx.day, rng.between(600, 700)),
                             "actor": "executor-agent", "text": "todo → in_progress"}]
    if ctx.tier == 0:
        out.append({"event": "status_changed", "at": _stamp(ctx.day + 2, rng.between(500, 900)),
                    "actor": rng.choice(_REVIEWERS), "text": "done → reopened"})
    else:
        out.append({"event": "comment", "at": _stamp(ctx.day, rng.between(900, 1100)),
                    "actor": "executor-agent", "text": f"PR #{ctx.pr} ready for review."})
    return out


def _agent_logs(rng: _Prng, ctx: _Ctx) -> list[_LogLine]:
    count = {"simple": (1, 3), "medium": (2, 5), "complex": (4, 10)}[ctx.complexity]
    out: list[_LogLine] = []
    for _ in range(rng.between(*count)):
        if rng.below(5) > ctx.tier:  # never for excellent work
            level, text = rng.choice(_LOGS_BAD)
        else:
            level, text = "info", rng.choice(_LOGS_GOOD)
        text = text.format(c=ctx.component, tests=rng.between(4, 300), n=rng.between(2, 30))
        out.append({"step": rng.choice(("explore", "implement", "verify")), "level": level,
                    "text": text})
    return out


def _run_audit(rng: _Prng, ctx: _Ctx) -> list[_AuditEvent]:
    events = [("git", "push", "ok"), ("github", "pr.create", "ok")]
    if ctx.tier == 0:
        events.append(("deploy", "rollout.staging", "failed"))
    return [{"id": f"evt_{rng.hex(8)}", "domain": domain, "mutation": mutation,
             "at": _stamp(ctx.day, rng.between(700, 1300)), "outcome": outcome}
            for domain, mutation, outcome in events]


_Builder = Callable[[_Prng, _Ctx], Sequence[_Item] | _TaskMetadata]


def _topic(ctx: _Ctx) -> _Topic:
    return next(t for t in _TOPICS if t.slug == ctx.component)


def _question(rng: _Prng, ctx: _Ctx) -> list[_Text]:
    return [{"id": "q", "text": ctx.title}]


def _sources(rng: _Prng, ctx: _Ctx) -> list[_Source]:
    topic = _topic(ctx)
    out: list[_Source] = [{"id": "s1", "title": topic.source, "url": topic.url, "kind": "primary",
            "excerpt": f"{topic.fact}; {topic.aspect}."}]
    if ctx.tier <= 2:
        out.append({"id": "s2", "title": f"Blog post: {topic.source} explained",
                    "url": f"https://blog.example.test/{topic.slug}", "kind": "secondary",
                    "excerpt": f"{topic.fact}, as far as we know (no link to the original)."})
    return out


def _tool_calls(rng: _Prng, ctx: _Ctx) -> list[_ToolCall]:
    topic = _topic(ctx)
    calls = [("web_search", topic.question), ("fetch", topic.url)]
    calls += [("web_search", topic.question)] * (4 - ctx.tier)  # weaker agents repeat searches
    return [{"id": f"t{i}", "name": name, "args": args,
             "status": "ok" if i > 1 or ctx.tier else "error",
             "durationMs": rng.between(100, 3000)} for i, (name, args) in enumerate(calls, 1)]


def _claims(rng: _Prng, ctx: _Ctx) -> list[_Claim]:
    topic = _topic(ctx)

    def claim(n: int, text: str, cites: list[str], verified: bool = True) -> _Claim:
        return {"id": f"c{n}", "text": text, "cites": cites, "verified": verified}

    first, second = claim(1, topic.fact, ["s1"]), claim(2, topic.aspect, ["s1"])
    if ctx.tier == 0:
        return [claim(1, topic.wrong, ["s1"], verified=False)]
    if ctx.tier == 1:
        return [claim(1, topic.fact, [])]
    if ctx.tier == 2:
        return [claim(1, topic.fact, ["s2"]), claim(2, topic.aspect, [])]
    if ctx.tier == 3:
        return [first, {**claim(2, topic.aspect, []), "note": "date approximate"}]
    return [first, second]


def _generic(group: str) -> _Builder:
    def build(rng: _Prng, ctx: _Ctx) -> list[_Text]:
        return [{"id": f"{group}-{i}", "title": f"{group} {i}",
                 "text": f"Synthetic {group} item {i} for case {ctx.case_id}."}
                for i in range(1, rng.between(1, 3) + 1)]
    return build


_BUILDERS: dict[str, _Builder] = {
    "taskMetadata": _task_metadata, "commits": _commits, "workflow": _workflow,
    "reviews": _reviews, "documents": _documents, "taskActivity": _task_activity,
    "agentLogs": _agent_logs, "runAudit": _run_audit, "question": _question,
    "sources": _sources, "toolCalls": _tool_calls, "claims": _claims,
}
# Groups every case has; the rest appear in about two cases out of three.
_ALWAYS = frozenset({"taskMetadata", "commits", "workflow", "question", "sources", "claims"})


def _case(rng: _Prng, rubric: Rubric, bands: Sequence[Band], band_index: int,
          number: int) -> Case:
    groups = rubric.evidence.names()
    research = bool(_RESEARCH_GROUPS & set(groups))
    # The band's place on a 0..4 scale, half up, whatever number of bands the rubric has.
    last = len(bands) - 1
    tier = (band_index * 8 + last) // (2 * last) if last else 2
    kind: _Kind | None
    if research:
        kind = None
        topic = rng.choice(_TOPICS)
        component, case_slug = topic.slug, f"research-{topic.slug}"
        title = task = topic.question
        complexity: Complexity = rng.choice(("simple", "medium", "complex"))
        output = _answer(topic, tier)
        tags = ["research", topic.slug]
    else:
        kind = rng.choice(_KINDS)
        component = rng.choice(_COMPONENTS)
        case_slug, title, task = (s.format(c=component) for s in rng.choice(kind.tasks))
        title = title[0].upper() + title[1:]
        complexity = rng.choice(kind.complexity)
        tags = [*kind.tags, component]
        if complexity == "complex" or kind.name in {"migration", "dependency"}:
            tags.append("regression-risk")
        output = ""
    case_id = f"{case_slug}-{number:02d}"
    files = tuple(f"services/{component}/{name}" for name in rng.sample(_FILES, 4))
    ctx = _Ctx(case_id=case_id, tier=tier, complexity=complexity, component=component,
               kind=kind, title=title, day=rng.between(1, 24), pr=rng.between(100, 2999),
               files=files)
    if kind is not None:
        did = kind.did.format(file=rng.choice(files))
        output = _REPORTS[tier].format(did=did, Did=did[0].upper() + did[1:],
                                       gap=rng.choice(_GAPS), pr=ctx.pr,
                                       tests=rng.between(2, 12))
    evidence: dict[str, Any] = {}
    for group in groups:
        if group in _ALWAYS or rng.chance(65):
            builder = _BUILDERS.get(group) or _generic(group)
            evidence[group] = builder(rng, ctx)
    return Case(id=case_id, input=task, output=output, evidence=evidence,
                deterministic=_signals(rng, rubric, bands, band_index), tags=tuple(tags),
                complexity=complexity,
                metadata={"generated": True, "targetBand": bands[band_index].name})


def generate_cases(suite_id: str, count: int = DEFAULT_COUNT, *, rubric: Rubric,
                   seed: int | None = None) -> Suite:
    """A synthetic suite for ``rubric``, the same for the same ``suite_id``, ``count`` and ``seed``.

    Bands are dealt out in a shuffled order, so consecutive cases land in different bands
    and ``count >= len(rubric.bands)`` covers every band. Raises ValueError for a count
    outside ``1..MAX_COUNT`` or an id a suite cannot have.
    """
    if not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be 1..{MAX_COUNT}, got {count}")
    rng = _Prng(suite_id, seed)
    bands = sorted(rubric.bands, key=lambda b: b.min)
    order = rng.shuffled(range(len(bands)))
    cases = tuple(_case(rng, rubric, bands, order[i % len(order)], i + 1) for i in range(count))
    described = "" if seed is None else f" and seed {seed}"
    return Suite(id=suite_id, rubric=rubric.id, cases=cases,
                 description=f"Synthetic cases generated from suite id {suite_id!r}{described} "
                             f"for rubric {rubric.id!r}.")


def _plain(value: Any) -> Any:
    """Tuples to lists, recursively: what ``yaml.safe_dump`` can write."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def suite_to_yaml(suite: Suite) -> str:
    """The suite as YAML text (defaults left out) that ``parse_suite`` reads back equal."""
    data = _plain(suite.model_dump(mode="python", exclude_defaults=True))
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
