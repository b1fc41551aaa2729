"""Option and argument types that several commands share, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..app.workspace.settings import env_name
from .aliases import say_setting

__all__ = [
    "RUN_HELP",
    "AcrossJudgesFlag",
    "AllowUnsignedShared",
    "ApiBaseOption",
    "BaselinesDirAlias",
    "BaselinesDirOption",
    "CacheDirOption",
    "CacheModeOption",
    "ConcurrencyOption",
    "GroupByOption",
    "JsonFlag",
    "JunitOption",
    "MarkdownOption",
    "RequireBaselineFlag",
    "RunArg",
    "SeedOption",
    "SettingFlag",
    "StoreOption",
    "SystemByOption",
    "ThresholdOption",
]

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON on stdout, nothing else.")]
StoreOption = Annotated[str | None, typer.Option(
    "--store", metavar="URL",
    help="Run store URL (default: setting store_url, sqlite:///.judge/judge.db).")]
CacheDirOption = Annotated[str | None, typer.Option(
    "--cache-dir", metavar="PATH",
    help="Cache folder (default: setting cache_dir, env JUDGE_CACHE_DIR, else 'cache').")]
BaselinesDirOption = Annotated[str | None, typer.Option(
    "--baselines-dir", metavar="DIR",
    help="Baselines folder (default: setting baselines_dir, env JUDGE_BASELINES_DIR, else "
         "'baselines' in the current folder).")]
BaselinesDirAlias = Annotated[str | None, typer.Option("--dir", hidden=True,
                                                       help="Old name of --baselines-dir.")]
ThresholdOption = Annotated[float | None, typer.Option(
    "--threshold", min=0.0, max=1.0, metavar="T",
    help="Largest allowed drop as a fraction of 0..100 (0.05 = 5 points).")]
RUN_HELP = "Run id, a unique prefix of it, or last / last~N (the newest run / N before it)"
"""How every command names a stored run (the store resolves ``last~N``)."""
RunArg = Annotated[str, typer.Argument(metavar="RUN", help=RUN_HELP + ".")]
ApiBaseOption = Annotated[str | None, typer.Option(
    metavar="URL", help="Base URL of an OpenAI-compatible server, with its /v1 "
                        "(e.g. http://127.0.0.1:8000/v1).")]
ConcurrencyOption = Annotated[int | None, typer.Option(
    metavar="N", help="Model calls in flight at once (default: setting concurrency, 16; a "
                      "local judge: its server's slots, 1).")]
SeedOption = Annotated[int | None, typer.Option(metavar="N", help="Judge seed (default 42).")]
GroupByOption = Annotated[str | None, typer.Option(
    "--group-by", metavar="FIELD",
    help="The group level: correlate inside each group of cases sharing this field (a "
         "source document, a prompt), then average; metadata.KEY or tag:PREFIX.")]
SystemByOption = Annotated[str | None, typer.Option(
    "--system-by", metavar="FIELD",
    help="The system level: correlate each system's mean score across systems; the case "
         "field naming the system: metadata.KEY or tag:PREFIX.")]
CacheModeOption = Annotated[str | None, typer.Option(
    help="How the cache is used: read-write (default), read-only, offline (as --offline), "
         "refresh (ask again, store the new answer) or off.")]
AllowUnsignedShared = Annotated[bool, typer.Option(
    "--allow-unsigned-shared",
    help="Use unsigned shared-tier rows despite JUDGE_CACHE_SECRET (a flag only).")]
AcrossJudgesFlag = Annotated[bool, typer.Option(
    "--across-judges", help="Compare with a baseline of another judge, rubric or template "
                            "too (else: not compared, exit 5).")]
RequireBaselineFlag = Annotated[bool, typer.Option(
    "--require-baseline", help="A missing baseline fails (exit 5) instead of being recorded "
                               "(the default under CI).")]
JunitOption = Annotated[Path | None, typer.Option(
    "--junit", metavar="FILE", help="Write the verdict as JUnit XML, a test case per suite "
                                    "case.")]
MarkdownOption = Annotated[Path | None, typer.Option(
    "--markdown", metavar="FILE", help="Write the verdict as Markdown (for "
                                       "$GITHUB_STEP_SUMMARY, a pull request).")]


def SettingFlag(setting: str, flag: str | None = None) -> Any:
    """A hidden flag that sets ``setting`` for one command, kept for one release.

    The setting (its variable, or judge.toml) is the one name; the flag still works and
    says so once on stderr.
    """
    name = flag or "--" + setting.replace("_", "-")

    def said(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
        if value is not None and not ctx.resilient_parsing:
            say_setting(ctx.command_path, name.split("/")[0], setting, env_name(setting))
        return value

    return typer.Option(name, hidden=True, callback=said,
                        help=f"Old flag of the setting {setting}.")
