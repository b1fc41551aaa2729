"""The one seal rule (judge/core/text/seals.py): store rows and files that decide a verdict.

Rows: under the team secret an unsealed row is refused like an edited one. Files: ``digest``
always, ``seal`` under the secret; a reader with the secret needs the seal, one without it
checks the digest, and a file from before seals is read as before only without the secret.
"""

from __future__ import annotations

import json

import pytest

from judge.core.stats.noise import NoiseEstimate
from judge.core.text.errors import ConfigError
from judge.core.text.seals import (
    DIGEST_FIELD,
    NO_SECRET,
    SEAL_FIELD,
    Sealer,
    checked_file,
    file_seals,
    sealed_text,
)
from judge.core.text.strict_json import strict_document

TEAM = Sealer("team-secret")
VALUE = {"sd": 2.5, "df": 20}


def test_rows_without_a_seal_verify_only_without_the_secret() -> None:
    parts = ("run-1", "case-a", "m", 0, '{"x":1}', 1)
    assert NO_SECRET.problem(parts, None) is None  # a row from before seals
    assert "carries no seal" in (TEAM.problem(parts, None) or "")
    assert TEAM.problem(parts, TEAM.seal(parts)) is None
    assert "set JUDGE_CACHE_SECRET" in (NO_SECRET.problem(parts, TEAM.seal(parts)) or "")
    assert "not keyed" in (TEAM.problem(parts, NO_SECRET.seal(parts)) or "")
    edited = ("run-1", "case-a", "m", 0, '{"x":2}', 1)
    assert "does not match" in (TEAM.problem(edited, TEAM.seal(parts)) or "")


@pytest.mark.parametrize(("reader", "seals", "refused"), [
    (NO_SECRET, {}, None),  # from before seals, no secret: read as before
    (TEAM, {}, "carries no seal"),
    (NO_SECRET, file_seals(NO_SECRET, VALUE), None),
    (TEAM, file_seals(NO_SECRET, VALUE), "carries no seal"),  # written without the secret
    (NO_SECRET, file_seals(TEAM, VALUE), None),  # a reader without the secret: the digest
    (TEAM, file_seals(TEAM, VALUE), None),
    (Sealer("another"), file_seals(TEAM, VALUE), "another secret"),
    (TEAM, {SEAL_FIELD: TEAM.seal(VALUE)}, None),  # digest stripped: the seal suffices
    (TEAM, {**file_seals(TEAM, VALUE), DIGEST_FIELD: "sha256:00"}, "edited by hand"),
    (NO_SECRET, {DIGEST_FIELD: 5}, "edited by hand"),
])
def test_file_seals(reader: Sealer, seals: dict[str, object], refused: str | None) -> None:
    why = reader.file_problem(VALUE, seals.get(DIGEST_FIELD), seals.get(SEAL_FIELD))
    if refused is None:
        assert why is None
    else:
        assert why is not None and refused in why


def test_a_value_edited_after_sealing_is_refused_with_and_without_the_secret() -> None:
    edited = {**VALUE, "sd": 50}  # the noise spread
    for writer, reader in ((NO_SECRET, NO_SECRET), (TEAM, NO_SECRET), (TEAM, TEAM)):
        seals = file_seals(writer, VALUE)
        assert reader.file_problem(edited, seals.get(DIGEST_FIELD), seals.get(SEAL_FIELD))


def _read(text: str, sealer: Sealer) -> NoiseEstimate:
    return checked_file(strict_document(text, "n.json", ConfigError, "measure again"), "n.json",
                        NoiseEstimate, sealer, error=ConfigError, what="an estimate",
                        fix="measure again", seal_fix="re-seal")


def test_a_sealed_file_round_trips_and_names_the_place_and_fix() -> None:
    estimate = NoiseEstimate(sd=2.5, low=1.5, high=4.0, df=20)
    text = sealed_text(estimate, TEAM)
    assert set(json.loads(text)) == {*estimate.model_dump(), DIGEST_FIELD, SEAL_FIELD}
    assert _read(text, TEAM) == estimate and _read(text, NO_SECRET) == estimate
    with pytest.raises(ConfigError) as err:
        _read(text.replace('"sd": 2.5', '"sd": 50'), TEAM)
    assert (err.value.file, err.value.where, err.value.fix) == ("n.json", "seal", "re-seal")
    with pytest.raises(ConfigError) as err:
        _read(sealed_text(estimate, NO_SECRET), TEAM)
    assert "carries no seal" in err.value.message
    with pytest.raises(ConfigError, match="an estimate is a JSON object"):
        _read("[]", NO_SECRET)
