"""The template sandbox cannot be walked around: templates resolve only
inside prompts/ and the shipped folder, a folder where a template should be is refused, and a
workspace template renders under a time and size budget that ends in exit 2 naming it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import run_judge

import judge.render.prompts
from judge.core.formats.evidence import build_bundle
from judge.core.formats.limits import MAX_PROMPT_CHARS
from judge.core.formats.suite import Case
from judge.core.text.errors import TemplateError
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric

HEAD = "{% set system %}s{% endset %}\n{% set user %}\n"
TAIL = "\n{% endset %}\n"


def _workspace(tmp_path: Path, body: str) -> Path:
    prompts = tmp_path / "prompts"
    prompts.mkdir(parents=True, exist_ok=True)
    (prompts / "judge.md.j2").write_text(HEAD + body + TAIL, encoding="utf-8")
    return tmp_path


def _render(ws: Path) -> str:
    rubric = load_rubric("task-evaluation")
    case = Case.model_validate({"id": "c1", "input": "task", "output": "out"})
    renderer = PromptRenderer(workspace=ws)
    return renderer.render(rubric, case, build_bundle(case.evidence, rubric.evidence)) \
        .messages[1]["content"]


def test_a_symlink_out_of_prompts_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md.j2"
    outside.write_text("secret host name", encoding="utf-8")
    ws = _workspace(tmp_path / "ws", "{% include 'leak.md.j2' %}")
    (ws / "prompts" / "leak.md.j2").symlink_to(outside)
    with pytest.raises(TemplateError, match="outside the template folders") as info:
        PromptRenderer(workspace=ws)
    assert info.value.exit_code == 2 and "fix:" in info.value.render()
    # The root template itself as a symlink to a file outside: refused too.
    root = tmp_path / "ws2" / "prompts"
    root.mkdir(parents=True)
    (root / "judge.md.j2").symlink_to(Path("/etc/hostname") if Path("/etc/hostname").exists()
                                      else outside)
    with pytest.raises(TemplateError, match="outside the template folders"):
        PromptRenderer(workspace=tmp_path / "ws2")


def test_a_symlink_inside_prompts_still_works(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, "{% include 'part.md.j2' %}")
    (ws / "prompts" / "real.md.j2").write_text("included text", encoding="utf-8")
    (ws / "prompts" / "part.md.j2").symlink_to(ws / "prompts" / "real.md.j2")
    assert "included text" in _render(ws)


def test_a_folder_where_the_template_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "prompts" / "judge.md.j2").mkdir(parents=True)
    with pytest.raises(TemplateError, match="is a folder, not a template"):
        PromptRenderer(workspace=tmp_path)


def test_nested_range_loops_end_at_the_time_limit(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge.render.prompts, "RENDER_SECONDS", 0.5)
    ws = _workspace(tmp_path, "{% for i in range(100000) %}{% for j in range(100000) %}"
                              "{% endfor %}{% endfor %}")
    started = time.monotonic()
    with pytest.raises(TemplateError, match=r"longer than 0\.5 s") as info:
        _render(ws)
    assert time.monotonic() - started < 5
    assert info.value.file is not None and info.value.file.endswith("judge.md.j2")


@pytest.mark.parametrize("body", [
    "{{ 'x' * 400000000 }}",
    "{% set s = 'x' * 400000000 %}{{ s|length }}",
    "{{ ['x'] * 400000000 }}",
    "{{ 2 ** 100000000 }}",
    "{{ ('x' * 20000000) + ('y' * 20000000) }}",
    "{{ 'x'|center(40000000) }}",
])
def test_a_template_cannot_build_a_huge_string(tmp_path: Path, body: str) -> None:
    ws = _workspace(tmp_path, body)
    with pytest.raises(TemplateError) as info:
        _render(ws)
    assert info.value.exit_code == 2
    assert "characters" in info.value.message or "exponent" in info.value.message
    assert f"{MAX_PROMPT_CHARS:,}" in info.value.message or "exponent" in info.value.message


def test_the_cli_ends_a_hanging_template_with_exit_2_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(judge.render.prompts, "RENDER_SECONDS", 0.5)
    ws = _workspace(tmp_path, "{% for i in range(100000) %}{% for j in range(100000) %}"
                              "{% endfor %}{% endfor %}")
    (ws / "suite.yaml").write_text("cases:\n  - id: c1\n    output: ok\n", encoding="utf-8")
    before = sorted(os.listdir(ws))
    proc = run_judge(["render", "--template", "judge", "suite.yaml", "--case", "c1"], ws)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "judge.md.j2" in proc.stderr and "longer than" in proc.stderr
    assert sorted(os.listdir(ws)) == before
