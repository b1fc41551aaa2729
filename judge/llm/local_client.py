"""A local judge whose llama.cpp server starts on the first call that needs it.

A run opens its judges before it knows which cases the cache answers. Starting the server
then cost 4.5-5 s (16 s cold) for a run the cache answered whole (0 calls). This
completer holds the recipe instead: the server is started (or a ``judge judges local start`` one
reused) when the first cache miss asks for a completion, and released with the pool. A
fully cached run starts no process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.outcomes.ledger import CallCounts
from .client import Completion, JudgeRequest, LiteLLMClient
from .local import LocalServer

__all__ = ["LazyLocalClient"]


class LazyLocalClient:
    """A :class:`~judge.engine.judging.Completer` that starts its server on the first call.

    ``start`` brings up (or finds) the server; ``make`` builds the LiteLLM client for it.
    Until then it reports no engine, no attempts and an empty ledger: nothing was called.
    """

    def __init__(self, start: Callable[[], LocalServer],
                 make: Callable[[LocalServer], LiteLLMClient], *,
                 max_concurrency: int | None) -> None:
        self._start = start
        self._make = make
        self._lock = asyncio.Lock()
        self.server: LocalServer | None = None
        """The server once started (None: no call needed one)."""
        self.inner: LiteLLMClient | None = None
        self.max_concurrency = max_concurrency

    @property
    def engine(self) -> Mapping[str, Any] | None:
        """The started server's engine (None before the first call)."""
        return self.inner.engine if self.inner is not None else None

    @property
    def attempts(self) -> int:
        """Requests on the wire so far."""
        return self.inner.attempts if self.inner is not None else 0

    @property
    def retries(self) -> int:
        """Of those, the ones sent again."""
        return self.inner.retries if self.inner is not None else 0

    @property
    def ledger(self) -> CallCounts:
        """The inner client's itemised calls (empty before the first call)."""
        return self.inner.ledger if self.inner is not None else CallCounts()

    async def _client(self) -> LiteLLMClient:
        async with self._lock:
            if self.inner is None:
                # Starting takes seconds and blocks (a subprocess, a readiness poll): a thread,
                # so the run's loop goes on serving cached cases meanwhile.
                server = await asyncio.to_thread(self._start)
                self.server = server
                self.inner = self._make(server)
            return self.inner

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        """Start the server if this is the first call, then complete through it."""
        client = await self._client()
        return await client.complete(request, messages)

    def release(self) -> None:
        """Stop the server if this client started it (nothing when none was needed)."""
        if self.server is not None:
            self.server.release()
