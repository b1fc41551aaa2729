"""Old spellings of commands and flags: each still works, for one release, after one line on stderr.

Most old names are the new command under another spelling: the command line is rewritten
before it is parsed (``judge history -n 5`` runs ``judge runs list -n 5``), so stdout and the
exit code are the new command's to the byte. The few whose behaviour no new spelling gives
word for word (``history --agreement``, ``stability``, ``noise measure``) are kept as hidden
commands of their modules (:data:`judge.cli.app.OLD_COMMANDS`). Either way the line on
stderr is :func:`deprecation`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

__all__ = ["RENAMED", "ROOT_FLAGS", "deprecation", "new_spelling", "say_deprecated",
           "say_setting"]

RENAMED: Final[dict[tuple[str, ...], tuple[str, ...]]] = {
    # old words: new words. The longest old spelling that starts the command line wins.
    ("agreement",): ("judges", "agreement"),
    ("calibrate",): ("judges", "calibrate"),
    ("canary",): ("judges", "canary"),
    ("import",): ("judges", "import"),
    ("pairwise",): ("judges", "pairwise"),
    ("monitor",): ("judges", "monitor"),
    ("local",): ("judges", "local"),
    ("local", "serve"): ("judges", "local", "start"),
    ("noise", "probe"): ("judges", "noise", "--probe"),
    ("show",): ("runs", "show"),
    ("export",): ("runs", "export"),
    ("store",): ("runs",),
    ("store", "upgrade"): ("runs", "upgrade"),
    ("store", "verify"): ("runs", "verify"),
    ("batch",): ("runs", "batch"),
    ("score",): ("rubric", "score"),
    ("collect",): ("suite", "collect"),
    ("schema", "suite"): ("suite", "schema"),
    ("schema", "rubric"): ("rubric", "schema"),
    ("schema", "reference"): ("workspace", "reference"),
    ("config",): ("workspace", "config"),
    ("serve",): ("workspace", "serve"),
    ("worker",): ("workspace", "worker"),
}

ROOT_FLAGS: Final = frozenset({"--plain"})
"""Options of ``judge`` itself that may come before the command."""

_said = [False]


def deprecation(old: Sequence[str], new: Sequence[str]) -> str:
    """The one line an old spelling prints on stderr."""
    return (f"`judge {' '.join(old)}` is now `judge {' '.join(new)}`; the old name goes in "
            "the next release")


def say_deprecated(old: Sequence[str], new: Sequence[str]) -> None:
    """Print :func:`deprecation`'s line on stderr, once per invocation."""
    if not _said[0]:
        _said[0] = True
        print(deprecation(old, new), file=sys.stderr, flush=True)


def say_setting(command: str, flag: str, setting: str, variable: str) -> None:
    """Print, once, that a command's flag is now a setting (and how to set it)."""
    if not _said[0]:
        _said[0] = True
        print(f"`{command} {flag}` is now the setting {setting} ({variable}=... or judge.toml); "
              "the flag goes in the next release", file=sys.stderr, flush=True)


def new_spelling(args: Sequence[str]) -> list[str]:
    """``args`` with an old spelling of the command replaced by the new one (and said once).

    Arguments of ``judge`` itself (``--plain``) may come first; anything else is left as it is.
    """
    _said[0] = False
    start = 0
    while start < len(args) and args[start] in ROOT_FLAGS:
        start += 1
    words = tuple(args[start:start + 2])
    for old in (words[:2], words[:1]):
        new = RENAMED.get(old) if len(old) else None
        if new is not None:
            say_deprecated(old, new)
            return [*args[:start], *new, *args[start + len(old):]]
    return list(args)
