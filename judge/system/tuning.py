"""Process-wide tuning: done once by a program's entry point (the CLI), never by a library call.

The garbage collector, the environment and exit hooks belong to the process, not to a
library that someone imports into theirs: ``import judge`` and every function of the
package leave them alone. A short-lived command that judges thousands of cases gains from
tuning them, so its entry point calls :func:`tune_process` once, before anything else,
and :func:`settle_heap` once its set-up is built and the run is about to start.

Decisions (each measured):

- Collector thresholds of 20,000 / 50 / 100: a run allocates and drops small objects by the
  million, and with the default 700 the cyclic collector's passes rescanned every long-lived
  object (35-40 % of a replay). Set at entry, they also keep full collections out of
  litellm's import (~3,000 modules, millions of long-lived objects), which the library no
  longer does by disabling and freezing the collector around it.
- At exit the heap is frozen and the collector switched off, so interpreter shutdown does
  not scan that heap once more (a second or more after a run through litellm).
- Environment defaults are ``setdefault``: a value the user set wins. They are
  :data:`LITELLM_IMPORT_ENV`, which the client applies for the duration of
  litellm's import anyway; set here they also reach a litellm that a child process imports.
"""

from __future__ import annotations

import atexit
import gc
import os
from collections.abc import Callable

__all__ = ["GC_THRESHOLDS", "LITELLM_IMPORT_ENV", "load_frozen", "settle_heap", "tune_process",
           "tuned"]

LITELLM_IMPORT_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MODE": "PRODUCTION"}
"""What litellm must see when it is imported: the bundled price map (no fetch), no ``.env``."""

GC_THRESHOLDS = (20_000, 50, 100)
_tuned = False


def _quiet_shutdown() -> None:
    gc.freeze()
    gc.disable()


def tune_process() -> None:
    """Environment defaults, collector thresholds and the exit hook; a second call does nothing."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    for name, value in LITELLM_IMPORT_ENV.items():
        os.environ.setdefault(name, value)
    gc.set_threshold(*GC_THRESHOLDS)
    atexit.register(_quiet_shutdown)


def tuned() -> bool:
    """Whether the entry point tuned this process (then it owns it: the CLI, not a library)."""
    return _tuned


def settle_heap() -> None:
    """Move what set-up built (modules, models, the rubric) out of the collector's sight.

    Memory stays bounded after it because a run streams: nothing it allocates lives long.
    No collection first: set-up leaves almost no cyclic garbage (a handful of objects), and
    a full pass over its objects was a visible part of a 200-case replay's start.
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def load_frozen(load: Callable[[], object]) -> None:
    """Run ``load`` with the collector off, then move what it built out of its sight.

    ``load``: imports that build many long-lived objects.
    For the warm worker's parent: no collector passes over the import, and what its forked
    children share stays out of their collectors' sight, so its pages stay shared.
    """
    gc.disable()
    try:
        load()
    finally:
        gc.freeze()
        gc.enable()
