"""Speculative decoding: the flags parsed as each engine parses them, and every memory term as a worked
example from the engine's code (core/speculative.py, core/engines/vllm/speculative.py,
core/engines/sglang_speculative.py).

Drafts: tests/data/drafts/*/config.json follow the config.json files of yuhuili/EAGLE-LLaMA3-Instruct-8B
(EAGLE-1) and yuhuili/EAGLE3-LLaMA3.1-Instruct-8B (EAGLE-3: one Llama layer, draft_vocab_size 32000),
written from their published shape (the Hub could not be reached to copy them byte for byte).
Target: Llama-3.1-8B (hidden 4096, 32 heads, 8 KV heads, head_dim 128, MLP 14336, vocab 128256) in
bf16.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusize.core.engines import engine, prepare
from gpusize.core.engines.sglang_defaults import sglang_defaults
from gpusize.core.engines.sglang_speculative import draft_pool_tokens
from gpusize.core.engines.vllm.speculative import draft_kv_bytes_per_token
from gpusize.core.parse import parse_config
from gpusize.core.releases import SGLANG
from gpusize.core.reserves import outside_bytes, total_bytes
from gpusize.core.settings import EngineSettings
from gpusize.core.speculative import (
    DraftModel,
    draft_format,
    draft_weights_bytes,
    expected_tokens_per_step,
    mtp_weights_bytes,
    speculation,
)
from gpusize.core.workload import Request, Workload
from gpusize.errors import InputError
from tests.helpers import catalog_spec, find_gpu

DRAFTS = Path(__file__).resolve().parents[1] / "data" / "drafts"
EAGLE3 = '{"method": "eagle3", "model": "EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'


def draft(name: str) -> DraftModel:
    config = json.loads((DRAFTS / name / "config.json").read_text())
    spec = parse_config(config)
    return DraftModel(name, spec, config.get("draft_vocab_size") or spec.vocab_size)


def work_for(target: str, ctx: int = 8192, draft_name: str | None = None, **settings: object) -> Workload:
    spec = catalog_spec(target)
    engine_settings = EngineSettings(**settings)  # type: ignore[arg-type]
    found = draft(draft_name) if draft_name else None
    return prepare(spec, Request(context_tokens=ctx, engine=engine_settings, draft=found))


# --------------------------------------------------------------------------- parsing


def test_vllm_json_parses_into_method_draft_and_tokens() -> None:
    s = speculation(EngineSettings(speculative_config=EAGLE3), None)
    assert s is not None
    assert (s.method, s.draft, s.tokens, s.draft_tp) == ("eagle3", "EAGLE3-LLaMA3.1-Instruct-8B", 3, None)


@pytest.mark.parametrize(
    ("config", "method"),
    [
        ('{"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 2}', "eagle3"),
        ('{"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 2}', "eagle"),
        ('{"model": "meta-llama/Llama-3.2-1B", "num_speculative_tokens": 2}', "draft_model"),
        ('{"method": "draft", "model": "m", "num_speculative_tokens": 2}', "draft_model"),
        ('{"method": "deepseek_mtp", "num_speculative_tokens": 1}', "mtp"),
        ('{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}', "ngram"),
    ],
)
def test_vllm_method_is_named_or_inferred_from_the_draft(config: str, method: str) -> None:
    """vLLM infers the method from the draft's name when none is given (eagle3, eagle, else a draft model)."""
    s = speculation(EngineSettings(speculative_config=config), None)
    assert s is not None and s.method == method


def test_mtp_tokens_default_to_the_checkpoints_mtp_layers() -> None:
    spec = catalog_spec("DeepSeek-V3")
    s = speculation(EngineSettings(speculative_config='{"method": "mtp"}'), spec)
    assert s is not None and s.tokens == spec.num_nextn_predict_layers == 1


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"method": ', "not valid JSON"),
        ("[1, 2]", "give a JSON object"),
        ('{"method": "medusa", "num_speculative_tokens": 2}', "method 'medusa' is not modelled"),
        ('{"method": "eagle3", "model": "m"}', "num_speculative_tokens is required"),
        ('{"method": "eagle3", "num_speculative_tokens": 3}', "needs a draft model"),
        ('{"method": "ngram", "num_speculative_tokens": 0}', "from 1 to 64"),
        ('{"method": "ngram", "num_speculative_tokens": true}', "from 1 to 64"),
        ('{"method": "ngram", "num_speculative_tokens": "3"}', "from 1 to 64"),
        ("{}", "give a method"),
    ],
)
def test_vllm_json_the_engine_refuses_is_one_input_error(config: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        speculation(EngineSettings(speculative_config=config), None)
    assert "--speculative-config" in str(caught.value) and "\n" not in str(caught.value)


def test_sglang_flags_parse_with_the_release_default_tree() -> None:
    """No tree given: SGLang's auto_choose_speculative_params, (5, 4, 8) for Llama, (3, 1, 4) for MLA."""
    settings = EngineSettings(name="sglang", speculative_algorithm="eagle3", speculative_draft_model_path="d")
    s = speculation(settings, catalog_spec("Llama-3.1-8B"))
    assert s is not None and (s.method, s.draft, s.steps, s.topk, s.draft_tokens) == ("eagle3", "d", 5, 4, 8)
    nextn = speculation(
        EngineSettings(name="sglang", speculative_algorithm="NEXTN"), catalog_spec("DeepSeek-V3")
    )
    assert nextn is not None and (nextn.method, nextn.draft, nextn.steps, nextn.topk) == ("mtp", None, 3, 1)


def test_sglang_refuses_an_unknown_algorithm_or_a_missing_draft() -> None:
    with pytest.raises(InputError, match="unknown --speculative-algorithm 'MEDUSA'"):
        speculation(EngineSettings(name="sglang", speculative_algorithm="MEDUSA"), None)
    with pytest.raises(InputError, match="needs --speculative-draft-model-path"):
        speculation(EngineSettings(name="sglang", speculative_algorithm="EAGLE"), None)


def test_a_method_with_a_draft_needs_the_draft_read() -> None:
    with pytest.raises(InputError, match="was not read"):
        work_for("Llama-3.1-8B", speculative_config=EAGLE3)


def test_an_older_sglang_release_refuses_the_flags() -> None:
    with pytest.raises(InputError, match="does not exist in SGLang 0.4.0"):
        work_for("Llama-3.1-8B", name="sglang", version="0.4.0", speculative_algorithm="NGRAM")


# --------------------------------------------------------------------------- the draft's weights


def test_eagle3_head_weights_worked_example() -> None:
    """EAGLE-3 head of Llama-3.1-8B (llama_eagle3.py), bf16, TP=1:
    layer linear: attention 4096 x (4096 + 2 x 1024) + 4096 x 4096 = 41,943,040; MLP 3 x 4096 x 14336 =
    176,160,768; q/k/v reading 2h: 4096 x 6144 = 25,165,824 more; lm_head 32,000 x 4096 = 131,072,000
    (sharded); fc 3 x 4096 x 4096 = 50,331,648 (replicated); norms 2 x 4096 + 4096; embeddings shared
    (same shape as the target's). (243,269,632 + 131,072,000) x 2 + 50,331,648 x 2 + 12,288 x 2 =
    849,371,136 B; at TP=2 the sharded part halves: 475,029,504 B."""
    target, head = catalog_spec("Llama-3.1-8B"), draft("EAGLE3-LLaMA3.1-Instruct-8B")
    fmt = draft_format(target, head.spec)
    assert fmt.name == "bf16"  # the head's float16 config is served in the target's dtype
    assert draft_weights_bytes(target, head, "eagle3", fmt, 1) == 849_371_136
    assert draft_weights_bytes(target, head, "eagle3", fmt, 2) == 475_029_504


def test_eagle1_head_takes_the_targets_embeddings_and_lm_head() -> None:
    """EAGLE-1 (llama_eagle.py; eagle.py load_model shares embed_tokens and lm_head): the layer
    218,103,808 x 2 + fc 2 x 4096 x 4096 = 33,554,432 x 2 + norms 12,288 x 2 = 503,341,056 B."""
    target, head = catalog_spec("Llama-3.1-8B"), draft("EAGLE-LLaMA3-Instruct-8B")
    assert draft_weights_bytes(target, head, "eagle", draft_format(target, head.spec), 1) == 503_341_056


def test_mtp_draft_weights_are_the_mtp_layers_mtp_loads() -> None:
    spec = catalog_spec("DeepSeek-V3")
    work = work_for("DeepSeek-V3", speculative_config='{"method": "mtp", "num_speculative_tokens": 1}')
    c = engine("vllm").evaluate(spec, find_gpu("H200"), 8, work)
    assert c.per_gpu is not None
    held = {r.name: r.bytes for r in c.per_gpu.reserves}
    assert held["draft_weights"] == mtp_weights_bytes(spec, work.weights, 8) > 0


# --------------------------------------------------------------------------- vLLM


def test_vllm_eagle3_reserves_and_kv_pool_worked_example() -> None:
    """Llama-3.1-8B + EAGLE-3 on one H100, 8k: reserves draft_weights 849,371,136 B and draft_buffers
    8,192 tokens x (2 x 4096 x 2 B + 16 B of index buffers) = 134,348,800 B, taken before the pool; the
    draft layer's 2 x 8 x 128 x 2 = 4,096 B per token joins every 16-token block of the target's
    32 x 4,096 = 131,072 B, so the pool is available // (16 x 135,168) blocks of 16 tokens."""
    spec = catalog_spec("Llama-3.1-8B")
    work = work_for("Llama-3.1-8B", draft_name="EAGLE3-LLaMA3.1-Instruct-8B", speculative_config=EAGLE3)
    c = engine("vllm").evaluate(spec, find_gpu("H100"), 1, work)
    g = c.per_gpu
    assert g is not None
    assert [(r.name, r.bytes) for r in g.reserves] == [
        ("draft_weights", 849_371_136),
        ("draft_buffers", 134_348_800),
    ]
    assert draft_kv_bytes_per_token(spec, work, 1) == 4_096
    available = (
        g.usable_bytes - g.weights_bytes - g.activations_bytes - g.overhead_bytes - total_bytes(g.reserves)
    )
    assert c.kv_cache_capacity_tokens == available // (16 * (131_072 + 4_096)) * 16
    assert g.kv_cache_bytes == 8192 // 16 * 16 * (131_072 + 4_096)


def test_vllm_ngram_holds_nothing_on_the_gpu() -> None:
    spec, gpu = catalog_spec("Llama-3.1-8B"), find_gpu("H100")
    plain = engine("vllm").evaluate(spec, gpu, 1, work_for("Llama-3.1-8B"))
    ngram = work_for("Llama-3.1-8B", speculative_config='{"method": "ngram", "num_speculative_tokens": 4}')
    c = engine("vllm").evaluate(spec, gpu, 1, ngram)
    assert c.per_gpu is not None and c.per_gpu.reserves == ()
    assert c.kv_cache_capacity_tokens == plain.kv_cache_capacity_tokens


def test_vllm_mtp_adds_the_mtp_layers_kv() -> None:
    """DeepSeek-V3's one MTP layer caches the MLA latent, (512 + 64) x 2 B = 1,152 B per token."""
    work = work_for("DeepSeek-V3", speculative_config='{"method": "mtp"}')
    assert draft_kv_bytes_per_token(catalog_spec("DeepSeek-V3"), work, 8) == 1_152


# --------------------------------------------------------------------------- SGLang


def test_sglang_default_fraction_keeps_2_gib_for_an_eagle_draft() -> None:
    """server_args.py 0.5.2-0.5.9: reserved_mem += 2 x 1024 MiB for the EAGLE family, 6 x 1024 for
    STANDALONE (4 x 1024 for the EAGLE family 0.5.10-0.5.13.post1, read in the wheels:
    tests/core/test_sglang_release_gates.py); from 0.5.14 (sgl-project/sglang#23862) no flat
    reservation: the draft is budgeted."""
    gpu, v = find_gpu("H100"), SGLANG.resolve("0.5.9").version
    newest = SGLANG.newest
    assert sglang_defaults(gpu, 1, newest, algorithm="EAGLE3") == sglang_defaults(gpu, 1, newest)
    plain = sglang_defaults(gpu, 1, v).mem_fraction_static
    eagle = sglang_defaults(gpu, 1, v, algorithm="EAGLE3").mem_fraction_static
    standalone = sglang_defaults(gpu, 1, v, algorithm="STANDALONE").mem_fraction_static
    assert eagle == pytest.approx(plain - 2048 / gpu.memory_mib, abs=0.0011)
    assert standalone == pytest.approx(plain - 6144 / gpu.memory_mib, abs=0.0011)
    assert sglang_defaults(gpu, 1, v, algorithm="NGRAM").mem_fraction_static == plain


def sglang_eagle3(version: str) -> Workload:
    return work_for(
        "Llama-3.1-8B",
        draft_name="EAGLE3-LLaMA3.1-Instruct-8B",
        name="sglang",
        version=version,
        speculative_algorithm="EAGLE3",
        speculative_draft_model_path="EAGLE3-LLaMA3.1-Instruct-8B",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
    )


def test_sglang_budgets_the_draft_from_0_5_14() -> None:
    """pool_configurator.py DefaultPoolConfigurator: cell 32 x 4,096 B x (1 + 1 draft layer / 32) =
    135,168 B per token; the head's 849,371,136 B of weights come out of the budget first (#28855)."""
    spec = catalog_spec("Llama-3.1-8B")
    c = engine("sglang").evaluate(spec, find_gpu("H100"), 1, sglang_eagle3("0.5.23"))
    g = c.per_gpu
    assert g is not None and c.kv_cache_capacity_tokens is not None
    assert [(r.name, r.bytes, r.outside) for r in g.reserves] == [("draft_weights", 849_371_136, False)]
    pool = g.usable_bytes - g.weights_bytes - 849_371_136
    assert c.kv_cache_capacity_tokens == pool // 135_168
    assert g.kv_cache_bytes == 8192 * 135_168


def test_sglang_draft_pool_worked_example() -> None:
    """Before 0.5.14, the draft worker's pool (model_runner.py draft_runner_cache_size): the target's
    pool + 48 requests (SGLang's cap with speculation) x (3 steps x top-1 + 4 draft tokens) + 100, one
    4,096 B cell per token (the head's one layer); weights and pool come after the static budget."""
    spec = catalog_spec("Llama-3.1-8B")
    work = work_for(
        "Llama-3.1-8B",
        draft_name="EAGLE3-LLaMA3.1-Instruct-8B",
        name="sglang",
        version="0.5.10",
        speculative_algorithm="EAGLE3",
        speculative_draft_model_path="EAGLE3-LLaMA3.1-Instruct-8B",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
    )
    c = engine("sglang").evaluate(spec, find_gpu("H100"), 1, work)
    g = c.per_gpu
    assert g is not None and c.kv_cache_capacity_tokens is not None
    tokens = c.kv_cache_capacity_tokens + 48 * (3 * 1 + 4) + 100
    s = speculation(work.engine, spec)
    assert s is not None and draft_pool_tokens(s, c.kv_cache_capacity_tokens, 48) == tokens
    held = {r.name: r for r in g.reserves}
    assert held["draft_kv"].bytes == tokens * 4_096 and held["draft_kv"].outside
    assert held["draft_weights"].bytes == 849_371_136 and held["draft_weights"].outside
    assert total_bytes(g.reserves) == 0 and outside_bytes(g.reserves) == 849_371_136 + tokens * 4_096
    assert c.fits
    assert engine("sglang").max_sequences is not None
    assert engine("sglang").max_sequences(find_gpu("H100"), work) == 48


def test_sglang_runs_out_of_memory_when_the_draft_does_not_fit_outside_the_budget() -> None:
    """Before 0.5.14, a whole draft model (STANDALONE) beside --mem-fraction-static 0.95 on an 80 GB
    card: the draft's pool, as large as the target's, cannot come from the 5% left."""
    spec = catalog_spec("Llama-3.1-8B")
    work = work_for(
        "Llama-3.1-8B",
        draft_name="EAGLE-LLaMA3-Instruct-8B",
        name="sglang",
        version="0.5.10",
        mem_fraction_static=0.95,
        speculative_algorithm="STANDALONE",
        speculative_draft_model_path="EAGLE-LLaMA3-Instruct-8B",
    )
    c = engine("sglang").evaluate(spec, find_gpu("H100"), 1, work)
    assert not c.fits and c.reason is not None and "runs out of memory loading the draft" in c.reason


# --------------------------------------------------------------------------- the speed-up


def test_expected_tokens_per_step() -> None:
    """(1 - a^(k+1)) / (1 - a): a = 0.8, k = 3: (1 - 0.4096) / 0.2 = 2.952; a = 1: k + 1."""
    assert expected_tokens_per_step(0.8, 3) == pytest.approx(2.952)
    assert expected_tokens_per_step(1.0, 3) == 4.0
    assert expected_tokens_per_step(0.0, 3) == 1.0
