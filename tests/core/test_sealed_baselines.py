"""A baseline decides the gate (its threshold, spreads and embedded noise model), so under the
team secret it is sealed with it: an edit whose plain digest was recomputed, which passed
before, is refused; without the secret the digest is what it always was (byte-identical)."""

from __future__ import annotations

import json

import pytest
from test_baseline import results

from judge.core.outcomes.baseline import (
    Baseline,
    baseline_text,
    build_baseline,
    content_digest,
    parse_baseline,
)
from judge.core.text.errors import ConfigError
from judge.core.text.seals import NO_SECRET, Sealer

TEAM = Sealer("s3cr3t-team-key")


def _baseline() -> Baseline:
    return build_baseline("task-eval", "task-evaluation", "ab" * 32, ["m"], results(),
                          run_id="r1")


def _forged(text: str) -> str:
    """The threshold raised to 50 points and the plain digest recomputed: anyone can."""
    data = json.loads(text)
    data.pop("digest")
    data.pop("seal", None)
    data["threshold"] = 0.5
    forged = parse_baseline(json.dumps(data), "b.json", check_digest=False)
    return json.dumps({**data, "digest": content_digest(forged)})


def test_without_the_secret_the_file_is_what_it_always_was() -> None:
    text = baseline_text(_baseline())
    assert set(json.loads(text)) - set(_baseline().model_dump(by_alias=True)) == {"digest"}
    assert json.loads(text)["digest"] == content_digest(_baseline())
    assert parse_baseline(text, "b.json") == _baseline()


def test_under_the_secret_a_recomputed_digest_no_longer_passes() -> None:
    sealed = baseline_text(_baseline(), TEAM)
    assert set(json.loads(sealed)) >= {"digest", "seal"}
    assert parse_baseline(sealed, "b.json", TEAM) == _baseline()
    assert parse_baseline(sealed, "b.json", NO_SECRET) == _baseline()  # the digest
    forged = _forged(sealed)
    assert parse_baseline(forged, "b.json", NO_SECRET).threshold == 0.5  # the documented limit
    with pytest.raises(ConfigError, match="carries no seal") as err:
        parse_baseline(forged, "b.json", TEAM)
    assert err.value.where == "seal" and "judge baseline seal task-eval" in (err.value.fix or "")
    kept = json.dumps({**json.loads(forged), "seal": json.loads(sealed)["seal"]})
    with pytest.raises(ConfigError, match="edited by hand"):
        parse_baseline(kept, "b.json", TEAM)
    with pytest.raises(ConfigError, match="carries no seal"):  # recorded without the secret
        parse_baseline(baseline_text(_baseline()), "b.json", TEAM)
