"""Evidence worth judging from a real repository's merged pull request.

The repository is made in the test with real ``git`` commands: a project that does not
keep Conventional Commits (like pallets/click), a feature branch of two commits merged
with ``--no-ff`` (a merge commit, as GitHub's merge button makes), one file long enough to
be cut and one holding a credential.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from collect_fixtures import git
from conftest import run_judge

from judge.app.admin.collecting import CollectRequest, collect_case
from judge.app.workspace.workspace import Workspace
from judge.collect.case import build_case
from judge.collect.git import DIFF_CHARS, collect_git, diff_endpoints, parse_numstat_z
from judge.core.formats.evidence import TRUNCATION_MARKER
from judge.system.resources import load_rubric

RUBRIC = load_rubric("task-evaluation")
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
LONG = "".join(f"def option_{n}(value):\n    return value * {n}\n\n" for n in range(120))


def _commit(repo: Path, files: dict[str, str], message: str, day: int) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message, date=f"2026-02-{day:02d}T10:00:00+00:00")


def make_merged_pr(root: Path) -> tuple[Path, str]:
    """A repository with a merged pull request; the merge commit's sha."""
    repo = root / "proj"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    _commit(repo, {"src/cli.py": "def main():\n    print('hello')\n"}, "Initial import", 1)
    _commit(repo, {"README.md": "# proj\n"}, "Add a README", 2)
    _commit(repo, {"CHANGES.md": "## 1.0\n"}, "Start the change log", 3)
    git(repo, "checkout", "-q", "-b", "ada/options")
    _commit(repo, {"src/cli.py": "def main(name='world'):\n    print(f'hello {name}')\n",
                   "src/options.py": LONG}, "Add a name option and the option helpers", 4)
    _commit(repo, {"deploy.cfg": f"[deploy]\ntoken = {TOKEN}\nregion = eu\n"},
            "Deploy settings for the options service", 5)
    git(repo, "checkout", "-q", "main")
    _commit(repo, {"CHANGES.md": "## 1.0\n\n- fixed a typo\n"}, "Fix a typo in the log", 6)
    git(repo, "merge", "-q", "--no-ff", "-m", "Merge pull request #12 from ada/options",
        "ada/options", date="2026-02-07T10:00:00+00:00")
    return repo, git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return make_merged_pr(tmp_path_factory.mktemp("merged"))


def test_a_merge_reads_as_its_first_parent_diff(merged: tuple[Path, str]) -> None:
    repo, merge = merged
    got = collect_git(f"proj@{merge}^1..{merge}", repo.parent)
    commits = [c for c in got.evidence["commits"] if "sha" in c]
    assert [c["subject"] for c in commits] == [
        "Merge pull request #12 from ada/options", "Deploy settings for the options service",
        "Add a name option and the option helpers"]
    head = commits[0]
    # git log --numstat prints nothing for a merge; its first-parent diff is the PR's change
    # (the typo fix on main is not in it).
    assert head["merge"] is True and head["diffBase"] == "first-parent"
    assert sorted(head["files"]) == ["deploy.cfg", "src/cli.py", "src/options.py"]
    assert (head["additions"], head["deletions"]) == (3 + 2 + LONG.count("\n"), 2)
    # The totals are the non-merge commits' sums: the change is counted once.
    assert got.facts["commits.additions"] == head["additions"]
    assert got.facts["commits.files"] == 3 and got.facts["commits.total"] == 3
    assert got.facts["repo.conventional"] is False
    assert got.source["diff"] == f"{merge_parent(repo, merge)[:12]}..{merge}"


def merge_parent(repo: Path, merge: str) -> str:
    return git(repo, "rev-parse", f"{merge}^1").strip()


def test_diff_excerpts_are_bounded_marked_and_scrubbed(merged: tuple[Path, str]) -> None:
    repo, merge = merged
    got = collect_git(f"proj@{merge}^1..{merge}", repo.parent)
    diffs = {d["path"]: d for d in got.evidence["commits"] if "path" in d}
    assert list(diffs) == ["src/options.py", "src/cli.py", "deploy.cfg"]  # most changed first
    assert diffs["src/cli.py"]["excerpt"].startswith("@@ -1,2 +1,2 @@")
    assert "+    print(f'hello {name}')" in diffs["src/cli.py"]["excerpt"]
    assert "diff --git" not in diffs["src/cli.py"]["excerpt"]  # the title names the file
    assert len(diffs["src/options.py"]["excerpt"]) == DIFF_CHARS  # bounded at the source
    assert diffs["src/options.py"]["subject"] == f"diff src/options.py (+{LONG.count(chr(10))} -0)"
    built = build_case("pr-12", [got], RUBRIC)
    text = json.dumps(built.case.model_dump(mode="json"))
    assert TOKEN not in text and built.redactions >= 1  # the credential never reaches the case
    items = {i.get("path"): i for i in built.case.evidence["commits"]}
    cut = items["src/options.py"]["excerpt"]
    assert cut.endswith(TRUNCATION_MARKER) and len(cut) <= RUBRIC.evidence.excerpt_limit
    assert "region = eu" in items["deploy.cfg"]["excerpt"]


def test_a_project_without_the_convention_loses_nothing_for_it(
        merged: tuple[Path, str]) -> None:
    repo, merge = merged
    got = collect_git(f"proj@{merge}^1..{merge}", repo.parent)
    junit = {"tests.failing": 0, "tests.passed": 1991, "tests.run": 1991, "tests.total": 1991}
    tests_part = type(got)(source={"kind": "junit"}, facts=junit)
    built = build_case("pr-12", [got, tests_part], RUBRIC)
    process = built.signals["processCompliance"]
    # None of the subjects is a Conventional Commit, and the project never used them.
    assert got.facts["commits.conventional"] == 0
    assert process.rule == "tests-conventional" and process.value == 100
    assert [t.applicable for t in process.terms] == [True, False]
    assert built.case.metadata["signals"]["processCompliance"]["terms"][1]["note"].startswith(
        "not applicable: repo.conventional is False")


def test_a_single_revision_is_its_own_change(merged: tuple[Path, str]) -> None:
    repo, _ = merged
    root_sha = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    base, tip = diff_endpoints(repo, root_sha)
    assert tip == root_sha and base == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # empty tree
    got = collect_git(f"proj@{root_sha}", repo.parent)
    assert [d["path"] for d in got.evidence["commits"] if "path" in d] == ["src/cli.py"]


def test_numstat_fields_are_nul_separated() -> None:
    text = "3\t1\tsrc/a\tb.py\0-\t-\tlogo.png\0\0"
    assert parse_numstat_z(text) == [("src/a\tb.py", 3, 1), ("logo.png", 0, 0)]


def test_collect_and_render_show_the_change_and_warn_without_output(
        merged: tuple[Path, str], tmp_path: Path) -> None:
    repo, merge = merged
    ws = tmp_path / "ws"
    ws.mkdir()
    spec = f"{repo}@{merge}^1..{merge}"
    bare = run_judge(["suite", "collect", "--id", "pr-12", "--git", spec, "-o", "bare.yaml"], ws)
    assert bare.returncode == 0, bare.stderr
    assert "case 'pr-12' has no 'output'" in bare.stderr and "fix: give the output" in bare.stderr
    assert "signal processCompliance: none (" in bare.stdout  # only commits: not applicable
    assert "conventional-commits: not applicable" in bare.stdout
    pr = {"number": 12, "title": "Add a name option", "state": "MERGED",
          "body": "Adds `--name` to the CLI.\n\nCloses #11.", "reviews": [], "comments": []}
    (ws / "pr.json").write_text(json.dumps(pr))
    given = run_judge(["suite", "collect", "--id", "pr-12", "--git", spec, "--gh-pr", "pr.json",
                       "-o", "cases.yaml"], ws)
    assert given.returncode == 0, given.stderr
    assert "no 'output'" not in given.stderr
    shown = run_judge(["render", "cases.yaml", "--case", "pr-12"], ws)
    assert shown.returncode == 0, shown.stderr
    assert "Adds `--name` to the CLI." in shown.stdout  # the PR description: the output
    assert "commits:diff:src/cli.py" in shown.stdout
    assert "+    print(f'hello {name}')" in shown.stdout
    assert "additions=" in shown.stdout and "additions=0; deletions=0; files=" not in shown.stdout
    assert TOKEN not in shown.stdout


def test_collect_case_reports_the_warning(merged: tuple[Path, str], tmp_path: Path) -> None:
    repo, merge = merged
    ws = Workspace.open(tmp_path, env={})
    result = collect_case(ws, CollectRequest(case_id="pr", suite=Path("s.yaml"),
                                             git=f"{repo}@{merge}^1..{merge}"))
    (warning,) = result.warnings
    assert warning.startswith("warning: s.yaml: case 'pr' has no 'output'")
    assert "--task FILE" in warning and "--gh-pr FILE" in warning
