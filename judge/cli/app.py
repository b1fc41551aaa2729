"""The command tree, loaded lazily: ``judge --help`` imports no command module.

Fifteen commands at the top, each a job a user can name; the rest are leaves of a few nouns
(``judges``, ``runs``, ``baseline``, ``cache``, ``suite``, ``rubric``, ``workspace``).
``judge --help`` lists the top from the table below; a command's module (and what it needs)
is imported only when that command runs, so modules import at the top like ordinary Python.
The old spellings are :mod:`judge.cli.aliases`'s.
"""

from __future__ import annotations

import functools
from importlib import import_module
from typing import Annotated, Any, Final

import typer

# typer (0.29) carries its own click; the commands it builds are of that click, so the lazy
# group derives from typer's group and takes its types from there (typer exports no public
# name for them; tests/cli/test_cli_help.py::test_typer_builds_commands_of_the_click_we_import).
from typer._click.core import Command, Context, Parameter
from typer._click.formatting import HelpFormatter
from typer.core import TyperArgument, TyperGroup

from .. import __version__

__all__ = ["COMMANDS", "GROUP", "LEAVES", "OLD_COMMANDS", "SHORT_HELP", "PipeClosed", "build_app",
           "forced_plain", "load_command", "rehearse", "set_plain", "walk"]

SHORT_HELP: Final = 200
"""Characters of a command's first sentence a group's listing shows (wrapped, never cut)."""
GROUP: Final = ""
"""The module of a top-level command that is a group of :data:`LEAVES`."""

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module under judge.cli, or GROUP; one-line help). The order is `judge --help`'s:
    # the everyday jobs first, then the nouns.
    "run": ("run_cmd", "Judge a suite: store the run, summarise, gate it; --offline "
                       "replays the cache."),
    "check": ("check_cmd", "Gate a stored run against its baseline, later or elsewhere (CI)."),
    "diff": ("diff_cmd", "What moved between two runs, case by case."),
    "compare": ("compare_cmd", "How far judges agree, with each other and with people."),
    "rescore": ("rescore_cmd", "Re-score a stored run under another rubric (no model call)."),
    "render": ("render_cmd", "The exact prompt a judge receives for a case (no model call)."),
    "review": ("review_cmd", "Label cases in the browser; labels in and out; what next."),
    "report": ("report_cmd", "A self-contained HTML report of a run, a diff, a judge swap."),
    "judges": (GROUP, "A judge's quality: agreement, calibrate, noise, canary, import, "
                      "pairwise, monitor, local."),
    "runs": (GROUP, "Stored runs: list, show, export, verify, upgrade, batch."),
    "baseline": (GROUP, "Baselines (baselines/<suite>.json): record, show, list, seal."),
    "cache": (GROUP, "The judgment cache: stats, export, import, verify, prune, push, pull."),
    "suite": (GROUP, "Suite files: validate, show, generate, collect, schema."),
    "rubric": (GROUP, "Rubric files: validate, list, show, schema, score."),
    "workspace": (GROUP, "This folder's settings and services: config, serve, worker, "
                         "reference."),
}

LEAVES: dict[str, dict[str, str]] = {
    # group: {leaf: module under judge.cli}. The order is the group's `--help`.
    "judges": {"agreement": "judges_agreement", "calibrate": "judges_calibrate",
               "noise": "judges_noise", "canary": "judges_canary", "import": "judges_import",
               "pairwise": "judges_pairwise", "monitor": "judges_monitor",
               "local": "judges_local"},
    "runs": {"list": "runs_cmds", "show": "runs_cmds", "export": "runs_cmds",
             "verify": "runs_store", "upgrade": "runs_store", "batch": "runs_batch"},
    "baseline": dict.fromkeys(("record", "show", "list", "seal"), "baseline_cmds"),
    "cache": dict.fromkeys(("stats", "export", "import", "verify", "prune", "push", "pull"),
                           "cache_cmds"),
    "suite": {"validate": "suite_cmds", "show": "suite_cmds", "generate": "suite_cmds",
              "collect": "suite_collect", "schema": "suite_cmds"},
    "rubric": dict.fromkeys(("validate", "list", "show", "schema", "score"), "rubric_cmds"),
    "workspace": {"config": "workspace_cmds", "serve": "workspace_serve",
                  "worker": "workspace_cmds", "reference": "workspace_cmds"},
}

OLD_COMMANDS: dict[str, str] = {
    # Old top-level names whose behaviour a new spelling does not give word for word: each
    # module registers them hidden (printing the one deprecation line) for one release.
    "history": "runs_cmds",
    "stability": "judges_noise",
    "noise": "judges_noise",
}


def _plain_argument(param: TyperArgument) -> None:
    """``SUITE`` (required) or ``[SUITE]`` in the usage line, and no ``<path>`` after it."""
    param.metavar = param.metavar or (param.name or "value").upper()
    usage = param.display_name_raw if param.required else f"[{param.display_name_raw}]"
    usage += "..." if param.nargs != 1 else ""
    setattr(param, "get_usage_pieces", lambda ctx: [usage])  # noqa: B010 - per instance
    setattr(param, "display_type_rich", lambda ctx: "")  # noqa: B010


def _conventional_metavars(command: Command) -> Command:
    """``--seed N``-style placeholders: typer's ``<int>``/``{suite}`` become ``SEED``/``SUITE``."""
    for param in command.params:
        if isinstance(param, TyperArgument):
            _plain_argument(param)
            continue
        shown = param.metavar
        if shown is None or shown.startswith(("<", "{")):
            param.metavar = (param.name or "value").upper()
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _conventional_metavars(sub)
    return command


_plain = [False]
"""``--plain`` seen in this invocation (reset by the root command each time)."""

_PLAIN_HELP = "Plain lines, every value whole, no colour (the default off a terminal)."


def set_plain(flag: bool) -> None:
    """Record ``--plain`` for this invocation; judge.cli.output reads it."""
    _plain[0] = flag


def forced_plain() -> bool:
    """Whether ``--plain`` was given."""
    return _plain[0]


def _plain_flag(ctx: Context, param: Parameter, value: bool) -> None:
    if value:
        set_plain(True)


def _plain_param() -> Parameter:
    """A ``--plain`` option as typer builds one, not passed to the command's function."""
    probe = typer.Typer()

    @probe.command()
    def _probe(plain: Annotated[bool, typer.Option("--plain", help=_PLAIN_HELP)] = False,
               ) -> None:
        """Only here for its option."""

    (param,) = [p for p in typer.main.get_command(probe).params if p.name == "plain"]
    param.expose_value = False
    param.callback = _plain_flag
    return param


def _with_plain(command: Command, param: Parameter | None = None) -> Command:
    """Every command takes ``--plain`` (as ``judge --plain CMD`` does)."""
    param = param or _plain_param()
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _with_plain(sub, param)
    elif not any(p.name == "plain" for p in command.params):
        command.params.append(param)
    return command


def _list_commands(group: TyperGroup, ctx: Context, formatter: HelpFormatter) -> None:
    """A group's commands, each with its help's first sentence whole (click cuts it at 45)."""
    rows = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None and not command.hidden:
            rows.append((name, command.get_short_help_str(limit=SHORT_HELP)))
    if rows:
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _panel_sections(command: Command, panels: dict[str, str]) -> Command:
    """Options under their panel's heading (``panels``: parameter name to heading).

    typer draws ``rich_help_panel`` only with rich markup, which the CLI leaves off (plain
    help is faster and reads the same in a log); click's formatter writes one section per
    panel, in the order first declared. A group lists its commands' first sentences whole.
    """
    if isinstance(command, TyperGroup):
        setattr(command, "format_commands",  # noqa: B010 - per instance
                lambda ctx, formatter: _list_commands(command, ctx, formatter))
        for sub in command.commands.values():
            _panel_sections(sub, panels)
        return command
    for param in command.params:
        if param.name in panels:
            setattr(param, "rich_help_panel", panels[param.name])  # noqa: B010
    if not any(getattr(p, "rich_help_panel", None) for p in command.params):
        return command

    def format_options(ctx: Context, formatter: HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            name = "Arguments" if param.param_type_name == "argument" else (
                getattr(param, "rich_help_panel", None) or panels.get(param.name or "")
                or "Options")
            sections.setdefault(name, []).append(record)
        for name, rows in sections.items():
            with formatter.section(name):
                formatter.write_dl(rows)

    setattr(command, "format_options", format_options)  # noqa: B010 - per instance
    return command


def _leaf(path: str) -> tuple[Command, dict[str, str]]:
    """The command at ``path`` (``run``, ``judges agreement``), its module imported.

    With it, the help panel of each option its module names (the module's ``PANELS``).
    """
    *group, name = path.split()
    module_name = (LEAVES[group[0]][name] if group else
                   COMMANDS[name][0] if name in COMMANDS else OLD_COMMANDS[name])
    module = import_module(f".{module_name}", __package__)
    sub = typer.Typer(pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None)
    if group or name not in OLD_COMMANDS:
        module.register(sub)
    else:
        module.register_old(sub)
    built = typer.main.get_command(sub)
    panels: dict[str, str] = getattr(module, "PANELS", {}).get(name, {})
    if isinstance(built, TyperGroup):
        found = built.commands.get(name)
        if found is None:  # pragma: no cover - a table entry its module does not register
            raise LookupError(f"module {module_name} does not define command {name!r}")
        return found, panels
    return built, panels


@functools.cache
def load_command(path: str) -> Command:
    """The click command at ``path`` (``run``, ``judges agreement``); built once.

    A group of :data:`LEAVES` loads its leaves as they are asked for. Built once per process:
    a command holds no state of an invocation (that is the context's), so the warm worker's
    parent builds every one before it forks (:func:`judge.cli.warm`) and no child reads the
    signatures again (37-90 ms a command, measured).
    """
    words = path.split()
    if len(words) == 1 and words[0] in LEAVES:
        name = words[0]
        return _LazyGroup(name=name, help=COMMANDS[name][1], no_args_is_help=True,
                          leaves=LEAVES[name], rich_markup_mode=None)
    command, panels = _leaf(path)
    return _panel_sections(_with_plain(_conventional_metavars(command)), panels)


def walk(path: str = "") -> list[tuple[str, Command]]:
    """Every command under ``path`` (the whole tree by default), groups and leaves, in order."""
    found: list[tuple[str, Command]] = []
    names = LEAVES.get(path, {}) if path else COMMANDS
    for name in names:
        full = f"{path} {name}".strip()
        command = load_command(full)
        found.append((full, command))
        if isinstance(command, _LazyGroup):
            found += walk(full)
        elif isinstance(command, TyperGroup):
            found += _nested(full, command)
    return found


def _nested(path: str, group: TyperGroup) -> list[tuple[str, Command]]:
    found: list[tuple[str, Command]] = []
    for name, sub in group.commands.items():
        found.append((f"{path} {name}", sub))
        if isinstance(sub, TyperGroup):
            found += _nested(f"{path} {name}", sub)
    return found


def rehearse(command: Command) -> None:
    """Parse an empty command line for ``command`` and its subcommands, leniently, and drop it.

    typer builds a parameter's coercion (a pydantic adapter) on its first parse and keeps
    it on the parameter: the warm worker's parent parses once so its children do not.
    Nothing runs: the context is never invoked, and the only callbacks on these parameters
    (``--plain``'s, the root's ``--version``) act on a true value alone.
    """
    with command.make_context(command.name, [], resilient_parsing=True):
        pass
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            rehearse(sub)


class PipeClosed(Exception):
    """The reader of stdout went away; raised past click, which would turn it into exit 1."""


class _LazyGroup(TyperGroup):
    """A group whose commands are imported when asked for: the root, and each noun's leaves."""

    def __init__(self, *, leaves: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.leaves = leaves

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise PipeClosed() from exc

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS if self.leaves is None else self.leaves)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if self.leaves is not None:
            return load_command(f"{self.name} {cmd_name}") if cmd_name in self.leaves else None
        if cmd_name in COMMANDS or cmd_name in OLD_COMMANDS:
            return load_command(cmd_name)
        return None

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        if self.leaves is not None:
            _list_commands(self, ctx, formatter)
            return
        rows = [(name, text) for name, (_, text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"judge (judgeflow) {__version__}")
        raise typer.Exit()


def build_app() -> Command:
    """The ``judge`` command group."""
    app = typer.Typer(cls=_LazyGroup, name="judge", no_args_is_help=True,
                      pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None,
                      help="judgeflow: LLM judges with a deterministic core, an input-hash "
                           "cache and offline replay.")

    @app.callback()
    def _root(version: Annotated[bool, typer.Option(
            "--version", callback=_version, is_eager=True,
            help="Print the version and exit.")] = False,
              plain: Annotated[bool, typer.Option("--plain", help=_PLAIN_HELP)] = False,
              ) -> None:
        """The root group; the work is in its commands."""
        set_plain(plain)

    return typer.main.get_command(app)
