"""The judges: the LiteLLM client, the embedded local judge and provider batch jobs.

``client`` is the one place that imports LiteLLM; ``local`` and ``local_weights`` run
llama.cpp's server with the packaged model.

Layer: adapter. May import: ``judge.core``, ``judge.system``.

Modules: ``batch``, ``client``, ``local``, ``local_weights``. This ``__init__`` imports nothing:
import from the module.
"""

__all__: list[str] = []
