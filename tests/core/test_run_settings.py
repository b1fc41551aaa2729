"""A run's settings: a typed model whose stored JSON reads back, and is copied, unchanged."""

from __future__ import annotations

from judge.app.runs.sharding import group_settings
from judge.core.formats.models import RunCalibration, RunSettings
from judge.core.formats.shards import Shard
from judge.core.text.canonical import canonical_json

STORED = {  # as `judge run --shard 2/3 --group ci-7` wrote it, plus a name from elsewhere
    "cacheMode": "read-write", "concurrency": 16, "outputMode": "auto", "maxRepairs": 1,
    "maxTokens": 1024, "cases": 40, "llm": True, "group": "ci-7", "shard": "2/3",
    "addedByALaterVersion": {"x": [1, 2.5, None]},
}


def test_stored_settings_read_typed_and_write_back_byte_for_byte() -> None:
    settings = RunSettings.model_validate(STORED)
    assert (settings.group, settings.shard, settings.max_tokens, settings.llm) == (
        "ci-7", "2/3", 1024, True)
    assert settings.stable_schema is None and settings.rescored_from is None
    assert canonical_json(settings.model_dump(mode="json")) == canonical_json(STORED)


def test_what_is_not_given_is_not_written() -> None:
    assert RunSettings(cache_mode="off", stable_schema=None).model_dump(mode="json") == {
        "cacheMode": "off"}
    copied = RunSettings.model_validate(STORED).model_copy(update={
        "rescored_from": "r1", "calls": 0,
        "calibration": RunCalibration(file="cal.json", sha256="ab")})
    dumped = copied.model_dump(mode="json")
    assert dumped == {**STORED, "rescoredFrom": "r1", "calls": 0,
                      "calibration": {"file": "cal.json", "sha256": "ab"}}


def test_a_shards_tag_is_written_by_one_module_and_read_by_name() -> None:
    tag = group_settings(Shard.parse("2/3"), "ci-7")
    assert tag.model_dump(mode="json") == {"group": "ci-7", "shard": "2/3"}
    assert Shard.parse(tag.shard or "") == Shard.parse("2/3")
    assert group_settings(None, None).model_dump(mode="json") == {}
