"""One seeded random source: SplitMix64's published outputs, and no second generator."""

from __future__ import annotations

import re
from pathlib import Path

from judge.app.judges.noise import probe_cases
from judge.core.stats.seeded import SplitMix64, seed_of

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "judge" / "core" / "stats" / "seeded.py"

SECOND_SOURCE = re.compile(
    r"^\s*(import random|from random import)"          # the standard library's generator
    r"|\brandom\.(Random|random|shuffle|choice|sample)\b"
    r"|default_rng|np\.random|numpy\.random"             # numpy's
    r"|0x9E3779B97F4A7C15"                               # a copy of SplitMix64
    r"|(\w+)\[(\w+)\], \3\[(\w+)\] = \3\[\5\], \3\[\4\]"  # a Fisher-Yates swap
    r"|\.shuffle\(", re.IGNORECASE)


def test_splitmix64_gives_its_published_outputs() -> None:
    # Steele, Lea and Flood's reference implementation, seed 0 (and Vigna's splitmix64.c).
    rng = SplitMix64(0)
    assert [rng.next64() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                                 0x06C45D188009454F]


def test_draws_shuffles_and_samples_are_seeded() -> None:
    assert SplitMix64(3).shuffled(range(10)) == SplitMix64(3).shuffled(range(10))
    assert sorted(SplitMix64(3).shuffled(range(10))) == list(range(10))
    assert SplitMix64(3).shuffled(range(10)) != SplitMix64(4).shuffled(range(10))
    assert SplitMix64(5).sample("abcdef", 3) == SplitMix64(5).shuffled("abcdef")[:3]
    assert seed_of("suite:1") == seed_of("suite:1") != seed_of("suite:2")
    row = SplitMix64(9).draws(50)
    assert len(row) == 50 and all(0 <= v < 50 for v in row)


def test_the_probe_draws_what_its_own_shuffle_drew() -> None:
    """The noise probe's seeded choice is unchanged by drawing from the one source."""
    pool = [f"case-{i:02d}" for i in range(30)]
    rng = SplitMix64(20261202)
    expected = sorted(pool)
    for i in range(len(expected) - 1, 0, -1):
        j = rng.below(i + 1)
        expected[i], expected[j] = expected[j], expected[i]
    assert probe_cases(pool, 10, 20261202) == sorted(expected[:10])


def test_no_second_random_source() -> None:
    found = []
    for path in sorted((ROOT / "judge").rglob("*.py")):
        if path == HOME:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SECOND_SOURCE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == [], "a second seeded random source:\n" + "\n".join(found)
