"""Chiang & Lee (2023), Topical-Chat, reproduced through ``judge judges import`` and
``judge judges agreement``.

"A Closer Look into Automatic Evaluation Using Large Language Models" (Findings of EMNLP
2023) publishes ChatGPT's 20 sampled ratings of each of 359 Topical-Chat responses (60
dialogue contexts x 6 systems, one missing) under five prompts, with the people's ratings,
in its repository (results/topical_chat/). The repository carries no licence, so nothing
of it ships with judgeflow: this script reads the files from the folder you give.

Its Table 2 reports Pearson's r at the **item** level (its "Method 1": every response) and
Kendall's τ at the **group** level (its "Method 2": the responses to one dialogue context,
contexts where either side is constant skipped, the mean over contexts); its Table 4 both r
and τ at the group level. Per response, the judge's score is the mean of its 20 samples,
each read with the paper's rule (the number after the last "rating:", or the first number;
no number counts as 0, a negative one is dropped).

For each attribute (naturalness, coherence, engagingness, groundedness) the script builds a
workspace: a one-category rubric whose final score is the judge's, a JSONL suite of the
responses (the context and the system as metadata; the people's mean rating as the label)
and one import file per prompt (judge ``chatgpt-<prompt>``, the per-response means), then
runs ``judge judges import --scale 0:3`` and ``judge judges agreement --group-by metadata.context
--system-by metadata.system --json``. It prints, per attribute and prompt, the paper's
numbers, judgeflow's statistics on the exact means (``judge.core.stats.levels`` on fractions: the
definitions, to compare with the paper) and what ``judge judges agreement`` reports through the
import (every score an integer 0..100, so ties and a third-decimal drift can appear).

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/published_table.py --data
PATH/TO/A-Closer-Look-To-LLM-Evaluation/results/topical_chat``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

ATTRIBUTES = ("naturalness", "coherence", "engagingness", "groundedness")
PROMPTS = {  # the file's prompt name: the paper's row
    "geval": "auto CoT + score only",
    "geval_no_auto_cot": "score only",
    "llm_eval_no_cot": "free text",
    "rate_explain": "rate-explain",
    "analyze_rate": "analyze-rate",
}
# Table 2 (r: item level; τ: group level) and Table 4 (r at the group level), per prompt:
# naturalness, coherence, engagingness, groundedness.
TABLE2_R = {"geval": (0.393, 0.468, 0.549, 0.311),
            "geval_no_auto_cot": (0.408, 0.443, 0.557, 0.358),
            "llm_eval_no_cot": (0.464, 0.524, 0.611, 0.563)}
TABLE_TAU = {"geval": (0.358, 0.391, 0.513, 0.566),
             "geval_no_auto_cot": (0.331, 0.404, 0.535, 0.582),
             "llm_eval_no_cot": (0.476, 0.426, 0.557, 0.666),
             "rate_explain": (0.512, 0.425, 0.509, 0.663),
             "analyze_rate": (0.47, 0.416, 0.524, 0.693)}
TABLE4_R = {"geval": (0.445, 0.498, 0.579, 0.685),
            "geval_no_auto_cot": (0.431, 0.507, 0.631, 0.666),
            "llm_eval_no_cot": (0.572, 0.523, 0.676, 0.747),
            "rate_explain": (0.621, 0.472, 0.61, 0.771),
            "analyze_rate": (0.573, 0.486, 0.628, 0.725)}
RUBRIC = """version: 1
id: {attribute}
title: Topical-Chat {attribute}
description: The judge's rating of one attribute, alone.
categories:
  - id: {attribute}
    weight: 1.0
    definition: The response's {attribute}.
    blend: {{deterministic: 0.0, ai: 1.0}}
missing: {{deterministic: ai_only}}
"""
NUMBER = re.compile(r"[a-z]*:?-? ?[0-9]\.?[0-9]?")
LEADING = re.compile(r"^ ?([\d.]+)")


def rating(text: str) -> float:
    """One sampled answer's rating by the paper's rule (0 when no number; NaN if negative)."""
    text = text.lower().replace("\n", " ").replace("1-3", " ")
    if "rating:" in text:
        text = text.split("rating:")[-1]
    first = NUMBER.search(text)
    if first is not None:
        text = re.sub(r"[a-z]*:?-? *", " ", first.group(0)).strip()
    found = LEADING.search(text)
    try:
        value = float(found.group(1)) if found else 0.0
    except ValueError:
        value = 0.0
    return math.nan if value < 0 else value


def mean_rating(responses: list[str]) -> Fraction:
    """The mean of the readable ratings, exactly (each rating's decimal as written)."""
    values = [Fraction(repr(v)) for v in map(rating, responses) if not math.isnan(v)]
    return sum(values, Fraction(0)) / len(values)


def case_id(item: dict[str, Any]) -> str:
    """A stable id of a response: its context and system."""
    return "r" + hashlib.sha256(f"{item['source']}\0{item['system_id']}".encode()).hexdigest()[:16]


def load(data: Path, attribute: str, prompt: str) -> list[dict[str, Any]]:
    """The results file of one attribute and prompt."""
    items: list[dict[str, Any]] = json.loads(
        (data / f"gpt3.5_{attribute[:3]}_{prompt}.json").read_text(encoding="utf-8"))
    return items


def on_scale(value: Fraction) -> int:
    """A rating on the import's 0:3 scale as the 0..100 integer judge judges import stores."""
    scaled = value * 100 / 3
    return int(scaled + Fraction(1, 2)) if scaled >= 0 else -int(-scaled + Fraction(1, 2))


def exact_levels(items: list[dict[str, Any]], attribute: str) -> dict[str, float | None]:
    """judgeflow's statistics on the exact means (no 0..100 rounding): the definitions."""
    from judge.core.stats.levels import correlations, group_level

    judge = [mean_rating(i["all_responses"]) for i in items]
    human = [Fraction(repr(i["scores"][attribute])) for i in items]
    item = correlations(human, judge)
    group = group_level(human, judge, [i["source"] for i in items])
    return {"itemR": item["pearsonR"], "groupR": group.pearson_r,
            "groupTau": group.kendall_tau}


def scipy_levels(items: list[dict[str, Any]], attribute: str) -> dict[str, float]:
    """The same three numbers from scipy on the same means: where judgeflow and the paper
    differ, this says whether the files or the statistics do."""
    from statistics import fmean

    from scipy import stats

    judge = [float(mean_rating(i["all_responses"])) for i in items]
    human = [i["scores"][attribute] for i in items]
    rs, taus = [], []
    for source in dict.fromkeys(i["source"] for i in items):
        x = [h for h, i in zip(human, items, strict=True) if i["source"] == source]
        y = [j for j, i in zip(judge, items, strict=True) if i["source"] == source]
        if len(set(x)) > 1 and len(set(y)) > 1:
            rs.append(stats.pearsonr(x, y).statistic)
            taus.append(stats.kendalltau(x, y).statistic)
    return {"itemR": float(stats.pearsonr(human, judge).statistic), "groupR": fmean(rs),
            "groupTau": fmean(taus)}


def through_import(root: Path, data: Path, attribute: str) -> dict[str, dict[str, Any]]:
    """`judge judges import` of every prompt's means, then `judge judges agreement --json`.

    By prompt.
    """
    (root / "rubrics").mkdir(parents=True)
    (root / "rubrics" / f"{attribute}.yaml").write_text(RUBRIC.format(attribute=attribute))
    (root / "judge.toml").write_text(f'rubric = "{attribute}"\n')
    every = {case_id(i): i for prompt in PROMPTS for i in load(data, attribute, prompt)}
    first = list(every.values())
    suite = [{"id": case_id(i), "input": "", "output": "",
              "metadata": {"context": hashlib.sha256(i["source"].encode()).hexdigest()[:12],
                           "system": i["system_id"]},
              "human": {"categories": {attribute: on_scale(
                  Fraction(repr(i["scores"][attribute])))}}} for i in first]
    (root / "suite.jsonl").write_text("".join(json.dumps(c) + "\n" for c in suite))
    lines = [json.dumps({"case": case_id(i), "judge": f"chatgpt-{prompt}", "scores": {
                 attribute: float(mean_rating(i["all_responses"]))}})
             for prompt in PROMPTS for i in load(data, attribute, prompt)]
    (root / "judged.jsonl").write_text("\n".join(lines) + "\n")
    judge = [sys.executable, "-m", "judge"]
    done = subprocess.run([*judge, "judges", "import", "judged.jsonl", "--suite", "suite.jsonl",
                           "--scale", "0:3"], cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"judge judges import: {done.stderr}")
    out = subprocess.run([*judge, "judges", "agreement", "--group-by", "metadata.context",
                          "--system-by", "metadata.system", "--json"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    found = {}
    for row in json.loads(out)["rows"]:
        (cat,) = [c["ai"] for c in row["agreement"]["categories"]]
        found[row["model"].removeprefix("chatgpt-")] = cat
    return found


def _cell(paper: float | None, exact: float | None, imported: float | None) -> str:
    def fmt(v: float | None) -> str:
        return "—" if v is None else f"{v:.3f}"
    return f"{fmt(paper)} / {fmt(exact)} / {fmt(imported)}"


def main() -> None:
    """Print the reproduction table (paper / exact means / through judge judges import)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True,
                        help="the repository's results/topical_chat folder")
    args = parser.parse_args()
    print("| attribute | prompt | r, item level (Table 2) | τ, group level (Tables 2, 4) | "
          "r, group level (Table 4) | groups used |")
    print("|---|---|---|---|---|---|")
    matched = compared = imported_matched = 0
    scipy_gap = 0.0
    for k, attribute in enumerate(ATTRIBUTES):
        with tempfile.TemporaryDirectory() as folder:
            imported = through_import(Path(folder) / attribute, args.data, attribute)
        for prompt, row in PROMPTS.items():
            items = load(args.data, attribute, prompt)
            exact = exact_levels(items, attribute)
            reference = scipy_levels(items, attribute)
            got = imported[prompt]
            group = got["levels"]["group"]
            via = {"itemR": got["pearsonR"], "groupTau": group["kendallTau"],
                   "groupR": group["pearsonR"]}
            for name, paper in (("itemR", TABLE2_R.get(prompt, (None,) * 4)[k]),
                                ("groupTau", TABLE_TAU[prompt][k]),
                                ("groupR", TABLE4_R[prompt][k])):
                value = exact[name]
                assert value is not None
                scipy_gap = max(scipy_gap, abs(value - reference[name]))
                if paper is not None:
                    compared += 1
                    matched += f"{value:.3f}" == f"{paper:.3f}"
                    imported_matched += f"{via[name]:.3f}" == f"{paper:.3f}"
            cells = [_cell(TABLE2_R.get(prompt, (None,) * 4)[k], exact["itemR"],
                           got["pearsonR"]),
                     _cell(TABLE_TAU[prompt][k], exact["groupTau"], group["kendallTau"]),
                     _cell(TABLE4_R[prompt][k], exact["groupR"], group["pearsonR"])]
            print(f"| {attribute} | {row} | {' | '.join(cells)} | "
                  f"{group['n']} (+{group['skipped']} skipped) |")
    print(f"\nof {compared} published numbers: {matched} equal to the third decimal on the "
          f"exact means, {imported_matched} through judge judges import (integer scores); "
          f"judgeflow against scipy on the same means: largest difference {scipy_gap:.1e}")


if __name__ == "__main__":
    main()
