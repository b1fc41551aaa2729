"""The command tree, loaded lazily: ``judge --help`` imports no command module.

``judge --help`` lists every command from the table below; a command's module (and what it
needs) is imported only when that command runs, so modules import at the top like ordinary
Python.
"""

from __future__ import annotations

import functools
from importlib import import_module
from typing import Annotated, Any

import typer

# typer (0.29) carries its own click; the commands it builds are of that click, so the lazy
# group derives from typer's group and takes its types from there (typer exports no public
# name for them; tests/cli/test_cli_help.py::test_typer_builds_commands_of_the_click_we_import).
from typer._click.core import Command, Context, Parameter
from typer._click.formatting import HelpFormatter
from typer.core import TyperArgument, TyperGroup

from .. import __version__

__all__ = ["COMMANDS", "PipeClosed", "build_app", "forced_plain", "load_command", "rehearse",
           "set_plain"]
COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module under judge.cli, one-line help). The order is `judge --help`'s: the daily
    # loop first.
    "run": ("run_cmd", "Judge a suite, store the run, summarise, compare with the baseline."),
    "check": ("baseline_cmds", "Compare a stored run with its suite's baseline: the gate."),
    "baseline": ("baseline_cmds", "Record, show and list baselines (baselines/<suite>.json)."),
    "rescore": ("rescore_cmds", "Re-score a stored run under another rubric (no model call)."),
    "compare": ("compare_cmd", "How far judges agree: κ, r, ρ, τ, band flips, vs human labels."),
    "agreement": ("agreement_cmd", "Agreement with people's labels per run, judge, template."),
    "import": ("import_cmd", "Store judgments recorded elsewhere as runs of their judges."),
    "review": ("review_cmds", "Review verdicts in the browser; labels in and out; what next."),
    "calibrate": ("review_cmds", "Fit a monotone map from a judge's AI scores to people's labels."),
    "diff": ("diff_cmds", "What moved between two runs, case by case."),
    "report": ("report_cmd", "Write a self-contained HTML report of a run, a diff, a judge swap."),
    "stability": ("diff_cmds", "Cases whose band differs between the samples of a run."),
    "noise": ("noise_cmds", "Measure a judge's noise (a --samples run or a probe) for the gate."),
    "pairwise": ("pairwise_cmd", "Judge pairs of outputs in both orders; flip rate."),
    "render": ("render_cmd", "Print the exact prompt a case is judged with."),
    "monitor": ("baseline_cmds", "Production monitor: sample judged records, check pass rate."),
    "batch": ("batch_cmds", "Provider batch jobs of `judge run --batch`: status, wait, collect."),
    "canary": ("canary_cmd", "Re-ask a sample of cached judgments live: has the judge drifted?"),
    "history": ("store_cmds", "List stored runs, newest first."),
    "show": ("store_cmds", "Show a stored run: settings, hashes, totals and its cases."),
    "export": ("store_cmds", "Write a run's case results as JSON lines or CSV."),
    "store": ("store_admin_cmd", "Upgrade the run store's schema; verify its seals."),
    "score": ("core_cmds", "Final and overall scores from a file of scores (no model)."),
    "rubric": ("core_cmds", "Validate, list and show rubrics."),
    "suite": ("suite_cmds", "Generate, validate and show suites."),
    "collect": ("collect_cmd", "Build a case from git, test reports, reviews, CI and agent logs."),
    "schema": ("schema_cmd", "Print the JSON Schema of suite or rubric files, or their reference."),
    "cache": ("cache_cmds", "Inspect, export, import, verify and prune the judgment cache."),
    "config": ("rescore_cmds", "Show the effective settings and where each came from."),
    "local": ("local_cmds", "Run the embedded local judge (llama.cpp) on this machine."),
    "serve": ("serve_cmd", "Serve the harness over HTTP: runs, baselines, monitor, metrics."),
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

_PLAIN_HELP = ("Plain lines even on a terminal: one line per row, every value whole, no "
               "colour (the default when stdout is not a terminal).")


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


@functools.cache
def load_command(name: str) -> Command:
    """The click command ``name`` (one of :data:`COMMANDS`), its module imported; built once.

    Built once per process: a command holds no state of an invocation (that is the
    context's), so the warm worker's parent builds every one before it forks
    (:func:`judge.cli.warm`) and no child reads the signatures again (37-90 ms a command,
    measured).
    """
    module_name, _ = COMMANDS[name]
    module = import_module(f".{module_name}", __package__)
    sub = typer.Typer(pretty_exceptions_enable=False, add_completion=False, rich_markup_mode=None)
    module.register(sub)
    built = typer.main.get_command(sub)
    if isinstance(built, TyperGroup):
        found = built.commands.get(name)
        if found is None:  # pragma: no cover - a table entry its module does not register
            raise LookupError(f"module {module_name} does not define command {name!r}")
        return _with_plain(_conventional_metavars(found))
    return _with_plain(_conventional_metavars(built))


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
    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise PipeClosed() from exc

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in COMMANDS:
            return None
        return load_command(cmd_name)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
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
