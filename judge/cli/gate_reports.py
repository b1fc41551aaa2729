"""The gate's verdict for people and for CI: terminal lines, a JUnit XML report, a Markdown summary.

Every door that prints a verdict (``judge run``, ``judge check``, ``judge runs batch collect``)
prints it here, so a verdict reads the same wherever it comes from. The JUnit report has a
test case per suite case (a regressed or newly unscored case is a failure) and one for the
suite's verdict, ``@baseline``: a regression of the mean is its failure, *not compared* its
error (the cases are then skipped: nothing checked them), and a first baseline or nothing
due is skipped, never a pass. The Markdown summary suits ``$GITHUB_STEP_SUMMARY`` or a pull
request comment; text from the suite is escaped there (no link, image or HTML gets through).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final
from xml.etree import ElementTree

from rich.text import Text

from ..app.runs.gate import GateVerdict
from ..core.formats.models import CaseResult
from ..core.outcomes.baseline import BaselineComparison
from ..core.stats.judge_quality import WEAK, MeasuredAgreement
from ..core.text.errors import UsageError
from ..system.atomic_files import write_atomic
from .output import console, plural, styled

__all__ = ["GATE_CASE", "GATE_DETAIL", "REASONS_SHOWN", "junit_xml", "markdown_summary",
           "print_quality", "print_verdict", "print_verdict_body", "print_verdict_head",
           "write_gate_reports"]

GATE_CASE: Final = "@baseline"
"""The JUnit test case of the suite's own verdict (the pytest plugin's item has the same id)."""
GATE_DETAIL: Final = ("every blocking reason, the noise behind the verdict, the improved and "
                      "new cases")
"""What ``--detail`` adds to a verdict."""
REASONS_SHOWN: Final = 10
"""Blocking reasons printed without ``--detail`` (one per regressed case); the rest counted."""
SHOWN_UNLISTED: Final = 12
"""Cases named on the line of drops not judged alone; the rest are counted."""
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
"""What can start markup inside a line: emphasis, code, links and images (their ``[``),
HTML, table cells, strikethrough. Our own lines begin with our own ``-``, ``>`` or ``#``."""


def _head(v: GateVerdict) -> Text:
    if v.outcome == "not-compared":
        return styled(f"✗ {v.skipped or 'not compared'} (exit 5)", "red")
    if v.outcome in ("skipped", "baseline-recorded"):
        return styled(v.headline(), "yellow" if v.outcome == "skipped" else "cyan")
    c = v.comparison
    assert c is not None
    word = styled("⚠ regression", "red") if c.has_regression else styled("✓ no regression",
                                                                         "green")
    return Text.assemble(word, f"  run {v.run} vs baseline ", (c.baseline_id, "bold"),
                         f" (threshold {c.threshold * 100:g} points)")


def print_quality(quality: MeasuredAgreement) -> None:
    """The judge's measured agreement with people, in yellow when its scores do not track it."""
    low = quality.rho is None or quality.rho < WEAK
    console().print(styled(f"{'⚠ ' if low else ''}judge quality: {quality.said()}",
                           "yellow" if low else "cyan"))


def print_verdict(v: GateVerdict, *, detail: bool = True) -> bool:
    """The verdict for a person: its head line first, then what was compared and found.

    Without ``detail`` the noise behind the verdict and the lists of improved, missing and new
    cases are left out, and the blocking reasons cut at :data:`REASONS_SHOWN`; True when
    something was left out (the caller names ``--detail``).
    """
    print_verdict_head(v)
    return print_verdict_body(v, detail=detail)


def print_verdict_head(v: GateVerdict) -> None:
    """The verdict in one line: regression or not, not compared (exit 5), or why nothing was."""
    console().print(_head(v))


def print_verdict_body(v: GateVerdict, *, detail: bool) -> bool:
    """What was compared, the means, the blocking reasons and notices (see print_verdict)."""
    out, c = console(), v.comparison
    if c is None:
        return False
    out.print(v.headline(), markup=False)
    out.print(f"previous {c.previous_score:.2f} → current {c.current_score:.2f} "
              f"(delta {c.score_delta:+.2f}) over {plural(c.compared_cases, 'case')} scored in "
              "both", markup=False)
    reasons = c.blocked_reasons if detail else c.blocked_reasons[:REASONS_SHOWN]
    if reasons:
        out.print("blocked:" if v.blocking else "would block (--no-block):")
    for reason in reasons:
        out.print(f"  • {reason}", markup=False)
    if len(reasons) < len(c.blocked_reasons):
        out.print(f"  … and {len(c.blocked_reasons) - len(reasons)} more", markup=False)
    for notice in v.notices:
        out.print(styled(notice, "cyan"))
    # Cases the baseline has and this run lacks went unchecked: said by default.
    lists = [("missing from this run", c.missing_cases)]
    if detail:
        _print_noise(c)
        lists = [("improved", c.improved_cases), *lists, ("new in this run", c.new_cases)]
    for label, ids in lists:
        if ids:
            out.print(f"{label}: {', '.join(ids)}", markup=False)
    return not detail and (len(reasons) < len(c.blocked_reasons) or _has_detail(c))


def _has_detail(c: BaselineComparison) -> bool:
    """Whether ``--detail`` would add noise sentences or case lists."""
    return bool(c.noise_reasons or c.noise or c.improved_cases or c.new_cases
                or (c.test is not None and c.test.within_noise))


def _print_noise(c: BaselineComparison) -> None:
    out = console()
    if c.test is not None and c.test.rule == "paired":
        if c.test.within_noise:
            out.print("dropped beyond the threshold, not judged alone (no noise model): "
                      + _unlisted(c), markup=False)
        return
    for sentence in c.noise_reasons:
        out.print(f"  ~ {sentence}", markup=False)
    if c.noise and not c.noise_reasons:
        out.print(f"noise, within the recorded spread: {', '.join(c.noise)}", markup=False)


def _unlisted(c: BaselineComparison) -> str:
    ids = c.test.within_noise if c.test is not None else ()
    shown = ", ".join(ids[:SHOWN_UNLISTED])
    return shown + (f" and {len(ids) - SHOWN_UNLISTED} more" if len(ids) > SHOWN_UNLISTED
                    else "")


# -- JUnit XML --------------------------------------------------------------------------------

def _xml(text: str) -> str:
    """``text`` with the characters XML 1.0 cannot hold replaced."""
    return _NOT_XML.sub("\ufffd", text)


def _case_reasons(c: BaselineComparison) -> dict[str, str]:
    """Each listed or newly unscored case's sentence, by case id."""
    listed = set(c.regressed_cases) | set(c.newly_unscored)
    return {cid: reason for reason in c.blocked_reasons
            if (cid := reason.split(":", 1)[0]) in listed}


def _gate_case(v: GateVerdict, suite: ElementTree.Element) -> None:
    case = ElementTree.SubElement(suite, "testcase", classname=_xml(v.suite), name=GATE_CASE)
    c = v.comparison
    if v.outcome == "not-compared":
        ElementTree.SubElement(case, "error", message=_xml(v.skipped or "not compared"),
                               type="not-compared").text = _xml(v.skipped or "")
    elif c is None:
        ElementTree.SubElement(case, "skipped", message=_xml(v.headline()))
    elif c.has_regression:
        ElementTree.SubElement(case, "failure", message=_xml(c.blocked_reasons[0]),
                               type="regression").text = _xml("\n".join(c.blocked_reasons))
    ElementTree.SubElement(case, "system-out").text = _xml(
        "\n".join((v.headline(), *v.notices)))


def _result_case(v: GateVerdict, result: CaseResult, reasons: dict[str, str],
                 suite: ElementTree.Element) -> None:
    case = ElementTree.SubElement(suite, "testcase", classname=_xml(v.suite),
                                  name=_xml(result.id))
    c = v.comparison
    if c is None:
        ElementTree.SubElement(case, "skipped", message=_xml(
            f"not compared: {v.not_compared or v.outcome}"))
    elif result.id in reasons:
        ElementTree.SubElement(case, "failure", message=_xml(reasons[result.id]),
                               type="regression")
    elif result.id in c.new_cases:
        ElementTree.SubElement(case, "skipped", message="new: not in the baseline")
    elif result.status != "scored":
        ElementTree.SubElement(case, "skipped", message=_xml(
            f"{result.status}: not scored in the baseline either"))
    score = "—" if result.overall_score is None else str(result.overall_score)
    ElementTree.SubElement(case, "system-out").text = _xml(
        f"{result.status}, overall {score} ({result.band or '—'})")


def junit_xml(v: GateVerdict, results: Sequence[CaseResult]) -> str:
    """The verdict as a JUnit XML report: a test case per suite case, and ``@baseline``."""
    root = ElementTree.Element("testsuites", name="judgeflow gate")
    suite = ElementTree.SubElement(root, "testsuite", name=_xml(v.suite))
    props = ElementTree.SubElement(suite, "properties")
    for name, value in (("judge.run", v.run), ("judge.outcome", v.outcome),
                        ("judge.notCompared", v.not_compared or ""),
                        ("judge.baseline", v.baseline_path),
                        ("judge.comparedCases", str(v.compared_cases))):
        ElementTree.SubElement(props, "property", name=name, value=_xml(value))
    _gate_case(v, suite)
    reasons = _case_reasons(v.comparison) if v.comparison is not None else {}
    for result in sorted(results, key=lambda r: r.id):
        _result_case(v, result, reasons, suite)
    cases = list(suite.iter("testcase"))
    counts = {kind: sum(1 for case in cases if case.find(kind) is not None)
              for kind in ("failure", "error", "skipped")}
    for element in (root, suite):
        element.set("tests", str(len(cases)))
        element.set("failures", str(counts["failure"]))
        element.set("errors", str(counts["error"]))
        element.set("skipped", str(counts["skipped"]))
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# -- Markdown ---------------------------------------------------------------------------------

def _md(text: str) -> str:
    """Untrusted text as Markdown that renders as that text: one line, every sign escaped."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(_xml(text).split()))


def _title(v: GateVerdict) -> str:
    if v.outcome == "not-compared":
        return "⚠️ not compared (exit 5): nothing was checked"
    if v.outcome == "baseline-recorded":
        return "⚪ first baseline recorded, nothing compared"
    if v.outcome == "skipped":
        return "⚪ not compared (nothing was due)"
    return "❌ regression" if v.has_regression else "✅ no regression"


def markdown_summary(v: GateVerdict, quality: str | None = None) -> str:
    """The verdict as Markdown: title, what was compared, the means, the reasons, notices."""
    lines = [f"### judgeflow gate — {_md(v.suite)}: {_title(v)}", "",
             _md(v.headline()), ""]
    c = v.comparison
    if c is not None:
        lines += [f"Mean overall {c.previous_score:.2f} → {c.current_score:.2f} "
                  f"({c.score_delta:+.2f}) over {plural(c.compared_cases, 'case')}, threshold "
                  f"{c.threshold * 100:g} points.", ""]
        if c.test is not None:
            lines += [f"Test: {_md(c.test.test)}.", ""]
        lines += [f"- {_md(reason)}" for reason in c.blocked_reasons]
        if c.test is not None and c.test.rule == "paired" and c.test.within_noise:
            lines.append(f"- dropped beyond the threshold, not judged alone (no noise model): "
                         f"{_md(_unlisted(c))}")
    lines += [f"> {_md(notice)}" for notice in v.notices]
    if quality:
        lines += ["", f"Judge quality: {_md(quality)}"]
    lines.append(f"\nRun {_md(v.run)}; baseline file {_md(v.baseline_path)}.")
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def write_gate_reports(v: GateVerdict, results: Sequence[CaseResult], *,
                       junit: Path | None, markdown: Path | None,
                       quality: str | None = None) -> None:
    """Write the JUnit report and the Markdown summary where asked (each whole, or not at all)."""
    if junit is not None:
        _write(junit, junit_xml(v, results))
    if markdown is not None:
        _write(markdown, markdown_summary(v, quality))


def _write(path: Path, text: str) -> None:
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc}",
                         fix="name a file in a folder you can write") from None
