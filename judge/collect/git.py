"""The git adapter: the commits of a range or branch, read from the repository with ``git log``.

``--git REPO[@RANGE]``: REPO is a working tree or bare repository; RANGE is anything
``git log`` takes (``main..HEAD``, ``v1.2..v1.3``, a branch), default ``HEAD``. Each commit
becomes a ``commits`` item (sha, subject, author name, author time, lines and files changed,
the message body as its excerpt), newest first, cited by its sha. Author e-mail addresses are
left out: judging needs no personal data. At most :data:`MAX_COMMITS` are read.

What the range changed, beside its commit list (each in a function of its own):

- a merge commit's numbers are its **first-parent diff** (:func:`merge_stats`): ``git log
  --numstat`` prints nothing for a merge, and the first parent is the branch it landed on,
  so the merge of a pull request reads as the pull request's change. The range's totals
  (the ``commits.*`` facts) stay the sums over the non-merge commits, so a merged change is
  not counted twice;
- the range's diff, file by file (:func:`diff_excerpts`): the files changed most first, at
  most :data:`DIFF_FILES` of them, each an item with its path, its lines added and deleted
  and its hunks as the excerpt (bounded here to :data:`DIFF_CHARS`, then cut to the
  profile's excerpt limit with the truncation marker and scrubbed of credentials by
  :func:`judge.collect.case.build_case`). They come first in ``commits``, before the commit
  list, so a long range's cap drops old commits, not the change itself;
- whether the repository follows Conventional Commits at all (:func:`uses_conventional`,
  the fact ``repo.conventional``), read from the first-parent history before the range, so a
  rubric can score the convention only where the project keeps it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from ..core.text.errors import UsageError
from .case import Collected

__all__ = [
    "CONVENTIONAL",
    "CONVENTION_HISTORY",
    "DIFF_CHARS",
    "DIFF_FILES",
    "MAX_COMMITS",
    "MERGE_STATS",
    "CommitItem",
    "collect_git",
    "diff_endpoints",
    "diff_excerpts",
    "merge_stats",
    "parse_git_log",
    "parse_numstat",
    "parse_numstat_z",
    "split_spec",
    "uses_conventional",
]

MAX_COMMITS = 1000
"""Commits read from a range; the facts then cover the newest this many (recorded)."""
CONVENTIONAL = re.compile(
    r"^(?:build|chore|ci|docs|feat|fix|perf|refactor|revert|style|test)(?:\([^()\r\n]+\))?!?: \S",
    re.IGNORECASE)
"""A Conventional Commits subject with the config-conventional types (``feat(api)!: ...``)."""
GIT_TIMEOUT = 120
MERGE_STATS = 50
"""Merges (newest first) whose first-parent diff is read; older ones keep git log's zeros."""
DIFF_FILES = 8
"""Files of the range's diff given as evidence items (the most changed lines first)."""
DIFF_CHARS = 4000
"""A file's hunks kept before scrubbing: far above the excerpt limit (500), so the text that
survives the final cut was scrubbed whole (a credential cannot straddle this cut and show)."""
CONVENTION_HISTORY = 50
"""First-parent commits before the range read to tell whether the project uses the
convention; it does when at least half of their subjects are Conventional Commits."""
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def split_spec(spec: str, base: Path) -> tuple[Path, str | None]:
    """``REPO[@RANGE]`` as (repository folder under ``base``, range or None).

    The first ``@`` after which the folder exists splits them, so a range may hold ``@``
    (``HEAD@{1}``) and so may the path.
    """
    if (base / spec).is_dir():
        return base / spec, None
    for at in (i for i, ch in enumerate(spec) if ch == "@"):
        if at and (base / spec[:at]).is_dir():
            return base / spec[:at], spec[at + 1:] or None
    raise UsageError(f"no repository folder in {spec!r}", where="--git",
                     fix="pass --git PATH or --git PATH@RANGE (e.g. --git .@main..HEAD)")


def _number(text: str) -> int:
    return int(text) if text.isdigit() else 0  # "-" for a binary file


# Git's output is read as git wrote it, never as the commit says: every field of the log is
# NUL-terminated (`-z`), and git stops a message at its first NUL, so no message content
# (\x1e, \x1f, a line that looks like numstat, a newline) can add a field or a commit. The
# numbers come from a second stream whose only free text is file paths, each NUL-terminated.
_FIELDS = ("sha", "author", "at", "parents", "subject", "body")
_FORMAT = "%x00".join(("%H", "%an", "%aI", "%P", "%s", "%b"))
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_STAT = re.compile(r"\n?(\d+|-)\t(\d+|-)\t(.*)", re.S)


def _malformed(what: str) -> UsageError:
    return UsageError(f"git log printed {what}, not the fields judgeflow asked for",
                      where="--git", fix="use a git release >= 2.30; report the repository")


def parse_numstat(text: str) -> dict[str, tuple[int, int, list[str]]]:
    """Additions, deletions and files by sha from ``git log -z --numstat --format=%H``."""
    stats: dict[str, tuple[int, int, list[str]]] = {}
    tokens = iter(text.split("\0"))
    sha: str | None = None
    for token in tokens:
        stat = _STAT.fullmatch(token)
        if stat is not None and sha is not None:
            path = stat[3]
            if not path:  # a rename: the old path, then the new one, each its own field
                next(tokens, "")
                path = next(tokens, "")
            additions, deletions, files = stats[sha]
            stats[sha] = (additions + _number(stat[1]), deletions + _number(stat[2]),
                          [*files, path])
        elif _SHA.fullmatch(token.lstrip("\n")):
            sha = token.lstrip("\n")
            stats[sha] = (0, 0, [])
        elif token.strip():
            raise _malformed(f"an unexpected numstat entry {token[:40]!r}")
    return stats


class CommitItem(TypedDict):
    """A ``commits`` item as the case's evidence holds it."""

    sha: str
    subject: str
    author: str
    at: str
    additions: int
    deletions: int
    files: list[str]
    merge: NotRequired[bool]
    message: NotRequired[str]
    diffBase: NotRequired[str]
    """``first-parent`` on a merge: its counts are of the merge's first-parent diff."""


def parse_git_log(text: str, numstat: str = "") -> list[CommitItem]:
    """Commit items from ``git log -z`` in this module's format and its ``numstat`` stream."""
    tokens = text.split("\0")
    if tokens[-1] == "":
        tokens.pop()
    if len(tokens) % len(_FIELDS):
        raise _malformed(f"{len(tokens)} fields ({len(_FIELDS)} a commit)")
    stats = parse_numstat(numstat)
    commits: list[CommitItem] = []
    for at in range(0, len(tokens), len(_FIELDS)):
        raw = dict(zip(_FIELDS, tokens[at:at + len(_FIELDS)], strict=True))
        sha = raw["sha"].lstrip("\n")
        if not _SHA.fullmatch(sha) or not all(map(_SHA.fullmatch, raw["parents"].split())):
            raise _malformed(f"a commit id {sha[:40]!r}")
        additions, deletions, files = stats.get(sha, (0, 0, []))
        item: CommitItem = {"sha": sha, "subject": raw["subject"], "author": raw["author"],
                            "at": raw["at"], "additions": additions, "deletions": deletions,
                            "files": files}
        if len(raw["parents"].split()) > 1:
            item["merge"] = True
        if raw["body"].strip():
            item["message"] = raw["body"].strip()
        commits.append(item)
    return commits


def _git(repo: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), "-c", "core.quotepath=off", *args],
                              capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError:
        raise UsageError("git is not installed", where="--git",
                         fix="install git, or leave --git out") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"git log took over {GIT_TIMEOUT} s", where="--git",
                         fix="pass a narrower range (REPO@FROM..TO)") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["git failed"])[0]
        raise UsageError(f"git cannot read {repo}: {first}", where="--git",
                         fix="pass a repository folder and a range git log accepts "
                             "(e.g. --git .@main..HEAD)")
    return proc.stdout


def collect_git(spec: str, base: Path) -> Collected:
    """The commits of ``REPO[@RANGE]`` (REPO relative to ``base``) as ``commits`` evidence."""
    repo, rev = split_spec(spec, base)
    rev = rev or "HEAD"
    if rev.startswith("-"):
        raise UsageError(f"range {rev!r} looks like an option", where="--git",
                         fix="name a range or branch (e.g. main..HEAD)")
    common = ("--no-color", "--no-ext-diff", "-z", f"--max-count={MAX_COMMITS + 1}")
    out = _git(repo, "log", *common, f"--format={_FORMAT}", "--end-of-options", rev, "--")
    numstat = _git(repo, "log", *common, "--numstat", "--format=%H", "--end-of-options",
                   rev, "--")
    commits = parse_git_log(out, numstat)
    _add_merge_stats(repo, commits)
    diffs, diff_range = diff_excerpts(repo, rev)
    source: dict[str, Any] = {"kind": "git", "repo": spec.removesuffix(f"@{rev}"),
                              "range": rev,
                              "commits": min(len(commits), MAX_COMMITS)}
    if len(commits) > MAX_COMMITS:
        commits = commits[:MAX_COMMITS]
        source["limited"] = True
    facts = {
        "commits.total": len(commits),
        "commits.conventional": sum(bool(CONVENTIONAL.match(c["subject"])) for c in commits),
        "commits.additions": sum(c["additions"] for c in commits if not c.get("merge")),
        "commits.deletions": sum(c["deletions"] for c in commits if not c.get("merge")),
        "commits.files": sum(len(c["files"]) for c in commits if not c.get("merge")),
        "repo.conventional": uses_conventional(repo, rev),
    }
    source["diff"] = diff_range
    items = [*diffs, *commits]
    return Collected(source=source, evidence={"commits": items} if items else {},
                     facts=dict(facts))


# --- what the range changed ------------------------------------------------------------------

def parse_numstat_z(text: str) -> list[tuple[str, int, int]]:
    """``(path, added, deleted)`` from ``git diff --numstat -z --no-renames`` (binary: 0, 0).

    NUL-separated, so a path with a tab or a newline cannot shift the fields.
    """
    rows = []
    for record in text.split("\0"):
        parts = record.split("\t", 2)
        if len(parts) == 3 and parts[2]:
            rows.append((parts[2], _number(parts[0]), _number(parts[1])))
    return rows


def merge_stats(repo: Path, sha: str) -> list[tuple[str, int, int]]:
    """A merge commit's change against its first parent, file by file."""
    return parse_numstat_z(_git(repo, "diff", "--no-color", "--no-ext-diff", "--no-renames",
                                "--numstat", "-z", f"{sha}^1", sha, "--"))


def _add_merge_stats(repo: Path, commits: list[CommitItem]) -> None:
    merges = [c for c in commits if c.get("merge")][:MERGE_STATS]
    for commit in merges:
        rows = merge_stats(repo, commit["sha"])
        commit["additions"] = sum(r[1] for r in rows)
        commit["deletions"] = sum(r[2] for r in rows)
        commit["files"] = [r[0] for r in rows]
        commit["diffBase"] = "first-parent"


def diff_endpoints(repo: Path, rev: str) -> tuple[str, str]:
    """The (base, tip) whose diff is what ``rev`` changed.

    ``A..B`` and ``A...B``: from the merge base of A and B to B (what B brought, as a pull
    request's page shows it; for ``M^1..M`` that is the merge's first-parent diff). One
    revision: its own change against its first parent (the empty tree for a root commit).
    """
    for sep in ("...", ".."):
        if sep in rev:
            left, right = rev.split(sep, 1)
            left, right = left or "HEAD", right or "HEAD"
            base = _git(repo, "merge-base", "--end-of-options", left, right).strip()
            return base, right
    parent = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q",
                             "--end-of-options", f"{rev}^1"], capture_output=True, text=True,
                            timeout=GIT_TIMEOUT, check=False)
    return (parent.stdout.strip() if parent.returncode == 0 else _EMPTY_TREE), rev


def _hunks(patch: str) -> str:
    """A file's patch without its header lines (the item's title names the file)."""
    lines = patch.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(("@@", "Binary "))),
                 len(lines))
    return "\n".join(lines[start:])[:DIFF_CHARS]


def diff_excerpts(repo: Path, rev: str) -> tuple[list[dict[str, Any]], str]:
    """The range's diff as ``commits`` items, the most changed files first, and its range."""
    base, tip = diff_endpoints(repo, rev)
    shown = f"{base[:12]}..{tip}"
    rows = parse_numstat_z(_git(repo, "diff", "--no-color", "--no-ext-diff", "--no-renames",
                                "--numstat", "-z", base, tip, "--"))
    rows.sort(key=lambda r: (-(r[1] + r[2]), r[0]))
    items = []
    for path, added, deleted in rows[:DIFF_FILES]:
        patch = _git(repo, "diff", "--no-color", "--no-ext-diff", "--no-renames", "-U2",
                     base, tip, "--", f":(literal){path}")
        items.append({"id": f"diff:{path}", "subject": f"diff {path} (+{added} -{deleted})",
                      "path": path, "additions": added, "deletions": deleted,
                      "excerpt": _hunks(patch) or "(no text diff)"})
    if len(rows) > DIFF_FILES:
        more = rows[DIFF_FILES:]
        items.append({"id": "diff:more", "subject": f"{len(more)} more files changed "
                      f"(+{sum(r[1] for r in more)} -{sum(r[2] for r in more)}), not shown",
                      "files": [r[0] for r in more]})
    return items, shown


def uses_conventional(repo: Path, rev: str) -> bool:
    """Whether the project keeps Conventional Commits.

    It does when half or more of the first-parent subjects before the range are (the range
    itself when it has no history before it).
    """
    base, _ = diff_endpoints(repo, rev)
    start = base if base != _EMPTY_TREE else rev
    out = _git(repo, "log", "--no-color", "--first-parent", f"--max-count={CONVENTION_HISTORY}",
               "--format=%s", "--end-of-options", start, "--")
    subjects = [line for line in out.splitlines() if line.strip()]
    return bool(subjects) and 2 * sum(bool(CONVENTIONAL.match(s)) for s in subjects) \
        >= len(subjects)
