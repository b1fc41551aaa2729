"""`--help` matches the tool: every option described, conventional placeholders, one name
per concept (`--cache-dir`, `--store`, `--baselines-dir`), `--json` said where it exists."""

from __future__ import annotations

from pathlib import Path

from conftest import run_judge
from typer._click.core import Command, Context
from typer.core import TyperGroup

from judge.cli.app import walk

SAME_CONCEPT = {"cache_dir": "--cache-dir", "store": "--store", "directory": "--baselines-dir"}


def _leaves() -> list[tuple[str, Command]]:
    return [(name, command) for name, command in walk()
            if not isinstance(command, TyperGroup) or command.invoke_without_command]


def test_every_option_is_described_with_a_conventional_placeholder() -> None:
    for name, command in _leaves():
        ctx = Context(command, info_name=f"judge {name}")
        usage = " ".join(command.collect_usage_pieces(ctx))
        assert "{" not in usage and "<" not in usage, (name, usage)
        for param in command.params:
            if getattr(param, "hidden", False) or param.name == "help":
                continue
            assert getattr(param, "help", None), (name, param.name)
            record = param.get_help_record(ctx)
            assert record is not None and "<" not in record[0] and "{" not in record[0], \
                (name, record)
            if param.name in SAME_CONCEPT and param.param_type_name == "option":
                assert SAME_CONCEPT[param.name] in param.opts, (name, param.opts)
            if "--json" in getattr(param, "opts", ()):
                assert "JSON" in (getattr(param, "help", "") or ""), name


def test_the_old_baselines_flag_still_works(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    for flag in ("--baselines-dir", "--dir"):
        done = run_judge(["baseline", "list", flag, "elsewhere", "--json"], tmp_path)
        assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
    assert "--dir" not in run_judge(["baseline", "list", "--help"], tmp_path).stdout


def test_typer_builds_commands_of_the_click_we_import() -> None:
    # judge.cli.app takes click's types from typer's private copy (typer exports none): this
    # fails when a typer release stops building commands of that click.
    import typer
    from typer._click.core import Command

    app = typer.Typer()

    @app.command()
    def one() -> None:
        """A command."""

    assert isinstance(typer.main.get_command(app), Command)
