"""``judge cache``: inspect, export, import, verify, prune, push and pull the judgment cache.

``push`` and ``pull`` copy between the local folder and the shared tier (``cache_url``).
The work is in :mod:`judge.app.admin.cache_ops`; these commands parse flags and print results.
The folder is the ``cache_dir`` setting (``--cache-dir``, ``JUDGE_CACHE_DIR``, judge.toml),
as for ``judge run``; ``--dir`` is kept as a hidden alias.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from ..app.admin.cache_ops import (
    PruneRequest,
    SharedTierStats,
    TierCopyReport,
    cache_stats,
    export_cache,
    export_cache_file,
    import_cache,
    import_cache_file,
    prune_cache,
    pull_cache,
    push_cache,
    verify_cache,
)
from ..app.workspace.workspace import Workspace
from ..core.text.errors import UsageError
from .options import AllowUnsignedShared, CacheDirOption, JsonFlag
from .output import Cell, console, emit_json, plural, table

__all__ = ["register"]

DirAlias = Annotated[str | None, typer.Option("--dir", hidden=True, help="Old name of "
                                                                          "--cache-dir.")]
CacheUrlOption = Annotated[str | None, typer.Option(
    "--cache-url", metavar="URL",
    help="Shared cache tier (default: setting cache_url, env JUDGE_CACHE_URL).")]


def register(app: typer.Typer) -> None:
    """Add the leaves of ``judge cache`` (stats, export, import, verify, prune, push, pull)."""
    app.command("stats")(cache_stats_cmd)
    app.command("export")(cache_export_cmd)
    app.command("import")(cache_import_cmd)
    app.command("verify")(cache_verify_cmd)
    app.command("prune")(cache_prune_cmd)
    app.command("push")(cache_push_cmd)
    app.command("pull")(cache_pull_cmd)


def _workspace(cache_dir: str | None, alias: str | None, cache_url: str | None = None,
               allow_unsigned: bool = False) -> Workspace:
    return Workspace.open(overrides={"cache_dir": cache_dir or alias, "cache_url": cache_url,
                                     "cache_allow_unsigned": allow_unsigned or None})


def _print_shared(shared: SharedTierStats) -> None:
    rows: list[list[Cell]] = [["url", shared.url]]
    if not shared.reachable:
        rows.append(["reachable", Text.assemble(("no", "red"), f": {shared.error or ''}")])
    else:
        rows += [["entries", str(shared.entries)], ["size", f"{shared.bytes / 1e6:.1f} MB"],
                 ["rejected", Text.assemble((str(shared.rejected), "red"),
                                            " (digest or signature failed: ignored)")
                  if shared.rejected else "0"]]
        rows += [["", key] for key in shared.rejected_keys]
    table(["", ""], rows, title="shared cache tier", show_header=False)


def _copied(report: TierCopyReport, json_out: bool) -> None:
    if json_out:
        emit_json(report.model_dump(mode="json"))
    else:
        for key in report.rejected_keys:
            typer.echo(f"✗ {key}: corrupt in the source, not copied", err=True)
        where = "to" if report.direction == "push" else "from"
        typer.echo(f"{report.direction} {where} {report.url}: added {report.added}, "
                   f"kept {report.kept} already there, rejected {report.rejected}")
    if report.rejected:
        raise typer.Exit(1)


def cache_push_cmd(cache_dir: CacheDirOption = None, alias: DirAlias = None,
                   cache_url: CacheUrlOption = None, json_out: JsonFlag = False) -> None:
    """Copy local entries to the shared tier (batched; kept if there). Exit 1 if any corrupt."""
    _copied(push_cache(_workspace(cache_dir, alias, cache_url)), json_out)


def cache_pull_cmd(cache_dir: CacheDirOption = None, alias: DirAlias = None,
                   cache_url: CacheUrlOption = None,
                   allow_unsigned_shared: AllowUnsignedShared = False,
                   json_out: JsonFlag = False) -> None:
    """Copy shared entries into the local cache (each checked). Exit 1 if any rejected."""
    _copied(pull_cache(_workspace(cache_dir, alias, cache_url, allow_unsigned_shared)),
            json_out)


def cache_stats_cmd(cache_dir: CacheDirOption = None, alias: DirAlias = None,
                    cache_url: CacheUrlOption = None,
                    allow_unsigned_shared: AllowUnsignedShared = False,
                    json_out: JsonFlag = False) -> None:
    """Count entries per model, their age and the bytes on disk (and the shared tier's)."""
    ws = _workspace(cache_dir, alias, cache_url, allow_unsigned_shared)
    stats = cache_stats(ws)
    if json_out:
        emit_json(stats.model_dump(mode="json"))
        return
    shown = ws.settings.cache_dir
    if not stats.exists:
        console().print(f"no cache at {shown}", markup=False)
        if stats.shared is not None:
            _print_shared(stats.shared)
        return
    rows: list[list[Cell]] = [["entries", str(stats.entries)]]
    if stats.corrupt:
        rows.append(["corrupt", Text.assemble((str(stats.corrupt), "red"),
                                              " (see judge cache verify)")])
    rows += [["on disk", f"{stats.bytes / 1e6:.1f} MB"], ["oldest", stats.oldest or "—"],
             ["newest", stats.newest or "—"],
             ["replay index", plural(stats.index_records, "record")]]
    rows += [[f"model {model}", str(count)] for model, count in stats.models.items()]
    table(["", ""], rows, title=f"judgment cache at {shown}", show_header=False)
    if stats.shared is not None:
        _print_shared(stats.shared)


def cache_export_cmd(
    file: Annotated[str, typer.Argument(metavar="FILE.jsonl", help="Output file, - for stdout.")],
    cache_dir: CacheDirOption = None,
    alias: DirAlias = None,
) -> None:
    """Write every entry as one canonical JSON line, sorted by key (a stable file for git)."""
    ws = _workspace(cache_dir, alias)
    if file == "-":
        stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
        report = export_cache(ws, stream)
        stream.flush()
        stream.detach()
    else:
        report = export_cache_file(ws, Path(file))
    signed = " (signed with JUDGE_CACHE_SECRET)" if report.signed else ""
    typer.echo(f"exported {plural(report.exported, 'entry', 'entries')} from "
               f"{ws.settings.cache_dir}{signed}", err=True)
    for key, why in report.corrupt.items():
        typer.echo(f"✗ left out {key}: {why}", err=True)
    if report.left_out:
        left = plural(report.left_out, "corrupt entry", "corrupt entries")
        typer.echo(f"warning: {left} left out (judge cache verify --repair removes them)",
                   err=True)
    if report.changed:
        typer.echo(f"note: {plural(report.changed, 'entry', 'entries')} being rewritten during "
                   "the export are not in it", err=True)


def cache_import_cmd(
    file: Annotated[str, typer.Argument(metavar="FILE.jsonl", help="Input file, - for stdin.")],
    cache_dir: CacheDirOption = None,
    alias: DirAlias = None,
    require_signed: Annotated[bool, typer.Option(
        "--require-signed",
        help="Refuse every line not signed with JUDGE_CACHE_SECRET (unsigned or edited).")
    ] = False,
    allow_unsigned: Annotated[bool, typer.Option(
        "--allow-unsigned",
        help="With JUDGE_CACHE_SECRET set, take unsigned lines too (their digest is checked; "
             "the summary counts them).")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Add the entries of an export; existing keys are kept. Exit 2 if any line was rejected.

    Every line's digest is checked, and its signature when JUDGE_CACHE_SECRET is set; with
    the secret set an unsigned line is refused unless --allow-unsigned. An import whose
    every line is refused creates no cache.
    """
    ws = _workspace(cache_dir, alias)
    if file == "-":
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read: {exc}", file=file) from None
        report = import_cache(ws, io.StringIO(text), require_signed=require_signed,
                              allow_unsigned=allow_unsigned)
    else:
        report = import_cache_file(ws, Path(file), require_signed=require_signed,
                                   allow_unsigned=allow_unsigned)
    for error in report.errors[:50]:
        typer.echo(f"✗ {file}: {error}", err=True)
    if len(report.errors) > 50:
        typer.echo(f"✗ {file}: … and {len(report.errors) - 50} more lines rejected", err=True)
    if report.rejected:
        typer.echo("  fix: import the file exactly as `judge cache export` wrote it; with "
                   "JUDGE_CACHE_SECRET set, export it with the same secret (or pass "
                   "--allow-unsigned for an unsigned export you trust)", err=True)
    if json_out:
        emit_json(report.model_dump(mode="json"))
    else:
        unsigned = (f", {report.unsigned} of them unsigned (--allow-unsigned)"
                    if report.unsigned else "")
        typer.echo(f"added {report.added}{unsigned}, skipped {report.skipped} already cached, "
                   f"rejected {report.rejected}")
    if report.rejected:
        raise typer.Exit(2)


def cache_verify_cmd(
    cache_dir: CacheDirOption = None,
    alias: DirAlias = None,
    repair: Annotated[bool, typer.Option(
        "--repair", help="Remove the corrupt entries and bad index records found.")] = False,
    require_signed: Annotated[bool, typer.Option(
        "--require-signed",
        help="Fail (exit 2) without JUDGE_CACHE_SECRET: with it, shared-tier rows not signed "
             "with it are bad anyway.")] = False,
    allow_unsigned_shared: AllowUnsignedShared = False,
    json_out: JsonFlag = False,
) -> None:
    """Re-read and re-hash every entry and replay index record. Exit 1 naming any bad one.

    With cache_url set, every shared-tier row too (its digest, and with JUDGE_CACHE_SECRET
    set its HMAC: an unsigned row is bad unless --allow-unsigned-shared). With --repair
    local ones are removed (exit 0 once nothing bad is left); a bad shared row is replaced
    by the next verdict of its key.
    """
    ws = _workspace(cache_dir, alias, allow_unsigned=allow_unsigned_shared)
    report = verify_cache(ws, repair=repair,
                          require_signed=require_signed)
    if json_out:
        emit_json(report.model_dump(mode="json"))
    else:
        for key in report.corrupt:
            typer.echo(f"✗ entry {key}: {report.reasons[key]}", err=True)
        for fingerprint in report.index_bad:
            typer.echo(f"✗ index record {fingerprint}: {report.index_reasons[fingerprint]}",
                       err=True)
        if report.index_damaged:
            typer.echo(f"✗ {report.index_damaged}", err=True)
        typer.echo(f"checked {report.checked}, ok {report.ok}, "
                   f"corrupt {len(report.corrupt)}; index records {report.index_checked}, "
                   f"bad {len(report.index_bad)}")
        if report.shared is not None:
            _say_shared(report.shared)
        if repair:
            typer.echo(f"removed {report.removed} corrupt entries and {report.index_removed} "
                       "index records" + (" (and the damaged index file)"
                                          if report.index_damaged else ""))
    if report.bad and not (repair and report.clean_now):
        raise typer.Exit(1)


def _say_shared(shared: SharedTierStats) -> None:
    if not shared.reachable:
        typer.echo(f"✗ shared tier {shared.url}: {shared.error}", err=True)
        return
    for key in shared.rejected_keys:
        typer.echo(f"✗ shared row {key}: {shared.rejected_reasons.get(key, 'rejected')}",
                   err=True)
    how = "digests and signatures" if shared.signed else "digests (no JUDGE_CACHE_SECRET)"
    typer.echo(f"shared tier {shared.url}: {shared.entries} sound, {shared.rejected} "
               f"rejected ({how} checked)")


def cache_prune_cmd(
    cache_dir: CacheDirOption = None,
    alias: DirAlias = None,
    model: Annotated[str | None, typer.Option(help="Only entries for this model.")] = None,
    before: Annotated[str | None, typer.Option(
        metavar="ISO_DATE", help="Only entries created before this date or time.")] = None,
    corrupt: Annotated[bool, typer.Option("--corrupt", help="Remove corrupt entries.")] = False,
    all_entries: Annotated[bool, typer.Option(
        "--all", help="Remove every entry (needed when no filter is given).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what would go.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    json_out: JsonFlag = False,
) -> None:
    """Remove entries by model, age or corruption; prints what was removed."""
    ws = _workspace(cache_dir, alias)

    def confirm(count: int) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            raise UsageError(f"{plural(count, 'entry', 'entries')} match; not asking without a "
                             "terminal",
                             fix="pass --yes (or --dry-run to look first)")
        typer.confirm(f"remove {plural(count, 'entry', 'entries')} from "
                      f"{ws.settings.cache_dir}?", abort=True, err=True)
        return True

    report = prune_cache(ws, PruneRequest(model=model, before=before, corrupt=corrupt,
                                          all_entries=all_entries, dry_run=dry_run), confirm)
    if json_out:
        emit_json({"dryRun": report.dry_run, "matched": len(report.entries),
                   "removed": report.removed,
                   "entries": [e.model_dump(mode="json") for e in report.entries]})
        return
    verb = "would remove" if dry_run else "removed"
    for e in report.entries:
        typer.echo(f"{verb} {e.key}  {e.model or '—'}  {e.created_at or '—'}  {e.reason}")
    count = len(report.entries) if dry_run else report.removed
    typer.echo(f"{verb} {plural(count, 'entry', 'entries')}")
