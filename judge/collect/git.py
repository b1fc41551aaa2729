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

__all__ = ["CONVENTIONAL", "MAX_COMMITS", "collect_git", "parse_git_log", "parse_numstat",
           "split_spec"]

MAX_COMMITS = 1000
"""Commits read from a range; the facts then cover the newest this many (recorded)."""
CONVENTIONAL = re.compile(
    r"^(?:build|chore|ci|docs|feat|fix|perf|refactor|revert|style|test)(?:\([^()\r\n]+\))?!?: \S",
    re.IGNORECASE)
"""A Conventional Commits subject with the config-conventional types (``feat(api)!: ...``)."""
GIT_TIMEOUT = 120


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


def parse_git_log(text: str, numstat: str = "") -> list[dict[str, Any]]:
    """Commit items from ``git log -z`` in this module's format and its ``numstat`` stream."""
    tokens = text.split("\0")
    if tokens[-1] == "":
        tokens.pop()
    if len(tokens) % len(_FIELDS):
        raise _malformed(f"{len(tokens)} fields ({len(_FIELDS)} a commit)")
    stats = parse_numstat(numstat)
    commits = []
    for at in range(0, len(tokens), len(_FIELDS)):
        raw = dict(zip(_FIELDS, tokens[at:at + len(_FIELDS)], strict=True))
        sha = raw["sha"].lstrip("\n")
        if not _SHA.fullmatch(sha) or not all(map(_SHA.fullmatch, raw["parents"].split())):
            raise _malformed(f"a commit id {sha[:40]!r}")
        additions, deletions, files = stats.get(sha, (0, 0, []))
        item: dict[str, Any] = {"sha": sha, "subject": raw["subject"], "author": raw["author"],
                                "at": raw["at"], "additions": additions,
                                "deletions": deletions, "files": files}
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
