"""``/metrics`` in the Prometheus text format, through the official client library.

One registry per app (tests start several). Judgments, cache hits, tokens and judge
latency are counted per judgment as it arrives (a run's and ``/api/evaluate``'s alike);
model calls per run at its end (the client's count, retries and repair turns included), and
per ``/api/evaluate`` from the judgment's own record.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..app.runs.jobs import RunView
from ..core.formats.models import CaseResult, RunInfo

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The server's counters; a :class:`judge.app.runs.jobs.RunListener`."""

    def __init__(self, active_runs: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.runs = Counter("judge_runs", "Runs finished, by status.", ["status"], registry=r)
        self.active = Gauge("judge_runs_active", "Runs judging now.", registry=r)
        self.active.set_function(lambda: float(active_runs()))
        self.judgments = Counter("judge_judgments", "Judgments finished, by status.",
                                 ["status"], registry=r)
        self.cache_hits = Counter("judge_cache_hits", "Judgments reused from the cache.",
                                  registry=r)
        self.calls = Counter("judge_model_calls", "Model calls paid for.", registry=r)
        self.tokens = Counter("judge_tokens", "Tokens of paid model calls.", ["kind"],
                              registry=r)
        self.latency = Histogram(
            "judge_judge_latency_seconds", "Latency of a judgment's model calls.",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120), registry=r)
        self.monitor_records = Counter("judge_monitor_records", "Live records received.",
                                       registry=r)

    def judgment(self, result: CaseResult) -> None:
        """Count one judgment (aggregates are not judgments and are skipped)."""
        meta = result.judge
        if meta is not None and meta.aggregate is not None:
            return
        self.judgments.labels(result.status).inc()
        if meta is None:
            return
        if meta.cached:
            self.cache_hits.inc()
            return
        self.tokens.labels("prompt").inc(meta.prompt_tokens or 0)
        self.tokens.labels("completion").inc(meta.completion_tokens or 0)
        if meta.latency_ms is not None:
            self.latency.observe(meta.latency_ms / 1000)

    def evaluated(self, result: CaseResult) -> None:
        """Count a judgment of ``/api/evaluate`` or of the monitor, with its model calls."""
        self.judgment(result)
        meta = result.judge
        if meta is not None and not meta.cached and result.status != "cache_miss":
            self.calls.inc(1 + meta.repair_turns)

    # -- RunListener ---------------------------------------------------------------------

    def result(self, run: RunInfo, result: CaseResult) -> None:
        """One judgment of a run."""
        self.judgment(result)

    def finished(self, view: RunView) -> None:
        """A run ended."""
        self.runs.labels(view.status).inc()
        self.calls.inc(view.run.totals.calls)

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
