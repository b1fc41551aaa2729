"""Tests of tests/fakes/fake_server.py, the loopback fake judge (an OpenAI-compatible server)."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from conftest import load_fake_server

SERVER_PATH = Path(__file__).resolve().with_name("fake_server.py")
fs = load_fake_server()

EVIDENCE_IDS = ["ev-1", "ev-2", "ev-3", "ev-4"]
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["scores", "evidence", "level", "rationale"],
    "properties": {
        "scores": {
            "type": "object",
            "additionalProperties": False,
            "required": ["correctness", "clarity"],
            "properties": {
                "correctness": {"$ref": "#/$defs/score"},
                "clarity": {"$ref": "#/$defs/score"},
            },
        },
        "evidence": {
            "type": "array",
            "items": {"type": "string", "enum": EVIDENCE_IDS},
            "minItems": 0,
            "maxItems": 3,
            "uniqueItems": True,
        },
        "level": {"$ref": "#/definitions/level"},
        "rationale": {"type": "string", "minLength": 10, "maxLength": 80},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "flag": {"type": "boolean"},
        "kind": {"const": "verdict"},
        "maybe": {"anyOf": [{"type": "integer", "minimum": 5, "maximum": 9}, {"type": "null"}]},
    },
    "$defs": {"score": {"type": "integer", "minimum": 0, "maximum": 100}},
    "definitions": {"level": {"type": "string", "enum": ["weak", "fair", "strong"]}},
}


def openai_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "v", "schema": schema, "strict": True}}


def llamacpp_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_object", "schema": schema}


def request_body(text: str = "judge case 1", *, model: str = "fake-judge",
                 response_format: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": "You are a judge."},
                     {"role": "user", "content": text}],
    }
    if response_format is not None:
        body["response_format"] = response_format
    return body


def content_of(response: httpx.Response) -> Any:
    return json.loads(response.json()["choices"][0]["message"]["content"])


@pytest.fixture
def server() -> Iterator[Any]:
    handle = fs.start_in_thread(seed=7)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def client(server: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=5.0) as http:
        yield http


def post(client: httpx.Client, body: dict[str, Any], **kwargs: Any) -> httpx.Response:
    return client.post("/v1/chat/completions", json=body, **kwargs)


def force(server: Any, kind: str, **extra: Any) -> None:
    server.set_options(fault_rate=1.0, faults=[kind], **extra)


# ---------------------------------------------------------------------- answers


@pytest.mark.parametrize("fmt", [openai_format, llamacpp_format])
def test_answer_is_a_schema_valid_chat_completion(client: httpx.Client, fmt: Any) -> None:
    body = request_body(response_format=fmt(VERDICT_SCHEMA))
    response = post(client, body)
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion"
    assert data["created"] == fs.CREATED
    assert data["model"] == "fake-judge"
    assert data["id"].startswith("chatcmpl-")
    choice = data["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    content = choice["message"]["content"]
    jsonschema.validate(json.loads(content), VERDICT_SCHEMA)
    usage = data["usage"]
    assert usage["completion_tokens"] == max(1, len(content) // 4)
    assert usage["prompt_tokens"] == len("You are a judge.judge case 1") // 4
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_plain_path_and_no_schema_answer_verdict_ok(client: httpx.Client) -> None:
    response = client.post("/chat/completions", json=request_body())
    assert response.status_code == 200
    assert content_of(response) == {"verdict": "ok"}


def test_same_request_gives_identical_bytes(client: httpx.Client) -> None:
    body = request_body(response_format=openai_format(VERDICT_SCHEMA))
    first, second = post(client, body), post(client, body)
    assert first.content == second.content


def test_seed_changes_content(server: Any, client: httpx.Client) -> None:
    body = request_body(response_format=openai_format(VERDICT_SCHEMA))
    before = post(client, body).content
    server.set_options(seed=8)
    assert post(client, body).content != before


def test_different_requests_get_spread_scores(client: httpx.Client) -> None:
    fmt = openai_format(VERDICT_SCHEMA)
    contents = [content_of(post(client, request_body(f"case {i}", response_format=fmt)))
                for i in range(12)]
    assert len({json.dumps(c, sort_keys=True) for c in contents}) == 12
    scores = {c["scores"]["correctness"] for c in contents}
    assert len(scores) >= 8
    assert max(scores) - min(scores) >= 30


def test_bias_in_model_name_shifts_integers_and_clamps(client: httpx.Client) -> None:
    fmt = openai_format(VERDICT_SCHEMA)
    for i in range(6):
        base = content_of(post(client, request_body(f"c{i}", response_format=fmt)))
        up = content_of(post(client, request_body(f"c{i}", model="fake-judge+15",
                                                  response_format=fmt)))
        for name in ("correctness", "clarity"):
            assert up["scores"][name] == min(100, base["scores"][name] + 15)
        assert up["rationale"] == base["rationale"]


def test_bias_option_and_random_model(server: Any, client: httpx.Client) -> None:
    fmt = openai_format(VERDICT_SCHEMA)
    body = request_body(response_format=fmt)
    base = content_of(post(client, body))["scores"]["clarity"]
    server.set_options(bias=-200)
    assert content_of(post(client, body))["scores"]["clarity"] == 0
    server.set_options(bias=0)
    assert content_of(post(client, body))["scores"]["clarity"] == base
    randomised = request_body(model="fake-random", response_format=fmt)
    answers = {post(client, randomised).content for _ in range(4)}
    assert len(answers) > 1


def test_ask_draws_new_noise_for_the_same_request(server: Any, client: httpx.Client) -> None:
    fmt = openai_format(VERDICT_SCHEMA)
    bodies = [{**request_body(f"case {i}", model="fake-judge~8", response_format=fmt),
               "seed": 42} for i in range(12)]

    def scores() -> list[int]:
        return [content_of(post(client, b))["scores"]["correctness"] for b in bodies]

    first = scores()
    assert scores() == first  # ask 0: the same request, the same bytes
    server.set_options(ask=1)
    once = scores()
    assert scores() == once and once != first  # a re-ask draws anew, then repeats
    server.set_options(ask=2)
    again = scores()
    assert again != once
    # Around the same latent verdicts: the draws differ by noise of sd 8, not anew.
    differences = [a - b for a, b in zip(again, once, strict=True)]
    assert max(abs(d) for d in differences) < 60


def test_generator_covers_schema_keywords() -> None:
    schema = {
        "$defs": {"node": {"type": "object", "required": ["id"],
                           "properties": {"id": {"type": "string", "minLength": 3},
                                          "next": {"$ref": "#/$defs/node"}}}},
        "type": "object",
        "required": ["items", "tags", "when", "both", "choice", "nothing"],
        "properties": {
            "items": {"type": "array", "minItems": 2, "maxItems": 4,
                      "items": {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 4}},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 2},
            "when": {"type": "string", "format": "date-time"},
            "both": {"allOf": [{"type": "object", "properties": {"x": {"type": "boolean"}},
                                "required": ["x"]},
                               {"properties": {"y": {"type": "string", "maxLength": 3}},
                                "required": ["y"]}]},
            "choice": {"oneOf": [{"type": "number", "minimum": -5, "maximum": -1},
                                 {"type": "string"}]},
            "nothing": {"type": ["null"]},
            "chain": {"$ref": "#/$defs/node"},
        },
    }
    for seed in range(20):
        instance = fs.generate_instance(schema, random.Random(seed))
        jsonschema.validate(instance, schema)
        assert 2 <= len(instance["items"]) <= 4
        assert sorted(instance["tags"]) == ["a", "b"]
    assert fs.generate_instance(schema, random.Random(3)) == fs.generate_instance(
        schema, random.Random(3))


def test_bad_ref_is_a_400(client: httpx.Client) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    response = post(client, request_body(response_format=openai_format(schema)))
    assert response.status_code == 400
    assert "error" in response.json()


def test_invalid_body_is_a_400(client: httpx.Client) -> None:
    response = client.post("/v1/chat/completions", content=b"{nope",
                           headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


# ----------------------------------------------------------------------- faults


@pytest.mark.parametrize(("kind", "status", "code"), [
    ("500", 500, "internal_error"),
    ("503", 503, "service_unavailable"),
    ("429", 429, "rate_limit_exceeded"),
])
def test_error_status_faults(server: Any, client: httpx.Client, kind: str, status: int,
                             code: str) -> None:
    force(server, kind, retry_after=0.2)
    response = post(client, request_body())
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and error["type"]
    if kind == "429":
        assert response.headers["retry-after"] == "0.2"
        assert response.headers["retry-after-ms"] == "200"


def test_retry_after_default_is_whole_seconds(server: Any, client: httpx.Client) -> None:
    force(server, "429")
    assert post(client, request_body()).headers["retry-after"] == "1"


def test_notjson_fault(server: Any, client: httpx.Client) -> None:
    force(server, "notjson")
    response = post(client, request_body())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.text == "<html>oops</html>"
    with pytest.raises(json.JSONDecodeError):
        response.json()


def test_truncated_fault(server: Any, client: httpx.Client) -> None:
    force(server, "truncated")
    with pytest.raises(httpx.RemoteProtocolError):
        post(client, request_body())


def test_reset_fault(server: Any, client: httpx.Client) -> None:
    force(server, "reset")
    with pytest.raises(httpx.TransportError):
        post(client, request_body())
    server.set_options(fault_rate=0.0)
    assert post(client, request_body()).status_code == 200
    assert server.stats()["in_flight"] == 0


def test_hang_fault_times_out_the_client(server: Any, client: httpx.Client) -> None:
    force(server, "hang", hang_seconds=3.0)
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        post(client, request_body(), timeout=0.3)
    assert time.monotonic() - started < 2.0


async def test_hang_does_not_block_other_requests(server: Any) -> None:
    force(server, "hang", hang_seconds=1.5)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=5.0) as http:
        hanging = asyncio.create_task(http.post("/v1/chat/completions",
                                                json=request_body("slow")))
        await asyncio.sleep(0.1)
        server.set_options(fault_rate=0.0)
        started = time.monotonic()
        quick = await http.post("/v1/chat/completions", json=request_body("fast"))
        assert quick.status_code == 200
        assert time.monotonic() - started < 0.5
        assert server.stats()["in_flight"] == 1
        hanging.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hanging


def test_badschema_fault_violates_the_schema(server: Any, client: httpx.Client) -> None:
    force(server, "badschema")
    response = post(client, request_body(response_format=openai_format(VERDICT_SCHEMA)))
    assert response.status_code == 200
    content = content_of(response)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(content, VERDICT_SCHEMA)
    assert content["scores"]["correctness"] == 150


def test_badschema_without_bounds_drops_a_required_property() -> None:
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}
    assert fs.violate_schema(schema, {"a": "x"}) == {}


def test_length_fault_cuts_the_json(server: Any, client: httpx.Client) -> None:
    force(server, "length")
    response = post(client, request_body(response_format=openai_format(VERDICT_SCHEMA)))
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(choice["message"]["content"])


def test_badcite_fault_cites_an_unknown_id(server: Any, client: httpx.Client) -> None:
    force(server, "badcite")
    content = content_of(post(client, request_body(response_format=openai_format(VERDICT_SCHEMA))))
    assert fs.BOGUS_CITATION in content["evidence"]
    assert fs.BOGUS_CITATION not in EVIDENCE_IDS
    assert 0 <= content["scores"]["correctness"] <= 100


def test_faults_are_deterministic_per_attempt(server: Any, client: httpx.Client) -> None:
    server.set_options(fault_rate=0.5, faults="500")
    body = request_body()

    def statuses() -> list[int]:
        return [post(client, body).status_code for _ in range(12)]

    first = statuses()
    server.reset_stats()
    assert statuses() == first
    assert set(first) == {200, 500}


def test_fail_first_then_success(server: Any, client: httpx.Client) -> None:
    server.set_options(fail_first=2)
    for text in ("a", "b"):
        codes = [post(client, request_body(text)).status_code for _ in range(3)]
        assert codes == [500, 500, 200]
    assert server.stats()["faults"] == {"fail_first": 4}


# ---------------------------------------------------------------- stats, control


async def test_stats_count_requests_and_concurrency(server: Any) -> None:
    server.set_options(latency_ms=150)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=5.0) as http:
        bodies = [request_body(f"c{i % 5}", model=f"m{i % 2}") for i in range(20)]
        responses = await asyncio.gather(*(http.post("/v1/chat/completions", json=b)
                                           for b in bodies))
        assert all(r.status_code == 200 for r in responses)
        stats = (await http.get("/_stats")).json()
    assert stats["requests"] == 20
    assert stats["by_status"] == {"200": 20}
    assert stats["faults"] == {}
    assert stats["distinct_requests"] == 10
    assert stats["models"] == {"m0": 10, "m1": 10}
    assert stats["in_flight"] == 0
    assert stats["max_in_flight"] >= 10


def test_reset_endpoint_zeroes_stats(server: Any, client: httpx.Client) -> None:
    post(client, request_body())
    assert server.stats()["requests"] == 1
    reset = client.post("/_reset").json()
    assert reset["requests"] == 0 and reset["distinct_requests"] == 0
    assert reset["by_status"] == {} and reset["models"] == {}


def test_control_endpoint(server: Any, client: httpx.Client) -> None:
    changed = client.post("/_control", json={"fault_rate": 1.0, "faults": "503"})
    assert changed.status_code == 200
    assert changed.json()["faults"] == ["503"]
    assert client.get("/_control").json()["fault_rate"] == 1.0
    assert post(client, request_body()).status_code == 503
    assert server.stats()["faults"] == {"503": 1}
    for bad in ({"fault_rate": 2}, {"faults": "404"}, {"nope": 1}, [1]):
        assert client.post("/_control", json=bad).status_code == 400
    with pytest.raises(ValueError, match="unknown option"):
        server.set_options(nope=1)


def test_health_and_models(client: httpx.Client) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    models = client.get("/v1/models").json()
    assert models["object"] == "list"
    assert models["data"][0]["id"] == "fake-judge"


def test_cli_prints_ready_and_writes_ready_file(tmp_path: Path) -> None:
    ready_file = tmp_path / "url"
    command = [sys.executable, str(SERVER_PATH), "--port", "0", "--seed", "7",
               "--fault-rate", "0.3", "--faults", "429,500,hang", "--latency-ms", "1",
               "--ready-file", str(ready_file)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            assert line.startswith("READY http://127.0.0.1:")
            base_url = line.split(" ", 1)[1]
            assert ready_file.read_text() == base_url
            api_line = process.stdout.readline().split()
            assert api_line[:2] == ["api-base", base_url + "/v1"]
            assert httpx.get(base_url + "/health", timeout=5).json() == {"status": "ok"}
        finally:
            process.terminate()
            assert process.wait(timeout=10) == 0


def test_prompt_cache_reports_the_shared_prefix_openai_style(server: Any,
                                                             client: httpx.Client) -> None:
    """Off by default; on, the longest prefix sent before, in 128-token blocks, 0 below 1024,
    and in json_schema mode the schema leads the prefix (another schema shares nothing)."""
    stable = "R" * 5000  # 1250 tokens at 4 characters each

    def cached(text: str, fmt: dict[str, Any] | None = None) -> int | None:
        body = request_body(text, response_format=fmt)
        body["messages"][0]["content"] = stable
        usage = post(client, body).json()["usage"]
        return usage.get("prompt_tokens_details", {}).get("cached_tokens")

    assert cached("case one") is None  # off: no details, as before
    server.set_options(prompt_cache_block=128)
    assert cached("case one") == 0  # first sight
    assert cached("case two") == 1152  # 5000 + 16 shared chars -> 9 whole blocks of 512
    server.set_options(prompt_cache_min=2048)
    assert cached("case three") == 0  # a shared prefix below the minimum is not reported
    server.set_options(prompt_cache_min=1024)
    one, two = openai_format(VERDICT_SCHEMA), openai_format({**VERDICT_SCHEMA, "title": "other"})
    assert cached("case four", one) == 0
    assert cached("case five", one) >= 1152  # same schema: schema + system shared
    assert cached("case six", two) == 0  # the schema leads the prefix
    assert server.stats()["cached_tokens"] >= 2304
