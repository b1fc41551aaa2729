"""``judge suite collect otel``: traces made by real instrumentation, collected, rendered, judged.

The traces come from ``tests/otel_producer.py``: the OpenTelemetry SDK with Arize's
OpenInference OpenAI instrumentor or the OpenTelemetry GenAI one around the OpenAI client,
calling the loopback fake judge, written by ``opentelemetry-exporter-otlp-json-file``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, run_judge

MODEL = "hosted_vllm/fake-judge"
SESSION_ATTR = {"openinference": "session.id", "genai": "gen_ai.conversation.id"}


def _produce(vocab: str, base_url: str, out: Path, *sessions: str) -> list[dict[str, Any]]:
    env = {"PATH": "/usr/bin:/bin", "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "otel_producer.py"), vocab,
                           f"{base_url}/v1", str(out), *sessions], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    spans = []
    for line in out.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                spans += [dict(s, scope=ss["scope"]["name"]) for s in ss["spans"]]
    return spans


def _collect(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_judge(["suite", "collect", "otel", *args], ws)


@pytest.mark.parametrize("vocab", ["openinference", "genai"])
def test_real_traces_collect_render_and_judge(vocab: str, fake_server: Any,
                                              workspace: Path) -> None:
    spans = _produce(vocab, fake_server.base_url, workspace / "traces.jsonl", "s1", "s2")
    scopes = {s["scope"] for s in spans}
    assert any(("openinference" if vocab == "openinference" else "genai") in s
               for s in scopes), scopes  # the instrumentor's own spans, not ours
    proc = _collect(workspace, "traces.jsonl", "-o", "suite.yaml",
                    "--id-attr", SESSION_ATTR[vocab])
    assert proc.returncode == 0, proc.stderr
    assert "wrote 2 cases of 2 traces" in proc.stdout
    suite = yaml.safe_load((workspace / "suite.yaml").read_text(encoding="utf-8"))
    assert [c["id"] for c in suite["cases"]] == ["s1", "s2"]
    case = suite["cases"][0]
    assert case["input"] == "What is the weather in Paris? Use the tool."
    assert case["output"].startswith("It is 18°C and sunny in Paris.")
    steps, audit = case["evidence"]["agentLogs"], case["evidence"]["runAudit"]
    ids = {s["spanId"] for s in spans}
    assert all(i["id"] == f"span-{i['spanId']}" and i["spanId"] in ids for i in steps + audit)
    llm = [i for i in steps if i["kind"] == "llm"]
    assert [i["kind"] for i in steps] == ["llm", "tool", "llm"]  # in time order
    assert llm[0]["model"] == "fake-judge" and llm[0]["inputTokens"] == 10
    assert llm[0]["outputTokens"] == 4 and llm[0]["durationMs"] >= 0
    assert steps[1]["tool"] == "get_weather" and "← 18°C and sunny" in steps[1]["text"]
    (error,) = audit
    assert error["status"] == "error" and "Connection error" in error["text"]
    assert llm[1]["attempt"] == 2 and llm[1]["retryOf"] == error["spanId"]  # a real retry
    facts = case["metadata"]["collected"]["facts"]
    assert facts["agent.errors"] == 1 and facts["agent.tool_calls"] == 1
    # The failed LLM call was retried: 3 of the 4 LLM and tool spans did not fail, and the
    # task rubric's agentPerformance rule reads that share.
    assert (facts["agent.steps"], facts["agent.ok_steps"]) == (4, 3)
    assert case["deterministic"]["agentPerformance"] == 75
    assert case["metadata"]["signals"]["agentPerformance"]["rule"] == "agent-steps-ok"

    proc = run_judge(["render", "suite.yaml", "--case", "s1"], workspace)
    assert proc.returncode == 0, proc.stderr
    cited = re.findall(r"^- \[(agentLogs:span-[0-9a-f]+|runAudit:span-[0-9a-f]+)\]",
                       proc.stdout, re.M)
    assert cited == [f"agentLogs:span-{i['spanId']}" for i in steps] + \
        [f"runAudit:span-{error['spanId']}"]

    args = ["run", "suite.yaml", "--model", MODEL, "--json"]
    proc = run_judge([*args, "--api-base", f"{fake_server.base_url}/v1"], workspace)
    assert proc.returncode == 0, proc.stderr
    cold = json.loads(proc.stdout)
    assert [c["status"] for c in cold["cases"]] == ["scored", "scored"]
    cited_ids = {e if isinstance(e, str) else e["id"] for c in cold["cases"]
                 for cat in c["categoryScores"]
                 for e in cat["evidence"]}
    assert cited_ids and all(re.fullmatch(r"(agentLogs|runAudit):span-[0-9a-f]{16}", i)
                             for i in cited_ids)
    fake_server.stop()
    proc = run_judge([*args, "--offline"], workspace)
    assert proc.returncode == 0, proc.stderr
    offline = json.loads(proc.stdout)
    strip = [{k: v for k, v in c.items() if k != "judge"} for c in cold["cases"]]
    assert [{k: v for k, v in c.items() if k != "judge"} for c in offline["cases"]] == strip

    proc = run_judge(["report", offline["run"]["id"], "-o", "report.html"], workspace)
    assert proc.returncode == 0, proc.stderr
    page = (workspace / "report.html").read_text(encoding="utf-8")
    assert page.count('class="span-tree"') == 2  # both cases, each a tree of its spans
    tree = page[page.index('class="span-tree"'):]
    shown = re.findall(r'data-id="((?:agentLogs|runAudit):span-[0-9a-f]+)"', tree)[:4]
    assert sorted(shown) == sorted([f"agentLogs:span-{i['spanId']}" for i in steps]
                                   + [f"runAudit:span-{error['spanId']}"])
    assert re.search(r'class="span span-\w+ cited" data-id="[^"]+"', page)  # highlighted


def _span(trace: str, span: str, parent: str | None, name: str = "step",
          attrs: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": trace, "spanId": span, "name": name, "kind": 1,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + int(span, 16) * 1000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + int(span, 16) * 1000 + 5_000_000),
        "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str)
                        else {"intValue": str(v)}} for k, v in (attrs or {}).items()],
        "status": {"code": extra.pop("code", 0)}, **extra}
    if parent:
        out["parentSpanId"] = parent
    return out


def _export(*spans: dict[str, Any]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []},
                                          "scopeSpans": [{"scope": {"name": "t"},
                                                          "spans": list(spans)}]}]})


T = "0af7651916cd43dd8448eb211c80319c"


def test_sdk_to_json_spans_and_pretty_documents(workspace: Path) -> None:
    # JSON lines of the SDK's span.to_json() shape, and one pretty-printed OTLP document.
    root = {"name": "agent", "context": {"trace_id": f"0x{T}", "span_id": "0x00000000000000a1"},
            "parent_id": None, "kind": "SpanKind.INTERNAL", "start_time": "2026-12-01T10:00:00Z",
            "end_time": "2026-12-01T10:00:02Z", "status": {"status_code": "OK"},
            "attributes": {"input.value": "hi", "output.value": "bye", "custom.flag": "x" * 300,
                           "openinference.span.kind": "AGENT"}}
    tool = {"name": "search", "context": {"trace_id": f"0x{T}", "span_id": "0x00000000000000a2"},
            "parent_id": "0x00000000000000a1", "start_time": "2026-12-01T10:00:01Z",
            "end_time": "2026-12-01T10:00:01.250000Z", "status": {"status_code": "ERROR",
                                                                  "description": "boom"},
            "attributes": {"openinference.span.kind": "TOOL", "tool.name": "search"}}
    (workspace / "sdk.jsonl").write_text(json.dumps(root) + "\n" + json.dumps(tool) + "\n")
    proc = _collect(workspace, "sdk.jsonl", "-o", "a.yaml", "--id", "run-1")
    assert proc.returncode == 0, proc.stderr
    case = yaml.safe_load((workspace / "a.yaml").read_text())["cases"][0]
    assert (case["id"], case["input"], case["output"]) == ("run-1", "hi", "bye")
    (item,) = case["evidence"]["runAudit"]
    assert item["id"] == "span-00000000000000a2" and item["startMs"] == 1000
    assert item["durationMs"] == 250 and item["statusMessage"] == "boom"
    folder = workspace / "traces"
    folder.mkdir()
    (folder / "one.json").write_text(json.dumps(json.loads(_export(
        _span(T, "00000000000000b1", None, attrs={"input.value": "q"}),
        _span(T, "00000000000000b2", "00000000000000b1", attrs={"zeta.unknown": "v" * 500}))),
        indent=2))
    proc = _collect(workspace, "traces", "-o", "b.yaml")
    assert proc.returncode == 0, proc.stderr
    case = yaml.safe_load((workspace / "b.yaml").read_text())["cases"][0]
    assert case["id"] == f"trace-{T[:16]}"
    (item,) = case["evidence"]["runAudit"]
    assert item["attr.zeta.unknown"] == "v" * 80  # an unknown attribute: a short reference


def test_selection_and_bad_input_exit_2(workspace: Path) -> None:
    other = "1" * 32
    (workspace / "t.jsonl").write_text(
        _export(_span(T, "00000000000000c1", None, attrs={"session.id": "a"})) + "\n"
        + _export(_span(other, "00000000000000d1", None, attrs={"session.id": "b"})) + "\n")
    proc = _collect(workspace, "t.jsonl", "-o", "s.yaml", "--where", "session.id=b")
    assert proc.returncode == 0, proc.stderr
    assert [c["id"] for c in yaml.safe_load((workspace / "s.yaml").read_text())["cases"]] \
        == [f"trace-{other[:16]}"]
    proc = _collect(workspace, "t.jsonl", "-o", "x.yaml", "--id", "one")
    assert proc.returncode == 2 and "several traces" in proc.stderr
    (workspace / "bad.jsonl").write_text(_export(_span(T, "00000000000000c1", None)) + "\n{oops\n")
    proc = _collect(workspace, "bad.jsonl", "-o", "x.yaml")
    assert proc.returncode == 2 and "bad.jsonl" in proc.stderr and "line 2" in proc.stderr
    (workspace / "nospan.jsonl").write_text('{"resourceSpans": [{"scopeSpans": [{"spans": '
                                            '[{"name": "no ids"}]}]}]}\n')
    proc = _collect(workspace, "nospan.jsonl", "-o", "x.yaml")
    assert proc.returncode == 2 and "traceId" in proc.stderr
    proc = run_judge(["suite", "collect", "nope", "f", "-o", "x.yaml"], workspace)
    assert proc.returncode == 2 and "No such command 'nope'" in proc.stderr
    assert not (workspace / "x.yaml").exists()
