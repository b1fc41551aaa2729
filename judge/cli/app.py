"""Assembles the command tree from the command modules."""

from __future__ import annotations

import typer

from . import (
    baseline_cmds,
    cache_cmds,
    compare_cmd,
    core_cmds,
    diff_cmds,
    local_cmds,
    pairwise_cmd,
    render_cmd,
    rescore_cmds,
    run_cmd,
    store_cmds,
    suite_cmds,
)

__all__ = ["build_app"]


def build_app() -> typer.Typer:
    """The ``judge`` Typer application."""
    app = typer.Typer(
        name="judge",
        help="judgeflow: LLM judges with a deterministic core, an input-hash cache and "
             "offline replay.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    # Registration order is the order `judge --help` lists: the daily loop first.
    run_cmd.register(app)
    baseline_cmds.register(app)
    rescore_cmds.register(app)
    compare_cmd.register(app)
    diff_cmds.register(app)
    pairwise_cmd.register(app)
    render_cmd.register(app)
    core_cmds.register(app)
    store_cmds.register(app)
    suite_cmds.register(app)
    cache_cmds.register(app)
    local_cmds.register(app)
    return app
