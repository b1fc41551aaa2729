"""The JUnit adapter: test reports (pytest, Maven Surefire, Jest...) read with junitparser.

Each report becomes one ``workflow`` item with its counts, and each failed or errored test
one more, its failure message and output as the excerpt, cited by ``test:CLASS::NAME``.
Passed tests are counted, not listed. The counts are the test cases' own results, not the
``tests=`` attributes a tool may get wrong. XML is parsed with the standard library's
parser (expat: no external entities, bounded entity expansion), never a network fetch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast
from xml.etree import ElementTree

from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestCase

from ..core.formats.evidence import citable_id
from ..core.text.errors import UsageError
from .case import Collected
from .sources import read_source

__all__ = ["MAX_XML_DEPTH", "collect_junit", "parse_junit"]

MAX_XML_DEPTH = 64
"""Element nesting a JUnit report may have (real reports: four to eight levels)."""


def _outcome(case: TestCase) -> str:
    results = case.result
    if any(isinstance(r, Error) for r in results):
        return "error"
    if any(isinstance(r, Failure) for r in results):
        return "failed"
    if any(isinstance(r, Skipped) for r in results):
        return "skipped"
    return "passed"


def _ms(seconds: float | None) -> int:
    return round((seconds or 0.0) * 1000)


def _failure_text(case: TestCase) -> str:
    parts = []
    for result in case.result:
        if isinstance(result, Failure | Error):
            message = (result.message or "").strip()
            body = (result.text or "").strip()
            parts.append(message if not body or body == message
                         else f"{message}\n{body}" if message else body)
    return "\n".join(p for p in parts if p)


def _bounded_root(text: str) -> ElementTree.Element:
    """The root element of ``text``, refused past MAX_XML_DEPTH before junitparser walks it.

    junitparser and ElementTree's helpers recurse per level: a report nested 1,000 deep was a
    RecursionError (exit 70). Real reports nest four levels (testsuites, testsuite, testcase,
    failure), a few more with nested suites.
    """
    parser: ElementTree.XMLPullParser[ElementTree.Element] = ElementTree.XMLPullParser(
        events=("start", "end"))
    parser.feed(text)
    parser.close()
    depth = 0
    root: ElementTree.Element | None = None
    events = cast(Iterator[tuple[str, ElementTree.Element]], parser.read_events())
    for event, element in events:
        if event == "start":
            root = element if root is None else root
            depth += 1
            if depth > MAX_XML_DEPTH:
                raise ValueError(f"elements nested deeper than {MAX_XML_DEPTH} levels")
        else:
            depth -= 1
    if root is None:
        raise ValueError("not JUnit XML: no root element")
    return root


def parse_junit(text: str, name: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The ``workflow`` items and counts of one report's XML text (``name``: its file name)."""
    try:
        # junitparser reads the standard library's elements as its own (its types say otherwise).
        xml = JUnitXml.fromroot(cast(Any, _bounded_root(text)))
    except (ElementTree.ParseError, JUnitXmlError) as exc:
        raise ValueError(f"not JUnit XML: {exc}") from None
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    failures: list[dict[str, Any]] = []
    duration = 0
    for suite in xml:
        for case in suite:
            outcome = _outcome(case)
            counts[outcome] += 1
            duration += _ms(case.time)
            if outcome in ("failed", "error"):
                test = f"{case.classname}::{case.name}" if case.classname else str(case.name)
                failures.append({"id": citable_id("workflow", f"test:{test}"), "name": test,
                                 "status": outcome, "durationMs": _ms(case.time),
                                 "report": name, "excerpt": _failure_text(case)})
    total = sum(counts.values())
    failing = counts["failed"] + counts["error"]
    summary = {"id": citable_id("workflow", f"junit:{name}"), "name": f"Tests ({name})",
               "status": "failed" if failing else "passed", "tests": total,
               "passed": counts["passed"], "failed": counts["failed"],
               "errors": counts["error"], "skipped": counts["skipped"], "durationMs": duration,
               "excerpt": f"{total} tests: {counts['passed']} passed, {counts['failed']} "
                          f"failed, {counts['error']} errors, {counts['skipped']} skipped"}
    return [summary, *failures], counts


def collect_junit(paths: Sequence[Path], base: Path) -> Collected:
    """Every report's items (in the order given, relative to ``base``), summed ``tests.*``."""
    items: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    totals = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for path in paths:
        text = read_source(base / path, "--junit", "JUnit report")
        try:
            found, counts = parse_junit(text, path.name)
        except ValueError as exc:
            raise UsageError(str(exc), file=str(base / path), where="--junit",
                             fix="pass the XML a test runner wrote (pytest --junitxml=FILE)") \
                from None
        items.append(found[0])
        failures.extend(found[1:])
        for key, n in counts.items():
            totals[key] += n
    total = sum(totals.values())
    facts = {"tests.total": total, "tests.run": total - totals["skipped"],
             "tests.passed": totals["passed"], "tests.failed": totals["failed"],
             "tests.errors": totals["error"], "tests.skipped": totals["skipped"],
             "tests.failing": totals["failed"] + totals["error"]}
    # Report summaries first, so the cap never hides a report behind its failures.
    return Collected(source={"kind": "junit", "files": [str(p) for p in paths]},
                     evidence={"workflow": items + failures}, facts=dict(facts))
