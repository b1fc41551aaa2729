"""The ``judge`` command: parse, call one operation of :mod:`judge.app`, render its result.

Process-wide tuning (environment defaults for LiteLLM, the collector's thresholds) happens
here, once, at the entry point — never inside a library call. So does the one rule for a
closed pipe (``judge run … | head``): stop quietly with 128 + SIGPIPE = 141, as a Unix tool
killed by SIGPIPE would, instead of a traceback or click's silent 1.

Layer: door. May import: the application and everything below it, and the server
(``judge workspace serve``); only ``judge.__main__`` imports the CLI.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from ..core.text.errors import ConfigError, JudgeError, StoreError, UsageError
from ..core.text.secrets import Redactor, secret_values
from ..core.text.strict_json import string_problem
from ..system.tuning import tune_process
from .aliases import new_spelling
from .app import PipeClosed, build_app, rehearse, walk

__all__ = ["PIPE_CLOSED", "explain", "main", "print_error", "warm"]

PIPE_CLOSED = 141
"""Exit status when the reader of stdout went away: 128 + SIGPIPE (13)."""


def _pipe_closed() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail, then exit 141."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # not a real file (a test's buffer)
        fd = None
    if fd is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
    sys.exit(PIPE_CLOSED)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``judge`` console script.

    Called with ``argv`` None it owns the process (the console script, ``python -m judge``)
    and tunes it; called with arguments (from another program) it leaves the process alone.
    """
    if argv is None:
        tune_process()
    args = new_spelling(sys.argv[1:] if argv is None else argv)
    app = build_app()
    try:
        _check_arguments(sys.argv[1:] if argv is None else argv)
        app.main(args=args, prog_name="judge", standalone_mode=True)
        sys.stdout.flush()  # a pipe closed after the last write shows up here
    except (PipeClosed, BrokenPipeError):
        _pipe_closed()
    except JudgeError as exc:
        _error(*explain(exc))
    except Exception as exc:  # a bug of ours: one readable line unless asked for more
        if os.environ.get("JUDGE_DEBUG"):
            raise
        _error(f"internal error: {type(exc).__name__}: {exc}\n  this is a bug in judgeflow; "
               "run again with JUDGE_DEBUG=1 for the traceback", 70)


def _check_arguments(args: list[str]) -> None:
    """Refuse an argument that is not text: a byte that is not UTF-8 reads as a lone surrogate.

    Such a value breaks its first UTF-8 write (a run id looked up, a group stored, a cache
    key): exit 70 before. A path to a file that exists is taken as it is (a file name may
    hold any bytes); anything else is refused here, exit 2, before a command runs.
    """
    for number, arg in enumerate(args, start=1):
        why = string_problem(arg)
        if why is not None and not os.path.lexists(arg):
            flag = args[number - 2] if number > 1 and args[number - 2].startswith("-") else None
            raise UsageError(f"not text: {why}", where=f"argument {number}" + (
                f" (the value of {flag})" if flag else ""),
                             fix="pass it in UTF-8; a file name that is not UTF-8 is taken "
                                 "only for a file that exists")


def warm() -> None:
    """What the warm worker holds before it forks: every command built, LiteLLM warmed.

    The commands, not only the group: `judge --help` loads a command's module when it is
    asked for, and ``run``'s alone (the store, the gate, the diff) is most of a cold run's
    start-up; each is built once (:func:`judge.cli.app.load_command`). LiteLLM is imported
    as a run imports it (``load_litellm``): the bundled price map, no fetch over the
    network, so a worker starts in the import's time; then what its first completion would
    do lazily is done here (:func:`judge.llm.client.warm_first_call`, for the workspace's
    judges when its settings read). So are diskcache's import, the code digest (a pure
    function of the installed files, which the worker's digest watches), the rubrics and
    templates the workspace sees (kept per text, so an edit is read anew). All of it
    with the collector off, then frozen (:func:`judge.system.tuning.load_frozen`).
    """
    from ..system.tuning import load_frozen

    load_frozen(_load_everything)


def _load_everything() -> None:
    build_app()
    for _, command in walk():
        rehearse(command)
    # Not at the top: `judge --help` stays light.
    from ..app.workspace.settings import load_settings
    from ..cache.disk import preload as preload_cache
    from ..engine.replay import code_digest
    from ..llm.client import warm_first_call

    preload_cache()
    code_digest()
    # A folder it cannot read leaves these unwarmed: each command then reads for itself.
    with contextlib.suppress(JudgeError, OSError):
        _parse_rubrics(Path.cwd())
    with contextlib.suppress(JudgeError, OSError):
        _compile_templates(Path.cwd())
    try:
        models = load_settings(Path.cwd(), None, os.environ)[0].model
    except JudgeError:  # a bad settings file: every command names it; nothing to warm for
        models = ()
    try:
        warm_first_call(models)
    except ImportError:  # an install without litellm: its commands say so when run
        pass


def _parse_rubrics(workspace: Path) -> None:
    """Parse every rubric the workspace sees, and its output schema, before the fork.

    Kept per text (:func:`judge.system.resources.load_rubric`): a child reads the file and
    finds it parsed, or parses an edited one anew.
    """
    from ..core.formats.output_schema import output_schema_json
    from ..system.resources import list_rubrics, load_rubric

    for path in list_rubrics(workspace).values():
        try:
            output_schema_json(load_rubric(path, workspace), ("id",))
        except JudgeError:  # a broken rubric: the command that uses it names the error
            continue


def _compile_templates(workspace: Path) -> None:
    """Open a renderer on every template the workspace sees, before the fork.

    The renderer keeps compiled templates and their references per source text
    (judge.render.prompts): a child's renderer reads the files and finds them compiled, or
    compiles an edited one anew.
    """
    from ..render.prompts import TEMPLATE_SUFFIX, PromptRenderer
    from ..system.resources import shipped_dir

    names = {p.name for d in (workspace / "prompts", shipped_dir("prompts")) if d.is_dir()
             for p in d.glob(f"*{TEMPLATE_SUFFIX}")}
    for name in sorted(names):
        try:
            PromptRenderer(name, workspace)
        except JudgeError:  # a broken template: the command that uses it names the error
            continue


def explain(exc: JudgeError) -> tuple[str, int]:
    """The line a failed command prints, and its exit code.

    Bad input (a file, the place and the fix) and an unreadable store exit 2, any other
    judge error 1.
    """
    if isinstance(exc, ConfigError):
        return f"error: {exc.render()}", 2
    return f"error: {exc}", 2 if isinstance(exc, StoreError) else 1


def print_error(exc: JudgeError) -> int:
    """Print :func:`explain`'s line (credentials masked) on stderr; its exit code."""
    text, code = explain(exc)
    _say(text)
    return code


def _say(text: str) -> None:
    print(Redactor(secret_values(os.environ))(text), file=sys.stderr)


def _error(text: str, code: int) -> None:
    """Print an error with every credential of the environment masked, and exit ``code``."""
    _say(text)
    sys.exit(code)
