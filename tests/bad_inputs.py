"""The bad-input table: each row is a workspace and a command that must exit 2
naming the file (or flag), the place and a fix, and leave the workspace byte-identical.

Shared by ``tests/app/test_bad_input_table.py`` (in-process) and
``scripts/bad_input_table.py`` (a process per row, the table docs/integrity-hostile.md shows).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["NOT_TEXT", "ROWS", "WROTE_BEFORE", "BadInput", "snapshot", "write_workspace"]

MODEL = "hosted_vllm/fake-judge"
OK_CASE = '{"id": "c1", "output": "done"}\n'
YAML_CASE = "cases:\n  - id: c1\n    output: done\n"
DEEP_TOML = "x = " + "[" * 3000 + "]" * 3000 + "\n"
DEEP_JSON = "[" * 100_000 + "]" * 100_000


@dataclass(frozen=True)
class BadInput:
    """One row: files to write (text or bytes), the command's arguments, words of the error."""

    name: str
    files: dict[str, str | bytes]
    args: tuple[str, ...]
    words: tuple[str, ...] = ()
    symlinks: dict[str, str] = field(default_factory=dict)


def _run(suite: str, *extra: str) -> tuple[str, ...]:
    return ("run", suite, "--model", MODEL, "--offline", *extra)


ROWS: tuple[BadInput, ...] = (
    BadInput("JSONL line with a duplicate key",
             {"s.jsonl": '{"id":"a","id":"b","output":"x"}\n'},
             _run("s.jsonl"), ("line 1", "duplicate key 'id'")),
    BadInput("JSONL duplicate deterministic score",
             {"s.jsonl": '{"id":"a","output":"x","deterministic":{"agentPerformance":90,'
                         '"agentPerformance":10}}\n'},
             _run("s.jsonl"), ("line 1", "duplicate key 'agentPerformance'")),
    BadInput("YAML base-60 integer 1:30",
             {"s.yaml": "cases:\n  - id: c1\n    output: x\n"
                        "    deterministic: {agentPerformance: 1:30}\n"},
             _run("s.yaml"), ("agentPerformance",)),
    BadInput("JSONL lone surrogate \\ud800",
             {"s.jsonl": OK_CASE + '{"id":"c2","output":"\\ud800"}\n'},
             _run("s.jsonl"), ("line 2", "surrogate")),
    BadInput("JSONL line that is not UTF-8",
             {"s.jsonl": OK_CASE.encode() + b'{"id":"c2","output":"\xff"}\n'},
             _run("s.jsonl"), ("line 2", "not UTF-8")),
    BadInput("YAML 5,000-digit integer",
             {"s.yaml": YAML_CASE + "    metadata: {n: " + "9" * 5000 + "}\n"},
             _run("s.yaml"), ("line 4", "5,000 digits")),
    BadInput("JSONL 5,000-digit integer", {"s.jsonl": '{"id":"c1","output":"x","metadata":{"n":'
                                                      + "9" * 5000 + "}}\n"},
             _run("s.jsonl"), ("line 1", "5,000 digits")),
    BadInput("YAML {1: a, '1': b} input mapping",
             {"s.yaml": YAML_CASE + "    input: {1: a, '1': b}\n"},
             _run("s.yaml"), ("line 4", "duplicate key '1'")),
    BadInput("judge.toml with 3,000-deep arrays", {"judge.toml": DEEP_TOML, "s.jsonl": OK_CASE},
             _run("s.jsonl"), ("judge.toml",)),
    BadInput("judge.toml is a folder", {"judge.toml/x": "", "s.jsonl": OK_CASE},
             _run("s.jsonl"), ("judge.toml", "folder")),
    BadInput("prompts/judge.md.j2 is a folder", {"prompts/judge.md.j2/x": "", "s.jsonl": OK_CASE},
             _run("s.jsonl"), ("judge.md.j2", "folder")),
    BadInput("workspace template syntax error", {"prompts/judge.md.j2": "{% set system %}\n{{ x",
                                                 "s.jsonl": OK_CASE},
             _run("s.jsonl"), ("judge.md.j2", "syntax")),
    BadInput("template symlinked out of prompts/", {"s.jsonl": OK_CASE, "outside.txt": "host"},
             _run("s.jsonl"), ("outside the template folders",),
             symlinks={"prompts/judge.md.j2": "outside.txt"}),
    BadInput("--store with an unknown scheme", {"s.jsonl": OK_CASE},
             _run("s.jsonl", "--store", "foo://x"), ("store_url", "not a run store URL")),
    BadInput("--model ''", {"s.jsonl": OK_CASE}, ("run", "s.jsonl", "--model", "", "--offline"),
             ("model",)),
    BadInput("--model ' '", {"s.jsonl": OK_CASE}, ("run", "s.jsonl", "--model", " ", "--offline"),
             ("model",)),
    BadInput("--rubric ''", {"s.jsonl": OK_CASE}, _run("s.jsonl", "--rubric", ""), ("rubric",)),
    BadInput("--api-base file:///etc/passwd", {"s.jsonl": OK_CASE},
             ("run", "s.jsonl", "--model", MODEL, "--api-base", "file:///etc/passwd"),
             ("api_base", "not an http(s) URL")),
    BadInput("--api-base 'not a url'", {"s.jsonl": OK_CASE},
             ("run", "s.jsonl", "--model", MODEL, "--api-base", "not a url"),
             ("api_base", "not an http(s) URL")),
    BadInput("rubric id of 300 characters", {"s.jsonl": OK_CASE},
             _run("s.jsonl", "--rubric", "r" * 300), ("rubric",)),
    BadInput("case id of 1 MB", {"s.jsonl": '{"id":"' + "a" * 1_000_000 + '","output":"x"}\n'},
             _run("s.jsonl"), ("more characters]",)),
    BadInput("cache import with every line refused", {"x.jsonl": "not json\n[1]\n"},
             ("cache", "import", "x.jsonl"), ("line 1", "line 2")),
    BadInput("judge rubric score with 100,000-deep JSON", {"scores.json": DEEP_JSON},
             ("rubric", "score", "scores.json"), ("scores.json",)),
    BadInput("judge judges monitor with 100,000-deep JSON", {"live.jsonl": DEEP_JSON + "\n"},
             ("judges", "monitor", "live.jsonl"), ("live.jsonl",)),
)


def _template(body: str) -> str:
    return "{% set system %}S{% endset %}{% set user %}" + body + "{% endset %}"


RENDER_ERRORS = (
    # A template that parses but fails while rendering the first case's prompt: found
    # before the store, the cache or a judge is opened.
    ("|trim on case text", "{{ task|trim }}", "untrusted case text"),
    ("case text printed bare", "{{ output }}", "untrusted case text"),
    ("an undefined name", "{{ nope }}", "undefined"),
    ("a dunder through the sandbox", "{{ rubric.__class__.__mro__ }}", "sandbox"),
    ("a filter after |fence", "{{ task|fence|replace('a', 'b') }}", "quoted case text"),
    ("a loop over case text", "{% for c in output %}{{ c }}{% endfor %}", "sequence"),
    ("division by zero", "{{ 1 / 0 }}", "ZeroDivisionError"),
    ("a 400 MB string", "{{ 'x' * 400000000 }}", "the limit is"),
    ("|int on case text", "{{ task|int }}", "as a number"),
    ("|format of case text", "{{ '%s'|format(task) }}", "untrusted case text"),
    ("|join of case text", "{{ [task]|join(',') }}", "untrusted case text"),
    ("~ on case text", "{{ task ~ '' }}", "untrusted case text"),
    ("a computed include that is missing", "{% include 'nope-' ~ rubric.id %}",
     "TemplateNotFound"),
    ("a comparison of case text", "{% if output == 'x' %}x{% endif %}", "comparison"),
)
WROTE_BEFORE: tuple[BadInput, ...] = (
    *(BadInput(f"template error while rendering: {name}",
               {"prompts/judge.md.j2": _template(body), "s.jsonl": OK_CASE},
               ("run", "s.jsonl", "--model", MODEL), ("judge.md.j2", "line 1", word))
      for name, body, word in RENDER_ERRORS),
    BadInput("--store naming a server that is not there", {"s.jsonl": OK_CASE},
             ("run", "s.jsonl", "--model", MODEL, "--store", "postgresql://127.0.0.1:1/x"),
             ("run store", "connection")),
    BadInput("judge check --baseline nope.json", {},
             ("check", "--baseline", "nope.json"), ("nope.json", "no such baseline file")),
    BadInput("judge check --baseline that is not a baseline", {"b.json": "{}"},
             ("check", "--baseline", "b.json"), ("b.json",)),
    BadInput("cache_dir naming a file", {"s.jsonl": OK_CASE, "judge.toml": 'cache_dir = "c"\n',
                                         "c": "a file"},
             ("run", "s.jsonl", "--model", MODEL), ("cache_dir", "not a folder")),
    BadInput("cache_require_signed without the secret",
             {"s.jsonl": OK_CASE, "judge.toml": 'cache_url = "postgresql://127.0.0.1:1/x"\n'
                                                "cache_require_signed = true\n"},
             ("run", "s.jsonl", "--model", MODEL), ("cache_require_signed",)),
)
"""Rows that exited 2 but left files behind (.judge/judge.db, cache/) before the store and
the cache were opened only after every input was validated and the first prompt rendered."""
ROWS += WROTE_BEFORE

NOT_TEXT: tuple[BadInput, ...] = (
    # A byte that is not UTF-8 in an argument reads as a lone surrogate (exit 70 before).
    BadInput("--model with a byte that is not UTF-8", {"s.jsonl": OK_CASE},
             _run("s.jsonl", "--model", "hosted_vllm/\udcff"),
             ("argument 7 (the value of --model)", "not text")),
    BadInput("--group with a byte that is not UTF-8", {"s.jsonl": OK_CASE},
             _run("s.jsonl", "--shard", "1/2", "--group", "g\udcff"),
             ("argument 9 (the value of --group)", "not text")),
    BadInput("judge runs show RUN with a byte that is not UTF-8", {},
             ("runs", "show", "\udcff"), ("argument 3", "not text")),
    BadInput("judge compare with bytes that are not UTF-8", {},
             ("compare", "\udcff", "\udcfe"), ("argument 2", "not text")),
)
ROWS += NOT_TEXT


def write_workspace(root: Path, row: BadInput) -> None:
    """Create the row's files (and symlinks) under ``root``."""
    for name, content in row.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    for name, target in row.symlinks.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(root / target)


def snapshot(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with a digest of its bytes (a link: its target)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            elif not path.is_file():  # a FIFO: never read (it would wait for a writer)
                out[rel] = f"special {path.stat().st_mode:o}"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out
