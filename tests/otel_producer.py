"""A small agent traced by real instrumentation, exported to an OTLP/JSON file.

Run as a script, one process per trace file (an instrumentor patches the OpenAI client for
the whole process): ``python tests/otel_producer.py VOCAB BASE_URL OUT [SESSION...]``.
``VOCAB`` is ``openinference`` (Arize's ``openinference-instrumentation-openai``, emitting
``llm.*``/``input.value``) or ``genai`` (``opentelemetry-instrumentation-openai-v2``, the
OTel GenAI conventions ``gen_ai.*``). Nobody here wrote either instrumentor or the file
exporter (``opentelemetry-exporter-otlp-json-file``); the agent's own spans (the root and
the tool call) use the SDK and the conventions' own attribute-name constants, as an agent
does. The model is the loopback fake judge at ``BASE_URL``; a second call to a closed
loopback port makes an error span. Each SESSION makes one trace with
``session.id``/``gen_ai.conversation.id`` set to it.
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

import openai
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

__all__ = ["main"]

QUESTION = "What is the weather in Paris? Use the tool."
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _instrument(vocab: str, provider: TracerProvider) -> None:
    if vocab == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=provider)
    else:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as GenAI
        GenAI().instrument(tracer_provider=provider)


def _agent_attributes(vocab: str, session: str) -> dict[str, Any]:
    if vocab == "openinference":
        from openinference.semconv.trace import SpanAttributes
        return {SpanAttributes.OPENINFERENCE_SPAN_KIND: "AGENT",
                SpanAttributes.INPUT_VALUE: QUESTION, SpanAttributes.SESSION_ID: session}
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent",
            "gen_ai.conversation.id": session, "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}])}


def _tool_attributes(vocab: str) -> dict[str, Any]:
    if vocab == "openinference":
        from openinference.semconv.trace import SpanAttributes
        return {SpanAttributes.OPENINFERENCE_SPAN_KIND: "TOOL",
                SpanAttributes.TOOL_NAME: "get_weather",
                SpanAttributes.INPUT_VALUE: json.dumps({"city": "Paris"}),
                SpanAttributes.OUTPUT_VALUE: "18°C and sunny"}
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
            "gen_ai.tool.call.result": "18°C and sunny"}


def _answer(vocab: str, span: trace.Span, text: str) -> None:
    if vocab == "openinference":
        from openinference.semconv.trace import SpanAttributes
        span.set_attribute(SpanAttributes.OUTPUT_VALUE, text)
    else:
        span.set_attribute("gen_ai.output.messages", json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]))


def run(vocab: str, base_url: str, out: str, sessions: list[str]) -> None:
    """Trace one agent run per session into ``out``."""
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(out)))
    _instrument(vocab, provider)
    tracer = provider.get_tracer("weather-agent")
    client = openai.OpenAI(base_url=base_url, api_key="sk-test-not-a-real-key-000000000000",
                           max_retries=0)
    broken = openai.OpenAI(base_url=f"http://127.0.0.1:{_closed_port()}/v1",
                           api_key="sk-test-not-a-real-key-000000000000", max_retries=0,
                           timeout=2)
    for session in sessions:
        with tracer.start_as_current_span("weather-agent",
                                          attributes=_agent_attributes(vocab, session)) as root:
            messages: list[Any] = [{"role": "user", "content": QUESTION}]
            first = client.chat.completions.create(model="fake-judge", messages=messages,
                                                   tools=TOOLS, temperature=0, seed=1)
            with tracer.start_as_current_span("get_weather",
                                              attributes=_tool_attributes(vocab)):
                pass
            messages += [{"role": "assistant", "content": first.choices[0].message.content},
                         {"role": "user", "content": "The tool said: 18°C and sunny."}]
            try:  # the first attempt fails; the same request is sent again below
                broken.chat.completions.create(model="fake-judge", messages=messages,
                                               temperature=0, seed=1)
            except openai.APIConnectionError:
                pass  # the instrumentor recorded the failed call as an error span
            final = client.chat.completions.create(model="fake-judge", messages=messages,
                                                   temperature=0, seed=1)
            text = f"It is 18°C and sunny in Paris. ({final.choices[0].message.content})"
            _answer(vocab, root, text)
            root.set_status(Status(StatusCode.OK))
    provider.shutdown()


def main(argv: list[str]) -> int:
    """``VOCAB BASE_URL OUT [SESSION...]``."""
    vocab, base_url, out, *sessions = argv
    run(vocab, base_url, out, sessions or ["s1"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
