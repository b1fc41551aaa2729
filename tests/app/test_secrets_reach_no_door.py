"""Secrets in prose reach no prompt, cache, compiled suite, store, export or report.

A suite's own text is masked at load with the shapes specific enough for prose (an
``Authorization`` header, ``api_key=…`` with a value that looks like a key, escaped JSON,
keys split by zero-width characters) and with the values of the credentials the
environment holds (a provider key, ``JUDGE_CACHE_SECRET``). Each of the corpus's fifteen
prose shapes and both configured values sit in a case's input, output and evidence, in a
YAML suite (read through its compiled form), a YAML suite holding the values (never
compiled) and a JSONL suite; a run against the loopback fake judge, then every door that
writes or shows them: ``judge render``, the run's ``--json``, ``judge export`` (JSON lines
and CSV), ``judge report``, ``judge cache export``, the review page's data. No byte of any
file the runs wrote, nor of any output, holds a secret.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import judge_env, run_judge
from secret_corpus import CONFIGURED, PROSE

from judge.app.judges.reviewing import review_page_data
from judge.app.workspace.workspace import Workspace
from judge.core.text.secrets import MASK

MODEL = "hosted_vllm/fake-judge"
TEXTS = [text for _, text, _ in PROSE]
VALUES = [f"the environment printed {value} here" for value in CONFIGURED.values()]
CORES = [core for _, _, core in PROSE] + list(CONFIGURED.values())


def _case(case_id: str, texts: list[str]) -> dict[str, Any]:
    return {"id": case_id, "input": "\n".join(texts), "output": "\n".join(texts),
            "evidence": {
                "agentLogs": [{"step": f"s{i}", "level": "info", "text": t}
                              for i, t in enumerate(texts)],
                "documents": [{"key": f"doc{i}", "title": f"note {i}", "excerpt": t}
                              for i, t in enumerate(texts)]},
            "metadata": {"note": texts[0]}}


SUITES = {
    "prose.yaml": {"id": "prose", "cases": [_case("prose", TEXTS)]},
    "values.yaml": {"id": "values", "cases": [_case("values", VALUES)]},
}
JSONL = "\n".join(json.dumps(_case(f"line{i}", texts)) for i, texts in
                  enumerate([TEXTS, VALUES])) + "\n"


def _leaks(text: str) -> list[str]:
    """The secrets ``text`` holds (invisible characters taken out first)."""
    plain = text.replace("\u200b", "").replace("\u200d", "")
    return [core for core in CORES if core in plain]


@pytest.fixture
def judged(tmp_path: Path, fake_server: Any) -> tuple[Path, dict[str, str], list[str],
                                                     list[str]]:
    for name, suite in SUITES.items():
        (tmp_path / name).write_text(yaml.safe_dump(suite, allow_unicode=True, sort_keys=False),
                                     encoding="utf-8")
    (tmp_path / "lines.jsonl").write_text(JSONL, encoding="utf-8")
    env = judge_env(**CONFIGURED)
    outputs: list[str] = []
    runs: list[str] = []
    for suite in ("prose.yaml", "values.yaml", "lines.jsonl"):
        proc = run_judge(["run", suite, "--model", MODEL, "--api-base", fake_server.openai_base_url,
                          "--json"], tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outputs += [proc.stdout, proc.stderr]
        runs.append(json.loads(proc.stdout)["run"]["id"])
    return tmp_path, env, outputs, runs


def test_no_secret_reaches_any_door(
        judged: tuple[Path, dict[str, str], list[str], list[str]]) -> None:
    root, env, outputs, runs = judged
    shown: list[str] = []
    for n, run in enumerate(runs):
        for args in (["export", run, "-o", f"export-{n}.jsonl"],
                     ["export", run, "-f", "csv", "-o", f"export-{n}.csv"],
                     ["report", run, "-o", f"report-{n}.html"]):
            proc = run_judge(args, root, env=env)
            assert proc.returncode == 0, (args, proc.stderr[-2000:])
            outputs += [proc.stdout, proc.stderr]
        page = review_page_data(Workspace.open(root, env=env), run)
        shown.append(json.dumps(page, ensure_ascii=False))
    for suite, case in (("prose.yaml", "prose"), ("values.yaml", "values"),
                        ("lines.jsonl", "line0"), ("lines.jsonl", "line1")):
        render = run_judge(["render", suite, "--case", case, "--json"], root, env=env)
        assert render.returncode == 0, render.stderr
        assert MASK in render.stdout  # the prompt shows where each secret was
        outputs += [render.stdout, render.stderr]
    exported = run_judge(["cache", "export", "cache-export.jsonl"], root, env=env)
    assert exported.returncode == 0, exported.stderr
    outputs += [exported.stdout, exported.stderr]
    assert list((root / "cache" / "suites").glob("*.jsonl")), "prose.yaml was compiled"
    written = {p: p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*")
               if p.is_file() and p.name not in {"prose.yaml", "values.yaml", "lines.jsonl"}}
    assert any(p.suffix == ".html" for p in written) and len(written) > 10
    for path, text in written.items():
        assert not _leaks(text), (path, _leaks(text))
    for text in outputs + shown:
        assert not _leaks(text), _leaks(text)
