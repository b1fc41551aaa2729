"""``judge pairwise``: judge pairs of outputs in both orders; report results and the flip rate.

Each order of each pair is one judge request through the same client, cache and repair
turn as ``judge run``: temperature and seed from the settings, structured output (the
verdict schema of :mod:`judge.pairwise`), the cache keyed by the request's hash, only valid
verdicts cached, one bounded repair turn, and an order left unscored with its reason when
the judge still fails. The aggregation (a flip is a tie) is :mod:`judge.pairwise`'s.

Results are printed (or written as ``--json``), not stored: the run store's rows are
per-category scores under a rubric, which a pair's A / B / tie result is not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .output import emit_json, err_console

if TYPE_CHECKING:

    from ..cache import JudgmentCache
    from ..config import Config
    from ..judging import Completer, JudgeSettings
    from ..pairwise import Order, OrderVerdict, Pair, PairResult, PairSuite, PairSummary
    from ..prompts import PromptRenderer, RenderedPrompt

__all__ = ["EXIT_CACHE_MISS", "judge_pairs", "load_pair_suite", "register", "run_pairwise"]

EXIT_CACHE_MISS = 3
DEFAULT_TEMPLATE = "pairwise"


def register(app: typer.Typer) -> None:
    """Add ``pairwise`` to ``app``."""
    app.command("pairwise")(pairwise)


def pairwise(
    suite: Annotated[Path, typer.Argument(help="Pair suite (.yaml or .jsonl).")],
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Judge model (LiteLLM name).")] = None,
    api_base: Annotated[str | None, typer.Option(help="Base URL of the model server.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Model calls in flight.")] = None,
    seed: Annotated[int | None, typer.Option(help="Judge seed (default 42).")] = None,
    offline: Annotated[bool, typer.Option(
        "--offline", help="Replay from the cache only; never touch the network.")] = False,
    cache_mode: Annotated[str | None, typer.Option(
        help="read-write | read-only | offline | refresh | off")] = None,
    cache_dir: Annotated[str | None, typer.Option(help="Cache folder.")] = None,
    template: Annotated[str, typer.Option(
        help="Prompt template id (prompts/<id>.md.j2).")] = DEFAULT_TEMPLATE,
    output_mode: Annotated[str | None, typer.Option(
        help="auto | json_schema | json_object | prompt")] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per model request.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Judge every pair of SUITE in both orders; an order-dependent verdict counts as a tie."""
    from ..config import load_config

    flags: dict[str, Any] = {
        "model": [model] if model else None, "api_base": api_base,
        "concurrency": concurrency, "seed": seed,
        "cache_mode": "offline" if offline else cache_mode, "cache_dir": cache_dir,
        "output_mode": output_mode, "timeout": timeout,
    }
    config = load_config(Path.cwd(), flags)
    raise typer.Exit(run_pairwise(config, suite, template=template, json_out=json_out))


def load_pair_suite(path: Path) -> PairSuite:
    """Read and validate a pair suite; the id defaults to the file's stem (or its folder's)."""
    from ..errors import SuiteError
    from ..pairwise import parse_pair_suite

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"cannot read: {exc}", file=str(path), fix="check the path") from None
    stem = path.stem if path.stem not in {"suite", "cases"} else path.parent.name or path.stem
    return parse_pair_suite(text, str(path), default_id=stem)


def run_pairwise(config: Config, suite_path: Path, *, template: str, json_out: bool) -> int:
    """Everything ``judge pairwise`` does; returns the exit code."""
    import asyncio

    from ..cache import JudgmentCache
    from ..clock import utc_now
    from ..errors import UsageError
    from ..judging import JudgeSettings
    from ..pairwise import summarize
    from ..prompts import PromptRenderer

    suite = load_pair_suite(suite_path)
    models = config.models()
    if len(models) != 1:
        raise UsageError("pairwise judging takes one judge model" if models
                         else "no judge model configured",
                         fix="pass --model (e.g. --model openai/gpt-4o-mini) or set JUDGE_MODEL")
    name = models[0]
    renderer = PromptRenderer(template, config.workspace)
    settings = JudgeSettings(temperature=config["temperature"], seed=config["seed"],
                             output_mode=config["output_mode"],
                             max_repairs=config["max_repairs"],
                             params={"max_tokens": config["max_tokens"]})
    mode = config["cache_mode"]
    cache_path = Path(config["cache_dir"])
    if not cache_path.is_absolute():
        cache_path = config.workspace / cache_path
    cache = None if mode == "off" else JudgmentCache(cache_path, mode)
    stops: list[Callable[[], None]] = []
    client = None if mode == "offline" else _client(config, name, stops)
    async def judge_all() -> list[PairResult]:
        try:
            return await judge_pairs(suite, renderer=renderer, model=name, settings=settings,
                                     cache=cache, client=client, now=utc_now,
                                     concurrency=config["concurrency"])
        finally:
            if client is not None:
                from ..client import aclose_clients

                await aclose_clients()  # inside this loop: no unclosed sockets at exit

    try:
        results = asyncio.run(judge_all())
    finally:
        for stop in stops:
            stop()
        if cache is not None:
            cache.close()
        if client is not None:
            from ..client import quiet_exit

            quiet_exit()
    summary = summarize(results)
    calls = int(getattr(client, "attempts", 0))
    if json_out:
        emit_json(_document(suite, name, renderer, settings, results, summary, calls))
    else:
        _print(suite, name, results, summary, calls)
    if summary.cacheMisses:
        missing = [r.id for r in results if r.status == "cache_miss"]
        err_console().print(f"[red]offline: {len(missing)} pair(s) not in the cache[/]: "
                            + ", ".join(missing))
        return EXIT_CACHE_MISS
    return 0


def _client(config: Config, name: str, stops: list[Callable[[], None]]) -> Any:
    import os

    from ..client import LiteLLMClient, ModelSpec

    call_name, api_base, engine, own = name, config["api_base"], None, None
    if name.startswith("local/"):
        from ..local import engine_info, ensure_server

        server = ensure_server(name, config.workspace)
        call_name, api_base, engine = server.litellm_model, server.api_base, engine_info(name)
        stops.append(server.release)
        own = 1  # llama-cpp-python's server generates one completion at a time
    return LiteLLMClient(ModelSpec(
        name=call_name, api_base=api_base, api_key=os.environ.get("JUDGE_API_KEY"),
        output_mode=config["output_mode"], timeout=config["timeout"],
        max_attempts=config["max_attempts"], engine=engine, max_concurrency=own))


# --- judging --------------------------------------------------------------------------------


async def judge_pairs(suite: PairSuite, *, renderer: PromptRenderer, model: str,
                      settings: JudgeSettings, cache: JudgmentCache | None,
                      client: Completer | None, now: Callable[[], str],
                      concurrency: int = 16) -> list[PairResult]:
    """Judge every pair in both orders; ``client`` None means offline (cache only)."""
    import asyncio

    from ..pairwise import ORDERS, combine, pair_bundle, verdict_schema
    from ..runner import LimitedCompleter

    limited = LimitedCompleter(client, asyncio.Semaphore(max(1, concurrency))) if client else None
    schema = verdict_schema()

    async def one(pair: Pair) -> PairResult:
        bundle = pair_bundle(pair)
        prompts = {order: _render(renderer, suite, pair, order, bundle) for order in ORDERS}
        verdicts = await asyncio.gather(*(
            _judge_order(order, prompts[order], model=model, settings=settings, schema=schema,
                         cache=cache, client=limited, now=now) for order in ORDERS))
        return combine(pair, verdicts)

    return list(await asyncio.gather(*(one(pair) for pair in suite.cases)))


def _render(renderer: PromptRenderer, suite: PairSuite, pair: Pair, order: Order,
            bundle: Any) -> RenderedPrompt:
    from ..pairwise import shown

    first, second = shown(pair, order)
    return renderer.render_pair(pair.input, first, second, bundle=bundle,
                                criteria=suite.criteria)


async def _judge_order(order: Order, prompt: RenderedPrompt, *, model: str,
                       settings: JudgeSettings, schema: dict[str, Any],
                       cache: JudgmentCache | None, client: Completer | None,
                       now: Callable[[], str]) -> OrderVerdict:
    """One order of one pair, through the same exchange as every rubric judgment."""
    from ..client import JudgeRequest
    from ..judging import exchange
    from ..pairwise import OrderVerdict, order_outcome, parse_pair_verdict, turn_totals

    request = JudgeRequest(model=model, messages=prompt.messages,
                           temperature=settings.temperature, seed=settings.seed,
                           schema=schema, output_mode=settings.output_mode,
                           params=settings.params)
    done = await exchange(request, parse_pair_verdict, cache=cache, client=client,
                          max_repairs=settings.max_repairs,
                          meta={"templateId": prompt.template_id,
                                "templateHash": prompt.template_hash, "mode": "pairwise",
                                "createdAt": now()})
    head: dict[str, Any] = {"order": order, "first": "A" if order == 1 else "B",
                            "cacheKey": done.key}
    totals = turn_totals(done.turns) if done.turns else {}
    if done.status == "cache_miss":
        return OrderVerdict(**head, status="cache_miss", reason=done.reason)
    if done.value is None:
        return OrderVerdict(**head, **totals, status="unscored", cached=done.cached,
                            reason=done.reason)
    return OrderVerdict(**head, **totals, status="judged", cached=done.cached,
                        winner=done.value.winner,
                        outcome=order_outcome(order, done.value.winner),
                        rationale=done.value.rationale)


# --- output ---------------------------------------------------------------------------------


def _document(suite: PairSuite, model: str, renderer: PromptRenderer, settings: JudgeSettings,
              results: Sequence[PairResult], summary: PairSummary,
              calls: int) -> dict[str, Any]:
    fresh = [v for r in results for v in r.verdicts if v.status != "cache_miss" and not v.cached]
    tokens = [(v.promptTokens, v.completionTokens, v.costUsd) for v in fresh]
    return {
        "suite": suite.id,
        "model": model,
        "templateId": renderer.template_id,
        "templateHash": renderer.template_hash,
        "temperature": settings.temperature,
        "seed": settings.seed,
        "pairs": [r.model_dump(mode="json") for r in results],
        "summary": summary.model_dump(mode="json"),
        "totals": {
            "calls": calls,
            "cacheHits": sum(v.cached for r in results for v in r.verdicts),
            "promptTokens": sum(t[0] or 0 for t in tokens),
            "completionTokens": sum(t[1] or 0 for t in tokens),
            "costUsd": None if any(t[2] is None for t in tokens)
            else round(sum(t[2] or 0.0 for t in tokens), 10),
        },
    }


def _cell(v: OrderVerdict) -> str:
    if v.status != "judged" or v.winner is None:
        return "[red]unscored[/]" if v.status == "unscored" else "[yellow]not cached[/]"
    if v.winner == "tie":
        return "tie"
    return f"{v.winner} → {v.outcome}"


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate:.0%}"


def _print(suite: PairSuite, model: str, results: Sequence[PairResult], summary: PairSummary,
           calls: int) -> None:
    from rich.markup import escape
    from rich.table import Table

    from .output import console

    out = console()
    out.print(f"[bold]pairwise[/]  suite [bold]{escape(suite.id)}[/]  judge {escape(model)}")
    table = Table("pair", "order 1", "order 2", "result", "flip", "human",
                  caption="order 1 shows A as Response 1, order 2 shows B; each cell: the "
                          "winning position → the output shown there",
                  caption_justify="left")
    table.columns[0].overflow = "fold"
    for r in results:
        result = r.result if r.result is not None else r.status
        flip = "—" if r.flipped is None else ("[yellow]yes[/]" if r.flipped else "no")
        human = "—" if r.preferred is None else r.preferred + (
            "" if r.agrees is None else (" [green]✓[/]" if r.agrees else " [red]✗[/]"))
        table.add_row(escape(r.id), *[_cell(v) for v in r.verdicts], f"[bold]{result}[/]",
                      flip, human)
    out.print(table)
    for r in results:
        if r.reason:
            out.print(f"[red]{escape(r.id)}[/]: {escape(r.reason[:200])}")
    s = summary
    out.print(f"pairs {s.pairs}: judged {s.judged}, unscored {s.unscored}"
              + (f", cache misses {s.cacheMisses}" if s.cacheMisses else ""))
    out.print(f"wins A [bold]{s.winsA}[/], wins B [bold]{s.winsB}[/], ties [bold]{s.ties}[/]")
    out.print(f"flip rate [bold]{_pct(s.flipRate)}[/] ({s.flips} of {s.judged} pairs judged "
              "in both orders)")
    out.print(f"position 1 won {s.positionOneWins} of {s.positionOneWins + s.positionTwoWins} "
              f"decisive verdicts ({_pct(s.positionOneWinRate)}); {s.positionTies} tie verdicts")
    if s.labelled:
        out.print(f"agreement with humans [bold]{_pct(s.humanAgreement)}[/] ({s.agreements} "
                  f"of {s.labelled} labelled pairs)")
    hits = sum(v.cached for r in results for v in r.verdicts)
    out.print(f"model calls {calls}, cache hits {hits}")
