"""``judge cache``: inspect, export, import, verify and prune the judgment cache."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .output import console, emit_json

if TYPE_CHECKING:
    from ..cache import CacheMode, JudgmentCache

__all__ = ["register"]

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout, nothing else.")]
DirOption = Annotated[Path, typer.Option(
    "--dir", envvar="JUDGE_CACHE_DIR", metavar="PATH",
    help="Cache directory.")]


def register(app: typer.Typer) -> None:
    """Add ``cache stats|export|import|verify|prune`` to ``app``."""
    cache_app = typer.Typer(help="Inspect, share and maintain the judgment cache.",
                            no_args_is_help=True)
    cache_app.command("stats")(cache_stats)
    cache_app.command("export")(cache_export)
    cache_app.command("import")(cache_import)
    cache_app.command("verify")(cache_verify)
    cache_app.command("prune")(cache_prune)
    app.add_typer(cache_app, name="cache")


def _open(directory: Path, mode: CacheMode) -> JudgmentCache:
    from ..cache import JudgmentCache
    from ..errors import UsageError

    if directory.exists() and not directory.is_dir():
        raise UsageError("not a directory", file=str(directory))
    return JudgmentCache(directory, mode)


def _name(key: Any) -> str:
    return key if isinstance(key, str) else repr(key)


def cache_stats(directory: DirOption = Path("cache"), json_out: JsonFlag = False) -> None:
    """Count entries per model, their age and the bytes on disk."""
    from rich.table import Table

    with _open(directory, "read-only") as cache:
        stats = cache.stats()
    stats.pop("counters")  # a fresh instance's counters say nothing
    if json_out:
        emit_json(stats)
        return
    out = console()
    if not stats["exists"]:
        out.print(f"no cache at {directory}")
        return
    table = Table("", "", show_header=False, title=f"cache {directory}")
    table.add_row("entries", str(stats["entries"]))
    if stats["corrupt"]:
        table.add_row("corrupt", f"[red]{stats['corrupt']}[/] (see judge cache verify)")
    table.add_row("on disk", f"{stats['bytes'] / 1e6:.1f} MB")
    table.add_row("oldest", stats["oldest"] or "—")
    table.add_row("newest", stats["newest"] or "—")
    table.add_row("replay index", f"{stats['indexRecords']} record(s)")
    for model, count in stats["models"].items():
        table.add_row(f"model {model}", str(count))
    out.print(table)


def cache_export(
    file: Annotated[str, typer.Argument(metavar="FILE.jsonl", help="Output file, - for stdout.")],
    directory: DirOption = Path("cache"),
) -> None:
    """Write every entry as one canonical JSON line, sorted by key (a stable file for git)."""
    import io
    import os
    import tempfile

    from ..errors import UsageError

    with _open(directory, "read-only") as cache:
        if file == "-":
            stream = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
            count = cache.export_jsonl(stream)
            stream.flush()
            stream.detach()
        else:
            target = Path(file)
            # Written beside the target and renamed: a failed export never leaves half a file.
            try:
                fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
                with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                    count = cache.export_jsonl(out)
                os.replace(tmp, target)
            except OSError as exc:
                raise UsageError(f"cannot write: {exc}", file=file) from None
        left_out = len(cache) - count
    typer.echo(f"exported {count} entries from {directory}", err=True)
    if left_out > 0:
        typer.echo(f"warning: {left_out} corrupt entries left out "
                   "(judge cache verify names them)", err=True)


def cache_import(
    file: Annotated[str, typer.Argument(metavar="FILE.jsonl", help="Input file, - for stdin.")],
    directory: DirOption = Path("cache"),
    json_out: JsonFlag = False,
) -> None:
    """Add the entries of an export; existing keys are kept. Exit 2 if any line was rejected."""
    import io

    from ..errors import UsageError

    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read: {exc}", file=file) from None
    with _open(directory, "read-write") as cache:
        report = cache.import_jsonl(io.StringIO(text))
    for error in report["errors"]:
        typer.echo(f"✗ {file}: {error}", err=True)
    if json_out:
        emit_json(report)
    else:
        typer.echo(f"added {report['added']}, skipped {report['skipped']} already cached, "
                   f"rejected {report['rejected']}")
    if report["rejected"]:
        raise typer.Exit(2)


def cache_verify(directory: DirOption = Path("cache"), json_out: JsonFlag = False) -> None:
    """Re-read and re-hash every entry. Exit 1 naming any corrupt one."""
    with _open(directory, "read-only") as cache:
        report = cache.verify()
    if json_out:
        emit_json(report)
    else:
        for key in report["corrupt"]:
            typer.echo(f"✗ {key}: {report['reasons'][key]}", err=True)
        typer.echo(f"checked {report['checked']}, ok {report['ok']}, "
                   f"corrupt {len(report['corrupt'])}")
    if report["corrupt"]:
        raise typer.Exit(1)


def cache_prune(
    directory: DirOption = Path("cache"),
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
    from datetime import datetime

    from ..errors import UsageError

    if model is None and before is None and not corrupt and not all_entries:
        raise UsageError("refusing to prune every entry without a filter",
                         fix="pass --model, --before or --corrupt, or --all to empty the cache")
    if before is not None:
        try:
            datetime.fromisoformat(before)
        except ValueError:
            raise UsageError(f"--before {before!r} is not an ISO 8601 date",
                             fix="e.g. --before 2025-01-31") from None
    with _open(directory, "read-only" if dry_run else "read-write") as cache:
        chosen = cache.prunable(model=model, before=before, corrupt=corrupt,
                                all_entries=all_entries)
        removed = 0
        if chosen and not dry_run:
            if not yes:
                if not sys.stdin.isatty():
                    raise UsageError(f"{len(chosen)} entries match; not asking without a "
                                     "terminal", fix="pass --yes (or --dry-run to look first)")
                typer.confirm(f"remove {len(chosen)} entries from {directory}?", abort=True,
                              err=True)
            removed = cache.remove(item["key"] for item in chosen)
    rows = [{**item, "key": _name(item["key"])} for item in chosen]
    if json_out:
        emit_json({"dryRun": dry_run, "matched": len(rows), "removed": removed,
                   "entries": rows})
        return
    verb = "would remove" if dry_run else "removed"
    for row in rows:
        typer.echo(f"{verb} {row['key']}  {row['model'] or '—'}  {row['createdAt'] or '—'}  "
                   f"{row['reason']}")
    typer.echo(f"{verb} {len(rows) if dry_run else removed} entries")
