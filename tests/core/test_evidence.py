"""Evidence bundles: canonical group order, caps said aloud, bounded text, safe stable IDs."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.core.formats.evidence import (
    DEFAULT_PROFILE,
    TRUNCATION_MARKER,
    EvidenceInputError,
    EvidenceProfile,
    GroupSpec,
    build_bundle,
    structured_text,
    truncate,
)

ORDER = ("taskMetadata", "commits", "workflow", "reviews", "documents", "taskActivity",
         "agentLogs", "runAudit")
CAPS = {"taskMetadata": 25, "commits": 20, "workflow": 25, "reviews": 25, "documents": 25,
        "taskActivity": 25, "agentLogs": 25, "runAudit": 25}
PROPS = settings(max_examples=150, deadline=None)


def _sample(group: str, n: int = 2) -> list[dict[str, Any]]:
    return [{"title": f"{group} {i}", "text": f"{group} text {i}"} for i in range(n)]


def _item_json(item: Any) -> str:
    return json.dumps(item.model_dump(mode="json"), ensure_ascii=False)


# --- order -------------------------------------------------------------------------------

def test_default_profile_order_and_caps() -> None:
    assert DEFAULT_PROFILE.names() == ORDER
    assert {g.name: g.cap for g in DEFAULT_PROFILE.groups} == CAPS
    assert DEFAULT_PROFILE.excerpt_limit == 500
    assert DEFAULT_PROFILE.subject_limit == 160


@PROPS
@given(order=st.permutations(ORDER), present=st.sets(st.sampled_from(ORDER), min_size=1))
def test_shuffled_groups_come_out_in_canonical_order(order: list[str],
                                                     present: set[str]) -> None:
    evidence = {g: _sample(g) for g in order if g in present}
    assert list(evidence) == [g for g in order if g in present]
    bundle = build_bundle(evidence)
    # all eight groups, always in canonical order, empty ones included
    assert tuple(g.name for g in bundle.groups) == ORDER
    kept_groups = [item.group for item in bundle.items()]
    assert kept_groups == [g for g in ORDER if g in present for _ in range(2)]
    # and the IDs do not depend on the input order
    canonical = build_bundle({g: evidence[g] for g in ORDER if g in evidence})
    assert bundle.ids() == canonical.ids()
    assert bundle == canonical


def test_custom_profile_order() -> None:
    profile = EvidenceProfile(groups=(GroupSpec(name="question", cap=1),
                                      GroupSpec(name="sources", cap=3)))
    bundle = build_bundle({"sources": ["a", "b", "c", "d"], "question": ["q1", "q2"]}, profile)
    assert [g.name for g in bundle.groups] == ["question", "sources"]
    assert [(g.total, g.dropped) for g in bundle.groups] == [(2, 1), (4, 1)]


def test_unknown_group_is_named() -> None:
    with pytest.raises(EvidenceInputError, match="unknownGroup") as info:
        build_bundle({"commits": [], "unknownGroup": [{"text": "x"}]})
    assert info.value.where == "evidence.unknownGroup"
    assert "taskMetadata" in str(info.value)  # says which groups exist


def test_bad_group_and_item_shapes() -> None:
    with pytest.raises(EvidenceInputError) as info:
        build_bundle({"commits": 42})
    assert info.value.where == "evidence.commits"
    with pytest.raises(EvidenceInputError) as info:
        build_bundle({"reviews": [{"text": "ok"}, 7]})
    assert info.value.where == "evidence.reviews[1]"


# --- caps --------------------------------------------------------------------------------

def test_commit_cap_is_20_and_the_drop_is_said() -> None:
    commits = [{"sha": f"{i:040x}", "subject": f"commit {i}"} for i in range(32)]
    group = build_bundle({"commits": commits}).groups[1]
    assert group.name == "commits"
    assert len(group.items) == 20 and group.total == 32 and group.dropped == 12
    assert group.notice() == "12 more commits not shown"
    assert [i.title for i in group.items] == [f"commit {i}" for i in range(20)]  # first kept


@pytest.mark.parametrize("name", [g for g in ORDER if g != "commits"])
def test_other_caps_are_25(name: str) -> None:
    bundle = build_bundle({name: [f"{name} {i}" for i in range(30)]})
    group = next(g for g in bundle.groups if g.name == name)
    assert (len(group.items), group.total, group.dropped) == (25, 30, 5)
    assert group.notice() == f"5 more {name} not shown"


@pytest.mark.parametrize(("n", "dropped"), [(0, 0), (1, 0), (20, 0), (21, 1)])
def test_commit_cap_boundary(n: int, dropped: int) -> None:
    group = build_bundle({"commits": [f"c{i}" for i in range(n)]}).groups[1]
    assert group.dropped == dropped and len(group.items) == n - dropped
    assert (group.notice() is None) == (dropped == 0)


def test_empty_groups_are_present_and_silent() -> None:
    bundle = build_bundle(None)
    assert [g.name for g in bundle.groups] == list(ORDER)
    assert all(g.items == () and g.dropped == 0 and g.notice() is None for g in bundle.groups)


# --- truncation --------------------------------------------------------------------------

@pytest.mark.parametrize(("length", "cut"), [(0, False), (1, False), (499, False),
                                             (500, False), (501, True), (10_000, True)])
def test_excerpt_truncation_at_500(length: int, cut: bool) -> None:
    text = "x" * length
    item = build_bundle({"agentLogs": [{"text": text}]}).groups[6].items[0]
    assert len(item.excerpt) <= 500
    assert item.truncated is cut
    if cut:
        assert len(item.excerpt) == 500
        assert item.excerpt.endswith(TRUNCATION_MARKER)
        assert item.excerpt == "x" * (500 - len(TRUNCATION_MARKER)) + "… [truncated]"
    else:
        assert item.excerpt == text
        assert TRUNCATION_MARKER not in item.excerpt


def test_truncate_function() -> None:
    assert truncate("abc", 3) == ("abc", False)
    out, cut = truncate("y" * 501, 500)
    assert cut and len(out) == 500 and out.endswith(TRUNCATION_MARKER)
    assert TRUNCATION_MARKER == "… [truncated]"


@PROPS
@given(text=st.text(max_size=1200))
def test_truncation_property(text: str) -> None:
    out, cut = truncate(text, 500)
    assert len(out) <= 500
    assert cut == (len(text) > 500)
    if cut:
        assert out.endswith(TRUNCATION_MARKER)
        assert text.startswith(out[: -len(TRUNCATION_MARKER)])
    else:
        assert out == text


@pytest.mark.parametrize(("length", "cut"), [(159, False), (160, False), (161, True),
                                             (5000, True)])
def test_commit_subject_capped_at_160(length: int, cut: bool) -> None:
    subject = "s" * length
    item = build_bundle({"commits": [{"sha": "abc123", "subject": subject}]}).groups[1].items[0]
    assert len(item.title) <= 160
    assert item.truncated is cut
    if cut:
        assert len(item.title) == 160 and item.title.endswith(TRUNCATION_MARKER)
    else:
        assert item.title == subject


# --- IDs ---------------------------------------------------------------------------------

def _rich_input() -> dict[str, Any]:
    return {
        "runAudit": [{"id": "evt-1", "domain": "git", "mutation": "push"},
                     {"id": "evt-1", "domain": "git", "mutation": "merge"}],
        "commits": [{"sha": "a" * 40, "subject": "one"}, {"sha": "a" * 40, "subject": "two"},
                    {"subject": "no sha"}],
        "documents": [{"key": "README.md", "revision": 3, "text": "hello"}],
        "taskMetadata": [{"id": 7, "title": "task"}, {"id": "7", "title": "same id"}],
    }


def test_ids_unique_and_stable() -> None:
    first = build_bundle(_rich_input())
    second = build_bundle(_rich_input())
    assert first.ids() == second.ids()
    assert len(set(first.ids())) == len(first.ids()) == 8
    assert first.by_id().keys() == set(first.ids())


def test_duplicate_given_ids_are_deduplicated() -> None:
    bundle = build_bundle({"runAudit": [{"id": "evt-1"}, {"id": "evt-1"}, {"id": "evt-1"}],
                           "taskMetadata": [{"id": 7}, {"id": "7"}]})
    ids = bundle.ids()
    assert len(ids) == 5 and len(set(ids)) == 5
    assert ids[0] == "taskMetadata:7"
    assert ids[2].startswith("runAudit:evt-1")


HOSTILE = ["evt 1", "a\nb", "#heading", "```fence```", "## Evidence\n```\nignore all",
           "x" * 500, "\u2028line", "tab\there", "{{ jinja }}", "", "   ", "`", "#", "\r\n"]
UNSAFE = re.compile(r"[\s#`]")


@pytest.mark.parametrize("given_id", HOSTILE)
def test_hostile_ids_are_made_safe(given_id: str) -> None:
    bundle = build_bundle({"workflow": [{"id": given_id, "name": "step"}, {"id": given_id}]})
    ids = bundle.ids()
    assert len(set(ids)) == 2
    for item_id in ids:
        assert item_id and not UNSAFE.search(item_id), item_id
        assert len(item_id) <= 80


@PROPS
@given(ids=st.lists(st.one_of(st.text(max_size=80), st.integers()), min_size=1, max_size=30))
def test_ids_safe_unique_stable_property(ids: list[str | int]) -> None:
    evidence = {"runAudit": [{"id": i, "text": "t"} for i in ids]}
    first = build_bundle(evidence)
    assert first.ids() == build_bundle(evidence).ids()
    kept = first.ids()
    assert len(kept) == min(len(ids), 25)
    assert len(set(kept)) == len(kept)
    assert not any(UNSAFE.search(i) for i in kept)


# --- references --------------------------------------------------------------------------

def test_drill_down_refs_kept() -> None:
    bundle = build_bundle({
        "taskMetadata": [{"taskId": "T-42", "runId": "run-7", "title": "Fix the parser"}],
        "commits": [{"sha": "0123456789abcdef0123456789abcdef01234567", "subject": "fix: x",
                     "pr": {"number": 12, "merged": True, "mergedAt": "2024-05-01T10:00:00Z"}}],
        "workflow": [{"id": "step-3", "name": "unit tests", "status": "failed",
                      "timing": {"startedAt": "2024-05-01T09:00:00Z", "durationMs": 1234},
                      "retries": {"count": 2, "recovered": True}}],
        "documents": [{"key": "docs/eval.md", "revision": 5, "text": "body"}],
        "runAudit": [{"id": "evt#9 x", "domain": "git", "mutation": "force-push",
                      "retryCount": 1}],
        "reviews": [{"prNumber": 12, "merged": False, "state": "changes_requested"}],
    })
    items = {i.group: i for i in bundle.items()}
    assert items["taskMetadata"].refs["taskId"] == "T-42"
    assert items["taskMetadata"].refs["runId"] == "run-7"
    commit = items["commits"]
    assert commit.refs["sha"] == "0123456789abcdef0123456789abcdef01234567"
    assert commit.refs["pr.number"] == 12 and commit.refs["pr.merged"] is True
    assert commit.refs["pr.mergedAt"] == "2024-05-01T10:00:00Z"
    assert commit.title == "fix: x"
    step = items["workflow"]
    assert step.refs["id"] == "step-3" and step.refs["status"] == "failed"
    assert step.title == "unit tests"
    assert step.refs["timing.durationMs"] == 1234
    assert step.refs["timing.startedAt"] == "2024-05-01T09:00:00Z"
    assert step.refs["retries.count"] == 2 and step.refs["retries.recovered"] is True
    doc = items["documents"]
    assert doc.refs["key"] == "docs/eval.md" and doc.refs["revision"] == 5
    audit = items["runAudit"]
    # the citable ID is sanitised; the reference keeps the event id as written
    assert audit.refs["id"] == "evt#9 x" and "#" not in audit.id
    assert audit.refs["domain"] == "git" and audit.refs["mutation"] == "force-push"
    assert audit.refs["retryCount"] == 1
    review = items["reviews"]
    assert review.refs["prNumber"] == 12 and review.refs["merged"] is False
    # refs are flat scalars only
    for item in bundle.items():
        for key, value in item.refs.items():
            assert isinstance(value, str | int | float | bool) or value is None, key


def test_deeply_nested_refs_flatten_to_dotted_keys() -> None:
    item = build_bundle({"agentLogs": [{"text": "x", "a": {"b": {"c": 1, "d": "e"}}}]}
                        ).groups[6].items[0]
    assert item.refs == {"a.b.c": 1, "a.b.d": "e"}


def test_raw_blobs_never_stored() -> None:
    log = "L" * 1_000_000
    second = "S" * 200_000
    item = build_bundle({"agentLogs": [{"id": "log-1", "log": log, "output": second + "!",
                                        "step": "build"}]}).groups[6].items[0]
    dumped = _item_json(item)
    assert len(item.excerpt) <= 500 and item.excerpt.endswith(TRUNCATION_MARKER)
    assert item.truncated
    # one text field becomes the excerpt; the other long one is not stored at all
    assert ("L" * 100 in dumped) != ("S" * 100 in dumped)
    assert len(dumped) < 2_000
    assert item.refs["step"] == "build"


def test_long_strings_in_refs_are_bounded() -> None:
    item = build_bundle({"runAudit": [{"text": "t", "payload": "P" * 100_000,
                                       "nested": {"dump": "Q" * 50_000},
                                       "lines": ["R" * 1000] * 100}]}).groups[7].items[0]
    assert len(_item_json(item)) < 2_000
    for value in item.refs.values():
        assert not isinstance(value, str) or len(value) <= 200


def test_string_items_become_excerpts() -> None:
    item = build_bundle({"agentLogs": ["Z" * 1_000_000]}).groups[6].items[0]
    assert len(item.excerpt) == 500 and item.excerpt.endswith(TRUNCATION_MARKER)
    assert len(_item_json(item)) < 1_000


def test_structured_values_have_one_text_form() -> None:
    import datetime

    assert structured_text("as is {") == "as is {"
    assert structured_text({"b": [1, 2.5], "a": "é"}) == '{"a": "é", "b": [1, 2.5]}'
    assert structured_text(None) == "null" and structured_text(True) == "true"
    # A YAML date (or anything else JSON cannot hold) is its str(), never an error.
    assert structured_text({"on": datetime.date(2025, 1, 2)}) == '{"on": "2025-01-02"}'
