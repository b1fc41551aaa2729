"""The git adapter: the commits of a range or branch, read from the repository with ``git log``.

``--git REPO[@RANGE]``: REPO is a working tree or bare repository; RANGE is anything
``git log`` takes (``main..HEAD``, ``v1.2..v1.3``, a branch), default ``HEAD``. Each commit
becomes a ``commits`` item (sha, subject, author name, author time, lines and files changed,
the message body as its excerpt), newest first, cited by its sha. Author e-mail addresses are
left out: judging needs no personal data. At most :data:`MAX_COMMITS` are read.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from .case import Collected

__all__ = ["CONVENTIONAL", "MAX_COMMITS", "collect_git", "parse_git_log", "split_spec"]

MAX_COMMITS = 1000
"""Commits read from a range; the facts then cover the newest this many (recorded)."""
CONVENTIONAL = re.compile(
    r"^(?:build|chore|ci|docs|feat|fix|perf|refactor|revert|style|test)(?:\([^()\r\n]+\))?!?: \S",
    re.IGNORECASE)
"""A Conventional Commits subject with the config-conventional types (``feat(api)!: ...``)."""
GIT_TIMEOUT = 120
_FORMAT = "%x1e%H%x1f%an%x1f%aI%x1f%P%x1f%s%x1f%b%x1f"


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


def parse_git_log(text: str) -> list[dict[str, Any]]:
    """Commit items from the output of ``git log --numstat`` in this module's format."""
    commits = []
    for chunk in text.split("\x1e")[1:]:
        sha, author, at, parents, subject, body, stat = chunk.split("\x1f", 6)
        additions = deletions = 0
        files = []
        for line in stat.strip("\n").splitlines():
            parts = line.split("\t", 2)
            if len(parts) == 3:
                additions += _number(parts[0])
                deletions += _number(parts[1])
                files.append(parts[2])
        item: dict[str, Any] = {"sha": sha, "subject": subject, "author": author, "at": at,
                                "additions": additions, "deletions": deletions,
                                "files": files}
        if len(parents.split()) > 1:
            item["merge"] = True
        if body.strip():
            item["message"] = body.strip()
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
    out = _git(repo, "log", "--no-color", "--no-ext-diff", "--numstat",
               f"--max-count={MAX_COMMITS + 1}", f"--format={_FORMAT}", "--end-of-options",
               rev, "--")
    commits = parse_git_log(out)
    source: dict[str, Any] = {"kind": "git", "repo": spec.removesuffix(f"@{rev}"),
                              "range": rev,
                              "commits": min(len(commits), MAX_COMMITS)}
    if len(commits) > MAX_COMMITS:
        commits = commits[:MAX_COMMITS]
        source["limited"] = True
    facts = {
        "commits.total": len(commits),
        "commits.conventional": sum(bool(CONVENTIONAL.match(c["subject"])) for c in commits),
        "commits.additions": sum(c["additions"] for c in commits),
        "commits.deletions": sum(c["deletions"] for c in commits),
        "commits.files": sum(len(c["files"]) for c in commits),
    }
    return Collected(source=source, evidence={"commits": commits} if commits else {},
                     facts=dict(facts))
