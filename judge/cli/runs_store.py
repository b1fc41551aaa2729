"""``judge runs upgrade`` and ``judge runs verify``: the run store's schema and its seals."""

from __future__ import annotations

from typing import Annotated

import typer

from ..app.admin.store import upgrade_store, verify_store
from ..app.workspace.workspace import Workspace
from .output import console, emit_json

__all__ = ["register"]

# Declared once for both commands, in their own shorter help than cli.options's shared ones.
_StoreOption = Annotated[str | None, typer.Option(
    "--store", metavar="URL", help="Run store URL (default: setting store_url).")]
_JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def register(app: typer.Typer) -> None:
    """Add ``upgrade`` and ``verify`` to ``app``."""
    app.command("upgrade")(upgrade)
    app.command("verify")(verify)


def upgrade(
    store: _StoreOption = None,
    json_out: _JsonFlag = False,
) -> None:
    """Bring the run store's schema to this judgeflow's revision (every pending migration).

    Additive migrations are applied on open anyway; this also applies those that change
    existing data, so back the store up first. Exit 2: the store is newer than this
    judgeflow, or cannot be opened.
    """
    done = upgrade_store(Workspace.open(overrides={"store_url": store}))
    if json_out:
        emit_json({"store": done.url, "before": done.before, "after": done.after,
                   "changed": done.changed})
        return
    if not done.changed:
        console().print(f"{done.url}: already at schema revision {done.after}")
        return
    before = "empty" if done.before is None else f"revision {done.before}"
    legacy = " (from before migrations)" if done.stamped_legacy else ""
    console().print(f"{done.url}: upgraded from {before}{legacy} to revision {done.after}")


def verify(
    store: _StoreOption = None,
    json_out: _JsonFlag = False,
) -> None:
    """Check the seal of every stored run, result and label; list the rows that do not match.

    Exit 0: every row verifies. Exit 2: at least one row is damaged (each is named with its
    run and case; its score is never shown by any command), a complete run lost a row, or,
    with JUDGE_CACHE_SECRET set, a row carries no seal.
    """
    verdict = verify_store(Workspace.open(overrides={"store_url": store}))
    if json_out:
        emit_json({"store": verdict.url, "checked": verdict.checked,
                   "unsealed": verdict.unsealed, "keyed": verdict.keyed,
                   "damaged": [{"run": d.run, "case": d.case, "model": d.model,
                                "sample": d.sample, "label": d.label, "reason": d.reason}
                               for d in verdict.damaged]})
    else:
        out = console()
        for damage in verdict.damaged:
            out.print(f"damaged: {damage.sentence()}", markup=False)
        key = "keyed with JUDGE_CACHE_SECRET" if verdict.keyed else "plain sha256"
        unsealed = "refused under the secret" if verdict.keyed else "written before sealing"
        out.print(f"{verdict.url}: {verdict.checked} rows checked ({key}), "
                  f"{len(verdict.damaged)} damaged, {verdict.unsealed} unsealed "
                  f"({unsealed})", markup=False)
        if verdict.damaged:
            out.print("  fix: re-run the damaged runs' suites (cached judgments replay at no "
                      "cost) or restore the store from a backup; import a damaged label's "
                      "labels file again (`judge review RUN --import FILE`)", markup=False)
    if verdict.damaged:
        raise typer.Exit(2)
