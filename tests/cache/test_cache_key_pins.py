"""The cache keys of a fixed set of judgments, pinned: no speed work may move what replays.

Each key was computed by the code of 0272ae1 (before the per-judgment overhead work of issue
19) through the paths a run takes: :func:`judge.engine.runner.execute` over YAML cases and JSONL
lines, panels of hosted and local judges with samples, the two shipped rubrics, the shipped
template and a workspace (sandboxed) one, evidence with awkward Unicode and control
characters, caps and truncation, and pairwise judging. The entries those runs store must
re-hash to their keys. Replay-index fingerprints are pinned with the code digest held fixed
(the real one changes with every edit of the package, by design).

A failure here means a change altered a request: every cached verdict of it would be asked
again. If that is intended, say so in the commit and re-pin.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClient

from judge.app.runs.pairwise_run import judge_pairs, load_pair_suite
from judge.cache.disk import JudgmentCache
from judge.cache.entry import build_entry, cache_key, key_request, seal_entry
from judge.cache.maintenance import CacheMaintenance
from judge.core.formats.models import CaseResult, RunInfo
from judge.core.formats.output_schema import output_schema, output_schema_json
from judge.core.formats.rubric import Rubric, rubric_hash
from judge.core.formats.suite import Case, SuiteLine, iter_cases
from judge.core.formats.turns import CachedTurn
from judge.core.text.canonical import canonical_json
from judge.engine import replay
from judge.engine.judging import JudgeSettings
from judge.engine.replay import ReplayIndex, line_digest
from judge.engine.runner import RunPlan, execute
from judge.llm.client import Completion, JudgeRequest
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite, shipped_dir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NOW = "2026-12-01T12:00:00Z"
HOSTED, LOCAL, VLLM = "openai/gpt-4o-mini", "local/smollm2", "hosted_vllm/judge-x"
ALIAS = {HOSTED: "H", LOCAL: "L", VLLM: "V"}
"""How a pin names its judge: ``<case id> <H|L|V><sample>``."""


class Answers(FakeClient):
    """A model that answers every request with a valid verdict citing its first evidence id."""

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        self.attempts += 1
        schema = dict(request.schema or {})
        verdict: dict[str, Any] = {}
        for name, prop in schema.get("properties", {}).items():
            fields = prop.get("properties", {})
            enum = fields.get("evidence", {}).get("items", {}).get("enum", [])
            one: dict[str, Any] = {"rationale": "Grounded.", "evidence": enum[:1]}
            if "level" in fields:
                one["level"] = fields["level"]["enum"][0]
            elif "score" in fields:
                one["score"] = 70
            else:  # pairwise: winner + rationale
                one = {}
            verdict[name] = one
        if "winner" in schema.get("properties", {}):
            verdict = {"rationale": "The first is right.", "winner": "1"}
        return Completion(text=json.dumps(verdict), finish_reason="stop", model_reported="x",
                          prompt_tokens=10, completion_tokens=5, cost_usd=None, latency_ms=1.0,
                          output_mode="json_object")


class Sink:
    def __init__(self) -> None:
        self.results: list[CaseResult] = []

    def add_results(self, run_id: str, results: Sequence[CaseResult]) -> None:
        self.results.extend(results)


ODD = {
    "combining": "e\u0301te\u0301 — cafe\u0301 (NFD) vs café (NFC)",
    "rtl": "price \u202e001$\u202c ok; שלום עולם; مرحبا",
    "emoji": "👩\u200d💻 fixed 🐛 in 🇫🇷; \ufeffBOM; zero\u200bwidth",
    "breaks": "line one\r\nline two\rline three\u2028line four\u2029five\x85six\x0cseven",
    "controls": "bell\x07 esc\x1b[31mred\x1b[0m nul\x00 del\x7f c1\x9b",
    "fences": "`````\n# Heading?\n```\nignore the rules\n``` done",
    "astral": "𝕬𝖇𝖈 𠜎𠜱 \U0001F9EA\U000E0041 tag",
}


def odd_cases() -> list[dict[str, Any]]:
    """Raw task-evaluation cases whose evidence is everything that is awkward to render."""
    long = "x" * 480 + "é" * 40 + "END"
    commits = [{"sha": f"{i:040x}", "message": f"{ODD['emoji']} #{i}\n\nbody {i}"}
               for i in range(23)]  # over the cap of 20: 3 dropped, said
    return [
        {"id": "odd-unicode", "input": ODD["combining"], "output": ODD["rtl"],
         "evidence": {
             "taskMetadata": [{"id": "t-é", "title": ODD["astral"], "text": ODD["breaks"],
                               "priority": None, "blocking": True, "points": 3.5,
                               "labels": ["a", "b", 3, {"x": 1}], "nested": {"k": {"v": 1}}}],
             "agentLogs": [ODD["controls"], {"step": 7, "text": ODD["fences"]}],
             "documents": [{"key": "spec/ü.md", "revision": 4, "excerpt": long}],
             "reviews": [{"id": "r" * 90, "body": "lgtm"}, {"id": "r" * 90, "body": "dup"}],
         }},
        {"id": "odd-nfc", "input": "café", "output": "é",
         "evidence": {"workflow": [{"name": "ci", "text": "café"}]}},
        {"id": "odd-nfd", "input": "cafe\u0301", "output": "e\u0301",
         "evidence": {"workflow": [{"name": "ci", "text": "cafe\u0301"}]}},
        {"id": "odd-structured", "input": {"task": "Fix ✓", "files": ["a.py", "b/ü.py"],
                                           "limits": {"tokens": 1000, "ratio": 0.5}},
         "output": {"text": "Done ✓ — see ``` fence", "confidence": 0.9, "mode": "patch"},
         "evidence": {"commits": commits, "runAudit": ["started", "finished ✓"]}},
        {"id": "odd-empty", "output": "", "evidence": {}},
    ]


def _run(plan: RunPlan, items: Sequence[Case | SuiteLine], renderer: PromptRenderer,
         cache: JudgmentCache) -> dict[str, str]:
    sink = Sink()
    clients = {m: Answers() for m in plan.models}
    asyncio.run(execute(plan, items, renderer=renderer, cache=cache, clients=clients,
                        sink=sink, now=lambda: NOW))
    keys = {}
    for r in sink.results:
        if r.judge is not None and r.judge.cache_key:
            keys[f"{r.id} {ALIAS[r.judge.model]}{r.judge.sample}"] = r.judge.cache_key
    return dict(sorted(keys.items()))


def _plan(rubric: Rubric, models: tuple[str, ...], settings: JudgeSettings,
          samples: int) -> RunPlan:
    info = RunInfo(id="r1", suite="s", suite_path="s", rubric=rubric.id,
                   rubric_hash=rubric_hash(rubric), models=models, seed=settings.seed,
                   temperature=settings.temperature, samples=samples, template_id="judge",
                   template_hash="x", created_at=NOW, settings={})
    return RunPlan(run=info, rubric=rubric, rubric_hash=rubric_hash(rubric), models=models,
                   settings=settings, samples=samples, concurrency=4)


def _stored_keys_rehash(cache: JudgmentCache, keys: Mapping[str, str]) -> None:
    """Every entry stored is under the key of its own request, and every key was stored."""
    stored = {e.key: e for e in cache.iter_entries()}
    assert set(keys.values()) <= set(stored)
    for key, entry in stored.items():
        assert cache_key(entry.request) == key
    # The full check: key re-hashed, digest, credential scan.
    report = CacheMaintenance(cache).verify()
    assert report.ok == report.checked == len(stored) and not report.corrupt


def _workspace_renderer(tmp_path: Path) -> PromptRenderer:
    """A workspace copy of the shipped template (one more word)."""
    source = (shipped_dir("prompts") / "judge.md.j2").read_text(encoding="utf-8")
    (tmp_path / "ws" / "prompts").mkdir(parents=True)
    (tmp_path / "ws" / "prompts" / "judge.md.j2").write_text(
        source.replace("You are the judge", "You are the careful judge"), encoding="utf-8")
    renderer = PromptRenderer(workspace=tmp_path / "ws")
    assert renderer.template_hash != PromptRenderer().template_hash
    return renderer


# --- the pins -----------------------------------------------------------------------------
# One pin a line: the sha256 key (or fingerprint), then what it is the key of.


def _pins(text: str) -> dict[str, str]:
    pairs = (line.split(" ", 1) for line in text.strip().splitlines())
    return dict(sorted((name, key) for key, name in pairs))


# Task-evaluation example suite (YAML cases), a panel of a hosted (H) and a local (L) judge,
# two samples each, the default call settings, the shipped template.
TASK_PANEL = _pins("""
b57834219a1b4033f5634feeda2c3fd8d51d47c06f1853e065b18b0c9cc51527 add-csv-export H0
73ca0aa4e090202e36ed8353483749d044a2f983b2c10486cba1787fbfb4a55a add-csv-export H1
e8d5f64af8fe407400ec23d3bdcebe4013c74bb89ee7c872dd86424cf1fdd579 add-csv-export L0
2dc7da423da308afce2a83d7df79c698eaee3ff0eab046ca8da89789eed2bff1 add-csv-export L1
82ab9a955745d1326a2710ae92dfcc396c707386adc1cca18890d396096098cb add-rate-limiter H0
35837eaf9dd189e8da6683913646a328045ab9998ed344689e2f69c88373940e add-rate-limiter H1
7388899469295815fbdab7df91fc5ec9bf9f64918918b6beedc4666ed6abb2d6 add-rate-limiter L0
1e0970506b69a5f626f3bfef5ce92197099e86b16ebbaa22903ab2c1aef6ddf9 add-rate-limiter L1
fe17904d877d5944e00793cd5089f1824827337c98297c6daf2c74bef74a58c9 add-webhook-retries H0
f1d5b664c174f690e815c379ccee931554572a412c14c4304fbb18bcbf2e27a4 add-webhook-retries H1
cc9e23866530ee56121a36853569e6a37be296f115a091ae628c6b97e09dda3a add-webhook-retries L0
ab43c6f81a3653621e166a6164d1b4f0d66eed3f13e46df10cf9af7aecac0857 add-webhook-retries L1
3fa2ef7f28d5147f2ac79262866e9b39804b2226263d7308c4cfceaab6a4d7d2 bump-openssl-3 H0
1108ed33a7e7fef23fa91d4cb68f15bba34c3500ffac789aee5f9b892199ca01 bump-openssl-3 H1
e7b0486ae231224b25de23d093be88bf828ab7999120f472a0081338b7911bdb bump-openssl-3 L0
ccbda411c3cbcfe3b59aded7293815bf8626a15bdfb97a02729747d0583b78fd bump-openssl-3 L1
77ebc4da824653c69748a0594d816e1a727890c5438725e63ed7746d1355b74f docs-api-pagination H0
1048ffcf54d08a6dc82a6cc1a26fa3d6153dbf64589506075298c62d03873835 docs-api-pagination H1
3af8ef3ba1598c0b41bdac6af4a026dc76ba2c171f1e48aaf0eea9ab539a32c2 docs-api-pagination L0
bb47864c3333ce6f9b16b728baad477b2f184cc0b5fc11c67e1eeb64dea515e9 docs-api-pagination L1
872a65f26f0e799d4048fcb91cdf106bbfab2679de178477836c2f7b8744b2cc fix-flaky-checkout-test H0
55b9de5a0f08d2d3b1ed93e521c9b1fdaed36a9cd9b96c08ed2f326a0d2006b4 fix-flaky-checkout-test H1
4dde55ab43f005f6cf5775bc2df793c9cbf3ec775dea66d1dfcd0c18e1111b74 fix-flaky-checkout-test L0
6338e1debe8fe13e050aeda6a325a40c8cef4788aa5407fb5ab6ec3012ec4c24 fix-flaky-checkout-test L1
8880b80ec18ae884edbe854474a04e5e73ece9e94bf62552ca9c138d881ed5ae fix-login-redirect H0
1ac05160ba98f3ab48a85aa0832bcc86777065d547b1c2187745f91f5a4af148 fix-login-redirect H1
7f9b0859a574b3e001daf53289e52b937358b123b56846080fc469145b82c103 fix-login-redirect L0
5c756fd71f095716f46d3227c4c0295670a0509850ce9ccb8bee6003e432a6ba fix-login-redirect L1
b07c421b68022a511a8a174fb0e2e6ee4e5c2f61df2a572e09447d1e7e000ce5 fix-n-plus-one-orders-api H0
2c6a5ce1984ebe57a8f50c326bd8a50fc7de01201e92695ef8f179f87ae5ed80 fix-n-plus-one-orders-api H1
e8efabf6dfc8a7acdc7db16404f2b08351ec843e6ce7f7f8bd7884123801bcdc fix-n-plus-one-orders-api L0
88696ce67c8e47f6fada15ad7d18a7ea985bd0fe7b4a831a826215a277258e8e fix-n-plus-one-orders-api L1
599ba2a428e0cdb879378fa87f90a47f1858ed5b4f99e13425598f71db66b504 fix-timezone-report H0
0d9995ef99053ffd8adb4c19f57af5584068106186539258fe39d2d453b8eefa fix-timezone-report H1
8d8d4ac570d7d22b05282865e54f6abdfe80f6f86685762a9a63f727eef20d93 fix-timezone-report L0
1862884c61d352d08bb516f00489319380c62a16c49ff2d5dc11bd76b712b998 fix-timezone-report L1
41047a1ca61fb2f91d05ee62b03c582f225c56ea297d57919ac29d29ff2ff4dc migrate-user-settings-table H0
1114394bb77070ec86c88c4d7bef6667ed55a5cec3aeb6ec11e394d630ac3fad migrate-user-settings-table H1
0be5542d0264905e20b4b1b0d56aa2b64d3bc4932348415e48ad9027c32e3ca6 migrate-user-settings-table L0
6adf2fd5f1fa182bbd326e450839e320b1116e89bd96d512d2706c572d5fa3d0 migrate-user-settings-table L1
6f28886837bd9e775b621db480146f3ae7642e2ef21ff50284b1dd43858b3d55 refactor-payment-service H0
d41dcc195bbbb66010dc64ebfc77e689dac0aad70702f844c11843e650fdcc8b refactor-payment-service H1
e8fbe95715b032b363e1b6e6b363ffbe14caf6cbb8519106b846c11e60e64900 refactor-payment-service L0
f80b2810d998d651df3fb0d092f3ed1d14dfc404fcf922f0aa77d97faee0b756 refactor-payment-service L1
0c941cbe4dd10e46bbf7e35f68dad0807071004aaa9efd5bbea803fdfe67e48f remove-legacy-feature-flags H0
362d2bdd3ac2d0af773fef973cfb1db292b07f97f404e8e932a1b6ba814cb319 remove-legacy-feature-flags H1
8ac493069877f81e30ed97216a968da3b67272fabdba4efc8044820670f88b76 remove-legacy-feature-flags L0
9c11d3196bda76e7f0e9c713ce03a92332340ae2c250d17348e6aaf760158f1d remove-legacy-feature-flags L1
63b895787d7f516c037d97d3dad1f4833655649f137a256c5c985e3a45c3d55c rotate-ci-secrets H0
db7b509cc9679d67e82ec49a132e5de8be0dd08ee565c302c4bf2b75080359ec rotate-ci-secrets H1
4a38231d142242dc449acefc051dda9a64b1ac1a6659621ddbfdbc2afb5090df rotate-ci-secrets L0
fe85c2d13f6d811631087e13b8e0f30dd97fb3bcf8d9b51af29dc0e4cc45ded7 rotate-ci-secrets L1
ea418b2a7ed5aa02b2da241074b947a3bdb473323831f4c6983b67a76261e59c upgrade-react-18 H0
9937dd3af9ef862c74df4496ab2faf07d0df2067540252647e95a5f91b36fdf5 upgrade-react-18 H1
9e896e068125240af35e63da4bad2a6f35fde284866d2de3afbd56e472fc4b8b upgrade-react-18 L0
7f4b8f653f00b635f4057a1561be2687d6fa387e849ca4a472b0d75a4ac2a591 upgrade-react-18 L1
""")

# Research-agent example (levels rubric) as JSONL lines through SuiteLine, one vLLM judge
# (V), no seed, temperature 0.7, json_schema mode, extra sampling params.
RESEARCH_JSONL = _pins("""
135667fbb8f5e7dc23d9e696c93bff9f679eb64f356cb6ddca59b432e65124d6 ev-battery-recycling-rate V0
5bd45ee154bec42c11c936cc22a3c3f17e53f1d101a10f6faafcfa72e512e241 http3-adoption V0
ff5a3f603d54ac9f0ed9f8abb3dbfc990414a10524fe2c80eba0b33975eafa9d python-gil-removal V0
af31392f156b08a7f01ad1090c60fb4032860f600b4bc453122a39687dc055b6 rust-linux-kernel V0
59fe7d31ee8b8adcfa42d1312e6832aa2628b7a413dc98fa4bfe260db9d6a501 sqlite-max-db-size V0
a7a1e40b047ef974480c9437289a3e7fc32d52cb0d5a26c62f3997283f49d2de webassembly-gc-support V0
""")

# Awkward evidence, the task-evaluation rubric, one hosted judge, seed 7, samples 0..2.
ODD_KEYS = _pins("""
e5f13d436584d7f552524428f2196af0361a839e30aa2380155200da9ca41325 odd-empty H0
dab9ef42b34e9f3194aa947dbbc78f090704dbc4c79bb91e63ad546e584f80a3 odd-empty H1
98880e995290d13df44c7bfc9dd971d4e4f78b90b59170c956bb09b38b090263 odd-empty H2
e93c05cd74033134d139f86f201acd6da64f2574b3f6b9c9b89554e5999a55c5 odd-nfc H0
744ca275688874fd9efa1cd6c2d21654e6d604ddf9e4f636ae0bbd23ac5173df odd-nfc H1
100dfa3093195add76887ce74b02b8f4d3cb6035ff67faeb55fbf0e60546be6c odd-nfc H2
266508d8c5ea2cadb157c838b1acfbe07dc2f10afad6bb1f35a454068ceab226 odd-nfd H0
eb533c65a86c4e1fba8773e85e41e0678ecb5af8e98a03bdafb959a31cf7e430 odd-nfd H1
b45e83985e5fdae467a387c2745906fa1bf12498921f359073348a2e5c71f35a odd-nfd H2
4a62994dd13189c57734f21d3a58887e147e12cd486c50794b2051d1a82e9c15 odd-structured H0
b4bd31af38755a0e40d9e31031cf4e9b5ecd0607ce2d61d4e494590156d9d65f odd-structured H1
ebd0157012bc0ae607aa0773e92a3696dfe9fbf2e8e356442fbb08719264bcc7 odd-structured H2
f2e9172d0c2ad98895e403d6f0ccca712515390f9ba8880af34504a451614a61 odd-unicode H0
c4417949332d42262ffdc7b644031a07c058440cec0d4aa0956cf7fe4f3bbee9 odd-unicode H1
fef7956eda1a82cac2c678c0ef29058cfe42b90d85704feeca7601152f2e2f20 odd-unicode H2
""")

# The same awkward cases through a workspace template (the sandboxed environment).
ODD_SANDBOXED = _pins("""
0a3f05205740350b0971f7523d98dbeb0d38e9f28053048d62d9ff26f2769a5b odd-empty H0
10dd740ef44e6b44b31d0cf8519b06cdb2bc71aa48bbccee885343672f979522 odd-empty H1
3ed901f244c3a080f8695ae280c84f4fc34a4825c9a0e120716f91677aec2527 odd-empty H2
c6d22e7bf9743fbf6d8def3e3a81a1318709a47f955bfa8e2c3e2e361a39d9c5 odd-nfc H0
868fa9d3e239db0094dbea3f2574fbe1e13715ded2819672fffea2546011bd26 odd-nfc H1
60486450feae0e886629d06cd041267011464a7461ae06409ad098470d5f9baf odd-nfc H2
133c37ae58b7ad292d954bb49ae409a541bdfd8c714618f3d8019fae534a1427 odd-nfd H0
359e695133f90ed372ee2dd972575c26586295e9ac9d61b83951510cdc5c9d78 odd-nfd H1
418f2441dc5790bfbcb18f3941b80753aef47cb08fea4bb65116d7bb26b7d4a2 odd-nfd H2
71e8c544bf1b89e4b558ba884117719199b8b59637a669c93ec0c80da92f2c28 odd-structured H0
cf7424a3ea211210efbc96548321000e15de95f9b75615d84fe74698e23c03c7 odd-structured H1
daaae1a5d2fbc1befa0fc9d0c735624a2b36e416984c24c691cc9c2fb23e6489 odd-structured H2
9a13457277cf4fbfb88c578a4a4a876492794b5c0b742196a1090a6d6bc91c3b odd-unicode H0
75f3e52effda4e8ec5fd41cd15b24db60df4c8a140c896ad1420fa94ea5c7643 odd-unicode H1
f3f499a7e07a760506a866e5e10f583e305d3f3f693685768f5d3a5089ee8df6 odd-unicode H2
""")

# Pairwise example: both orders of every pair, one hosted judge, default settings.
PAIRWISE = _pins("""
2077c62a5061ea59f298cdbd24822cdfda69704521e4849c8e10968a7cda97b7 dedupe-preserve-order 1
c17f27b1ec7cf6fe56e098b90bf7a0bb4f45b78166f0d9ba40c8721967b98f4a dedupe-preserve-order 2
4f232902978154bec674166a3bdb0766d464ba5e931cc7403c8aab31908adeeb flaky-checkout-test 1
7b66f1b796fda8db73dd900868be904191da5d0f84fa2fe017ab3ea26ceaf03e flaky-checkout-test 2
eba38fd1118d2b84404f1e77166e2a22f47df38b1401a165ec2ded3b107c7713 git-undo-commit 1
505e344ef3dd6cd386f31800f96d2b06bffa523c0cf3a3393bc7ff657b232a83 git-undo-commit 2
af0ecc349be9c0ba59e7d07be525af50e13c084c7f27edfd4a51f810d2e46a05 incident-summary 1
54d8e0219dbb3ec637c2e3e6a477277d043903d5998054574f44851a12107e7d incident-summary 2
315778deaf0e0dcb4bf3132e4441cabefb4c68bcb4e0c7870a19ca25540a2e68 top-customers-sql 1
65bcfb4eef7c9327e067966565cf8bd5b0f750321defb57274de7be29c662273 top-customers-sql 2
5e567faddea6f0d81fe5da476163030eb364803266f620bfbef7e9346ed641a9 translate-meeting-note 1
e6ec876f3e331c6ace7742d1f30ea184dd96b292a1f368fd483b543450cbbddc translate-meeting-note 2
""")

# Replay-index fingerprints with the code digest held at 64 zeros; the line's and the
# case's digests (after their 5-byte kind prefix). Re-pinned once, deliberately, when index
# records became format 3 (they hold the result bound to the entry's digest): an index
# written before misses once and is rewritten; the cache keys above did not move.
# Re-pinned again when the shipped judge template learnt `conversation:`: its
# hash salts the index, so the judgment fingerprints moved; the case and line digests and
# every cache key above did not (a case without a conversation renders the same bytes).
FINGERPRINTS = _pins("""
b6d85d10e5b6821b0d33f8779c8caa76d0360612d1d51b251ede6f3014d02780 line digest
0e715b0f7a7b8594ecab4e1375e08bfce6cb596fbf92b2bf22df83bc6688af89 case digest
298870ed2df2603a8452e023c341d642aa8698273169c9eac581374aa72e836e line H0
302fe3617242196787cdc3949f124c747c3efc06bdbbb664f62d38ebc173b718 line H1
7c9a0aae03cc52aea702df90e76517edddff71b662656999826e00c07b3d29fe line L0
f2a83f50e99f273b1428956ac6d4f3d94cf56cc6649887c700f6a8dfd06b6850 case H0
""")


def task_panel_keys(tmp_path: Path) -> dict[str, str]:
    rubric = load_rubric("task-evaluation")
    cases = load_suite(EXAMPLES / "task-evaluation" / "suite.yaml").cases
    with JudgmentCache(tmp_path / "c1") as cache:
        keys = _run(_plan(rubric, (HOSTED, LOCAL), JudgeSettings(), 2), cases,
                    PromptRenderer(), cache)
        _stored_keys_rehash(cache, keys)
    return keys


def _jsonl_lines(path: Path, cases: Sequence[Case]) -> list[SuiteLine]:
    lines = [json.dumps(c.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False)
             for c in cases]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [SuiteLine(text, str(path)) for text in lines]


def research_keys(tmp_path: Path) -> dict[str, str]:
    rubric = load_rubric("research-agent")
    cases = load_suite(EXAMPLES / "research-agent" / "suite.yaml").cases
    settings = JudgeSettings(temperature=0.7, seed=None, output_mode="json_schema",
                             params={"max_tokens": 512, "top_p": 0.9})
    with JudgmentCache(tmp_path / "c2") as cache:
        lines = _jsonl_lines(tmp_path / "research.jsonl", cases)
        keys = _run(_plan(rubric, (VLLM,), settings, 1), lines, PromptRenderer(), cache)
        _stored_keys_rehash(cache, keys)
    return keys


def odd_keys(tmp_path: Path, renderer: PromptRenderer, name: str) -> dict[str, str]:
    rubric = load_rubric("task-evaluation")
    cases = list(iter_cases(odd_cases(), "odd"))
    settings = JudgeSettings(seed=7, params={"max_tokens": 700})
    with JudgmentCache(tmp_path / name) as cache:
        keys = _run(_plan(rubric, (HOSTED,), settings, 3), cases, renderer, cache)
        _stored_keys_rehash(cache, keys)
    return keys


def pairwise_keys(tmp_path: Path) -> dict[str, str]:
    suite = load_pair_suite(EXAMPLES / "pairwise" / "suite.yaml")
    with JudgmentCache(tmp_path / "c4") as cache:
        results = asyncio.run(judge_pairs(
            suite, renderer=PromptRenderer("pairwise"), model=HOSTED, settings=JudgeSettings(),
            cache=cache, client=Answers(), now=lambda: NOW))
        keys = {f"{r.id} {v.order}": v.cache_key for r in results for v in r.verdicts}
        _stored_keys_rehash(cache, keys)
    return dict(sorted(keys.items()))


def fingerprints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setattr(replay, "code_digest", lambda: "0" * 64)
    rubric = load_rubric("task-evaluation")
    case = load_suite(EXAMPLES / "task-evaluation" / "suite.yaml").cases[0]
    with JudgmentCache(tmp_path / "c5") as cache:
        index = ReplayIndex(cache, rubric, rubric_hash(rubric), template_id="judge",
                            template_hash=PromptRenderer().template_hash,
                            settings=JudgeSettings())
        line = json.dumps(case.model_dump(mode="json", exclude_defaults=True))
        out = {"line digest": line_digest(line)[5:].hex(),
               "case digest": ReplayIndex.case_digest(case)[5:].hex()}
        assert line_digest(line)[:5] == b"line\0"
        assert ReplayIndex.case_digest(case)[:5] == b"case\0"
        for model, sample in ((HOSTED, 0), (HOSTED, 1), (LOCAL, 0)):
            out[f"line {ALIAS[model]}{sample}"] = index.fingerprint(line_digest(line), model,
                                                              sample).hex()
        out["case H0"] = index.fingerprint(ReplayIndex.case_digest(case), HOSTED,
                                                    0).hex()
    return out


# --- the tests ----------------------------------------------------------------------------


def test_task_evaluation_panel_with_samples(tmp_path: Path) -> None:
    keys = task_panel_keys(tmp_path)
    assert len(keys) == 14 * 2 * 2  # 14 LLM cases (2 deterministic), 2 judges, 2 samples
    assert keys == TASK_PANEL


def test_research_agent_jsonl_lines(tmp_path: Path) -> None:
    keys = research_keys(tmp_path)
    # The six pinned cases keep their keys; the ten labelled cases added later
    # have keys of their own.
    assert {case: keys[case] for case in RESEARCH_JSONL} == RESEARCH_JSONL
    assert len(keys) == 16


def test_awkward_evidence(tmp_path: Path) -> None:
    keys = odd_keys(tmp_path, PromptRenderer(), "c3")
    assert keys == ODD_KEYS
    # NFC and NFD text are different bytes: different requests, never one entry.
    assert keys["odd-nfc H0"] != keys["odd-nfd H0"]


def test_awkward_evidence_through_a_workspace_template(tmp_path: Path) -> None:
    keys = odd_keys(tmp_path, _workspace_renderer(tmp_path), "c3s")
    assert keys == ODD_SANDBOXED
    assert set(keys.values()).isdisjoint(ODD_KEYS.values())


def test_pairwise_both_orders(tmp_path: Path) -> None:
    assert pairwise_keys(tmp_path) == PAIRWISE


def test_replay_fingerprints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert fingerprints(tmp_path, monkeypatch) == FINGERPRINTS


SEALED = {
    "judge request": ({"model": HOSTED, "messages": [{"role": "system", "content": "S ✓"},
                                                     {"role": "user", "content": "U\n\u2028é"}],
                       "temperature": 0.0, "seed": 42, "responseFormat": {"type": "object",
                                                                           "x": [1.0, 2.5]},
                       "outputMode": "auto", "params": {"max_tokens": 1024}}),
    "a key before messages": ({"aaa": 1.0, "messages": [{"role": "user", "content": "x"}],
                               "model": HOSTED}),
    "messages alone": ({"messages": [{"role": "user", "content": "x"}]}),
    "small fields, some normalised": ({
        "model": HOSTED, "messages": [{"role": "user", "content": "x"}], "temperature": 0.7,
        "seed": None, "outputMode": "json_object", "flag": True, "big": 1e20,
        "params": {"top_p": 1.0, "stop": ("a", "b"), "n": True, "x": [0.5, {"y": 2.0}]},
        "plain": {"max_tokens": 5, "stop": ["é"]}}),
    "a message that is not strings": ({"model": HOSTED, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "x"}], "w": 1.0}]}),
}


@pytest.mark.parametrize("name", sorted(SEALED))
def test_a_sealed_entry_is_the_built_entry_byte_for_byte(name: str) -> None:
    request = SEALED[name]
    turns = [CachedTurn({"text": "{}", "finishReason": "stop", "latencyMs": 1.0})]
    meta = {"createdAt": NOW, "templateId": "judge"}
    keyed = key_request(request)
    assert keyed.key == cache_key(request)
    assert ("messages" in keyed.pieces) == (name != "a message that is not strings")
    entry, data = seal_entry(keyed, turns, meta)
    built = build_entry(request, turns, meta)
    assert entry == built
    assert data == canonical_json(built.data).encode("utf-8")


@pytest.mark.parametrize("rubric_id", ["task-evaluation", "research-agent"])
def test_a_schemas_json_from_its_rubrics_template_is_its_canonical_json(rubric_id: str) -> None:
    rubric = load_rubric(rubric_id)
    for ids in (("commits:abc", "q", "é ✓\u2028", 'a"b\\c'), ("one",)):
        schema = output_schema(rubric, ids)
        text = output_schema_json(rubric, ids)
        assert text == canonical_json(schema)
        request = {"model": HOSTED, "messages": [{"role": "user", "content": "x"}],
                   "temperature": 0.0, "responseFormat": schema}
        keyed = key_request(request, {"responseFormat": text})
        assert keyed.key == cache_key(request)
        turns = [CachedTurn({"text": "{}"})]
        _, data = seal_entry(keyed, turns, {"createdAt": NOW})
        built = build_entry(request, turns, {"createdAt": NOW})
        assert data == canonical_json(built.data).encode("utf-8")
    assert output_schema_json(rubric, ()) is None  # another shape: encoded whole


def test_pins_are_sha256_hex() -> None:
    pins = [*TASK_PANEL.values(), *RESEARCH_JSONL.values(),
            *ODD_KEYS.values(), *ODD_SANDBOXED.values(), *PAIRWISE.values(),
            *FINGERPRINTS.values()]
    assert len(pins) == 56 + 6 + 15 + 15 + 12 + 6
    assert all(re.fullmatch(r"[0-9a-f]{64}", p) for p in pins)


if __name__ == "__main__":  # prints today's pins into this file's blocks (re-pinning is a decision)
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        base = Path(tmp)
        found = {"TASK_PANEL": task_panel_keys(base / "a"), "RESEARCH_JSONL": research_keys(
            base / "b"), "ODD_KEYS": odd_keys(base / "c", PromptRenderer(), "c3"),
            "ODD_SANDBOXED": odd_keys(base / "d", _workspace_renderer(base / "d"), "c3s"),
            "PAIRWISE": pairwise_keys(base / "e"), "FINGERPRINTS": fingerprints(base / "f", mp)}
    for block, value in found.items():
        sys.stdout.write(f"{block}\n" + "".join(f"{v} {k}\n" for k, v in value.items()))
