"""llama.cpp's KV per token per layer and recurrent state per sequence, family by family, each against
a worked example from llama.cpp's own code.

The code is llama.cpp 0c1e57098 as vendored in llama-cpp-python 0.3.36 (PyPI sdist), the build
gpusize models (core/engines/llamacpp_families.py cites each line). f16 cache (2 B an element), flash
attention on, -c 8192, -ub 512, llama-server's default of one KV stream per slot (-np given, no
--kv-unified: common/common.h:575):
- cells: n_ctx_seq = pad(8192 / np, 256) per stream, np streams (src/llama-context.cpp:290-306);
- K + V per cell = n_head_kv(il) x (n_embd_head_k + n_embd_head_v) (src/llama-hparams.cpp:156-166);
- MLA: K = kv_lora_rank + qk_rope_head_dim with one KV head, no V tensor (src/llama-kv-cache.cpp:231);
- SWA cells = GGML_PAD(min(n_ctx_seq, n_swa + n_ubatch), 256) per stream (src/llama-kv-cache-iswa.cpp:73);
- state = (n_embd_r + n_embd_s) x 4 B per sequence, n_embd_r = (d_conv - 1) x (d_inner + 2 x n_group x
  d_state), n_embd_s = d_state x d_inner; KDA: 3 x (d_conv - 1) x n_head x head_dim and head_dim^2 x
  n_head (src/llama-hparams.cpp:208-260);
- DSA indexer K: one head of indexer_head_size beside the MLA latent (src/llama-kv-cache-dsa.cpp:44-52);
  MSA indexer: one K and one V head of indexer_head_size past the leading dense layers
  (src/llama-model.cpp:2378, src/llama-kv-cache-msa.cpp:40-48).
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import replace

import pytest

from gpusize.core.engines import llamacpp
from gpusize.core.engines.llamacpp_families import LLAMACPP_ARCH, family_refusal, layer_caches
from gpusize.core.parse import parse_config
from gpusize.sources.catalog import load_models
from gpusize.sources.gguf import ARCH_TO_MODEL_TYPE
from tests.helpers import catalog_spec, cli

F16 = 2
N_CTX = 8192
UBATCH = 512

#: (catalog model, {(bytes per token per layer, window): layers}, state bytes per sequence, the arithmetic).
ROWS: list[tuple[str, dict[tuple[int, int | None], int], int, str]] = [
    ("pythia-6.9b-deduped", {(16384, None): 32}, 0, "gptneox: 32 kv x (128 + 128) x 2 B"),
    ("SmolLM2-1.7B", {(8192, None): 24}, 0, "llama: 32 kv x (64 + 64) x 2 B"),
    ("Qwen2.5-7B", {(2048, None): 28}, 0, "qwen2: 4 kv x (128 + 128) x 2 B; use_sliding_window false"),
    ("Qwen3-0.6B", {(4096, None): 28}, 0, "qwen3: 8 kv x (128 + 128) x 2 B"),
    ("Qwen3-235B-A22B", {(2048, None): 94}, 0, "qwen3moe: 4 kv x 256 x 2 B"),
    (
        "Qwen3-Next-80B-A3B-Instruct",
        {(2048, None): 12, (0, None): 36},
        36 * 4 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096),
        "qwen3next: attention every 4th layer (src/llama-model.cpp:2417 (i + 1) % 4), 2 kv x 512 x 2 B; "
        "36 delta-net layers, d_inner 32 x 128, 16 groups, d_state 128, d_conv 4: r 24576 + s 524288 f32",
    ),
    ("gpt_bigcode-santacoder", {(512, None): 24}, 0, "starcoder: MQA 1 kv x (128 + 128) x 2 B"),
    ("DeepSeek-R1", {(1152, None): 61}, 0, "deepseek2 MLA: K (512 + 64) x 2 B, V a view of K"),
    ("Kimi-K2-Instruct", {(1152, None): 61}, 0, "deepseek2 MLA: (512 + 64) x 2 B"),
    ("DeepSeek-V2-Lite", {(1152, None): 27}, 0, "deepseek2 MLA: (512 + 64) x 2 B"),
    (
        "gemma-3-1b-it",
        {(1024, 512): 22, (1024, None): 4},
        0,
        "gemma3: 1 kv x 512 x 2 B; 5 SWA (512) : 1 full",
    ),
    ("Llama-4-Scout-17B-16E-Instruct", {(4096, 8192): 36, (4096, None): 12}, 0, "llama4: chunked 8192, 3:1"),
    ("phi-4", {(5120, None): 40}, 0, "phi3: 10 kv x 256 x 2 B"),
    (
        "Phi-3-mini-4k-instruct",
        {(12288, None): 32},
        0,
        "phi3: 32 kv x (96 + 96) x 2 B; sliding_window 2047 dropped (src/llama-model.cpp:1188-1198)",
    ),
    (
        "Mistral-7B-v0.1",
        {(4096, None): 32},
        0,
        "llama: 8 kv x 256 x 2 B; sliding_window 4096 not read by the llama arch (src/llama-model.cpp:637)",
    ),
    ("Ministral-8B-Instruct-2410", {(4096, None): 36}, 0, "llama: 8 kv x 256 x 2 B, window not read"),
    ("Mixtral-8x7B-Instruct-v0.1", {(4096, None): 32}, 0, "llama: 8 kv x 256 x 2 B"),
    (
        "Nemotron-H-56B-Base-8K",
        {(4096, None): 10, (0, None): 108},
        54 * 4 * (3 * (16384 + 2 * 8 * 256) + 256 * 16384),
        "nemotron_h: 10 attention layers 8 kv x 256 x 2 B; 54 Mamba-2 layers d_inner 256 x 64, 8 groups, "
        "d_state 256: r 61440 + s 4194304 f32; 54 MLP layers neither (src/llama-model.cpp:7565-7572)",
    ),
    (
        "gpt-oss-120b",
        {(2048, 128): 18, (2048, None): 18},
        0,
        "gpt-oss: 8 kv x 128 x 2 B; SWA 128 every other",
    ),
    ("GLM-4.5-Air", {(4096, None): 46}, 0, "glm4moe: 8 kv x 256 x 2 B; the MTP block has no KV"),
    ("gemma-2-27b-it", {(8192, 4096): 23, (8192, None): 23}, 0, "gemma2: 16 kv x 256 x 2 B; SWA 4096 1:1"),
    ("OLMo-2-1124-7B", {(16384, None): 32}, 0, "olmo2: 32 kv x 256 x 2 B"),
    (
        "starcoder2-15b",
        {(2048, None): 40},
        0,
        "starcoder2: 4 kv x 256 x 2 B; sliding_window 4096 not read (src/llama-model.cpp:1420)",
    ),
    ("Qwen3-VL-8B-Instruct", {(4096, None): 36}, 0, "qwen3vl: 8 kv x 256 x 2 B"),
    ("Qwen3-VL-30B-A3B-Instruct", {(2048, None): 48}, 0, "qwen3vlmoe: 4 kv x 256 x 2 B"),
    (
        "Llama-3_3-Nemotron-Super-49B-v1",
        {(4096, None): 49, (0, None): 31},
        0,
        "deci: 49 attention layers 8 kv x 256 x 2 B; 31 no-op attention layers n_head_kv 0 (has_kv false)",
    ),
    ("c4ai-command-r-v01", {(32768, None): 40}, 0, "command-r: 64 kv x 256 x 2 B"),
    ("SmolLM3-3B", {(2048, None): 36}, 0, "smollm3: 4 kv x 256 x 2 B"),
    ("granite-3.3-8b-instruct", {(4096, None): 40}, 0, "granite: 8 kv x 256 x 2 B"),
    ("GLM-4-9B-0414", {(1024, None): 40}, 0, "glm4: 2 kv x 256 x 2 B"),
    ("MiniMax-M2", {(4096, None): 62}, 0, "minimax-m2: 8 kv x 256 x 2 B"),
    ("MiMo-7B-Base", {(4096, None): 36}, 0, "qwen2 (MiMoForCausalLM): 8 kv x 256 x 2 B"),
    (
        "MiMo-V2-Flash",
        {(2560, None): 9, (5120, 128): 39},
        0,
        "mimo2: n_embd_head_k 192, n_embd_head_v 128, per-layer n_head_kv: full 4 x 320 x 2 B, SWA (128, "
        "the pattern array) 8 x 320 x 2 B (src/llama-model.cpp:2452-2460)",
    ),
    (
        "Falcon-H1-0.5B-Base",
        {(512, None): 36},
        36 * 4 * (3 * (1536 + 2 * 1 * 128) + 128 * 1536),
        "falcon-h1: KV and state in every layer (src/llama-model.cpp:7562-7564): 2 kv x 128 x 2 B; d_inner "
        "1536, 1 group, d_state 128: r 5376 + s 196608 f32",
    ),
    (
        "granite-4.0-h-tiny",
        {(2048, None): 4, (0, None): 36},
        36 * 4 * (3 * (3072 + 2 * 1 * 128) + 128 * 3072),
        "granitehybrid: 4 attention layers 4 kv x 256 x 2 B; 36 Mamba-2 layers d_inner 48 x 64, 1 group, "
        "d_state 128: r 9984 + s 393216 f32",
    ),
    # The families llama.cpp added after a5bb8ba4, read at 0c1e57098.
    (
        "Qwen3.5-27B",
        {(4096, None): 16, (0, None): 48},
        48 * 4 * (3 * (6144 + 2 * 16 * 128) + 128 * 6144),
        "qwen35: llama_memory_hybrid (src/llama-model.cpp:2756); attention 4 kv x (256 + 256) x 2 B; 48 "
        "gated delta-net layers (conversion/qwen.py:377-381: d_inner 48 x 128, 16 groups, d_state 128, "
        "d_conv 4): r 30720 + s 786432 f32",
    ),
    (
        "Qwen3.5-35B-A3B",
        {(2048, None): 10, (0, None): 30},
        30 * 4 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096),
        "qwen35moe: llama_memory_hybrid; 2 kv x 512 x 2 B; 30 delta-net layers d_inner 32 x 128",
    ),
    (
        "DeepSeek-V3.2",
        {((576 + 128) * F16, None): 61},
        0,
        "deepseek32: llama_kv_cache_dsa (src/llama-model.cpp:2430): MLA K 512 + 64 and the indexer K "
        "of index_head_dim 128 (conversion/deepseek.py:520-522) on every trunk layer",
    ),
    (
        "GLM-5",
        {((576 + 128) * F16, None): 78},
        0,
        "glm-dsa: llama_kv_cache_dsa; GLM-5 (n_ctx_train < 1M) has an indexer on every layer "
        "(src/models/glm-dsa.cpp:60-63)",
    ),
    (
        "GLM-5.2",
        {((576 + 128) * F16, None): 21, (576 * F16, None): 57},
        0,
        "glm-dsa: indexer K only on the 21 layers indexer_types marks full (conversion/glm.py:380-382, "
        "filter_lid is_indexer_full, src/llama-model.cpp:2428)",
    ),
    (
        "MiniMax-M3",
        {((4 * 256 + 2 * 128) * F16, None): 57, (4 * 256 * F16, None): 3},
        0,
        "minimax-m3: llama_kv_cache_msa (src/llama-model.cpp:2381): 4 kv x (128 + 128), plus past the 3 "
        "leading dense layers an indexer cache of one K and one V head of 128 (the indexer hparams are "
        "not MLA, so has_v holds)",
    ),
    (
        "Step-3.7-Flash",
        {(4096, 512): 33, (4096, None): 12},
        0,
        "step35: llama_kv_cache_iswa (src/llama-model.cpp:2839); 8 kv x (128 + 128) x 2 B both kinds "
        "(conversion/step3.py:148-179: no attention_other_setting in this config); SWA 512",
    ),
    (
        "Kimi-K3",
        {(1152, None): 24, (0, None): 69},
        69 * 4 * (3 * 3 * 96 * 128 + 128 * 128 * 96),
        "kimi-k3: llama_memory_hybrid; 24 MLA layers (512 + 64) x 2 B; 69 KDA layers (n_head_kv 0, "
        "src/models/kimi-k3.cpp:29-32): n_head 96, head_dim 128, d_conv 4: r 110592 + s 1572864 f32",
    ),
    (
        "Kimi-Linear-48B-A3B-Instruct",
        {(1152, None): 7, (0, None): 20},
        20 * 4 * (3 * 3 * 32 * 128 + 128 * 128 * 32),
        "kimi-linear: llama_memory_hybrid; 7 MLA layers (512 + 64) x 2 B; 20 KDA layers: r 36864 + s 524288",
    ),
    (
        "gemma-4-26B-A4B-it",
        {(8 * 512 * F16, 1024): 25, (2 * 1024 * F16, None): 5},
        0,
        "gemma4: llama_kv_cache_iswa; K and V both allocated though attention_k_eq_v (has_v = !is_mla): "
        "SWA 8 kv x (256 + 256), full 2 kv x (512 + 512) (conversion/gemma.py:686-726)",
    ),
    (
        "gemma-4-31B-it",
        {(16 * 512 * F16, 1024): 50, (4 * 1024 * F16, None): 10},
        0,
        "gemma4: SWA 16 kv x (256 + 256), full 4 kv x (512 + 512)",
    ),
    (
        "Mistral-Small-4-119B-2603",
        {(640, None): 36},
        0,
        "mistral4 (a deepseek2 model, src/models/models.h:1399; conversion/mistral3.py:32): MLA "
        "(256 + 64) x 2 B",
    ),
]


def _kinds(name: str) -> tuple[Counter[tuple[int, int | None]], int]:
    spec = catalog_spec(name)
    kinds = Counter(((c.kv_elements + c.index_elements) * F16, c.window) for c in layer_caches(spec))
    return kinds, llamacpp.llamacpp_state_bytes(spec, 1)


def _pad(n: int) -> int:
    return -(-n // 256) * 256


@pytest.mark.parametrize(("name", "kinds", "state", "why"), ROWS, ids=[r[0] for r in ROWS])
def test_kv_and_state_per_layer_as_llamacpp_allocates(
    name: str, kinds: dict[tuple[int, int | None], int], state: int, why: str
) -> None:
    """The worked example of the row (its `why`), then the cache at -np 1 and -np 4 (-c 8192 in all),
    one stream per slot: n_ctx_seq = pad(8192 / np) cells in each of np streams, an SWA layer
    pad(min(n_ctx_seq, window + 512)) per stream, state x np."""
    got, got_state = _kinds(name)
    assert dict(got) == kinds, why
    assert got_state == state, why
    spec = catalog_spec(name)
    for n_seq in (1, 4):
        seq = _pad(N_CTX // n_seq)
        full = sum(b * n * seq * n_seq for (b, w), n in kinds.items() if w is None)
        swa = sum(b * n * _pad(min(seq, w + UBATCH)) * n_seq for (b, w), n in kinds.items() if w is not None)
        assert llamacpp.llamacpp_kv_bytes(spec, N_CTX, "f16", n_seq) == (full, swa), (name, n_seq)
        assert llamacpp.llamacpp_state_bytes(spec, n_seq) == state * n_seq


def test_one_stream_per_slot_is_what_llama_server_runs_with_np() -> None:
    """gemma-3-1b-it, -c 8192 -np 4 as gpusize's launch line gives it (no --kv-unified): 4 streams of
    2048 cells, an SWA layer pad(min(2048, 512 + 512)) = 1024 cells per stream, 4096 in all, where
    one unified stream would hold pad(min(8192, 512 x 4 + 512)) = 2560 (src/llama-kv-cache-iswa.cpp:73;
    common/common.h:575 kv_unified false; tools/server/server.cpp:156-160 unified only for -np auto)."""
    spec = catalog_spec("gemma-3-1b-it")
    per_layer = 1 * (256 + 256) * F16  # 1 kv x (256 + 256) elements x 2 B
    assert llamacpp.llamacpp_kv_bytes(spec, N_CTX, "f16", 4)[1] == 22 * per_layer * 4 * 1024
    assert llamacpp.llamacpp_kv_bytes(spec, N_CTX, "f16", 4, unified=True)[1] == 22 * per_layer * 2560


def test_slots_split_a_context_that_does_not_divide() -> None:
    """Llama-3.1-8B, -c 1000 -np 3: n_ctx padded to 1024, 1024 / 3 = 341 padded to 512 cells per slot,
    3 x 512 = 1536 cells (src/llama-context.cpp:290-306), each 8 kv x 256 x 2 B = 4 KiB x 32 layers."""
    spec = catalog_spec("Llama-3.1-8B")
    assert llamacpp.llamacpp_kv_bytes(spec, 1000, "f16", 3) == (1536 * 4096 * 32, 0)


def test_deepseek_v4_cache_as_llama_kv_cache_dsv4_allocates() -> None:
    """DeepSeek-V4-Flash (compress_ratios 0, 0, then 4 / 128 alternating, 0 last: 21 CSA, 20 HCA, 2
    window only; head_dim 512, index_head_dim 128, sliding_window 128), -c 8192, f16, read in
    src/llama-kv-cache-dsv4.cpp:1210-1335:
    - raw K-only window cache in every layer, one stream per sequence (unified_raw = false, :1244):
      pad(min(n_ctx_seq, 128 + 512)) = 768 cells x 512 x 2 B;
    - CSA: compressed K 512 and indexer K 128 in pad(max(1, ceil(n_ctx_seq / 4))) cells per sequence
      (:1292, :1308), f32 states kv + score of 2 x 512 x 8 and 2 x 128 x 8 elements (:1315, :1327, :964);
    - HCA: compressed K 512 in pad(ceil(n_ctx_seq / 128)) cells per sequence (:1300), f32 states
      2 x 512 x 128 (:1321)."""
    spec = catalog_spec("DeepSeek-V4-Flash")
    ratios = Counter(layer.compress_ratio for layer in spec.layers)
    assert ratios == {4: 21, 128: 20, 0: 2}
    for n_seq, unified, seq in ((1, False, 8192), (4, False, 2048), (4, True, 8192)):
        raw = 768 * n_seq * 512 * F16
        csa = _pad(-(-seq // 4)) * n_seq * (512 + 128) * F16
        hca = _pad(-(-seq // 128)) * n_seq * 512 * F16
        kv = 43 * raw + 21 * csa + 20 * hca
        state = (21 * (2 * 1024 * 8 + 2 * 256 * 8) + 20 * 2 * 512 * 128) * 4 * n_seq
        per_layer = llamacpp.layer_cache_bytes(spec, N_CTX, "f16", n_seq, unified=unified)
        assert sum(k for k, _ in per_layer) == kv, (n_seq, unified)
        assert sum(st for _, st in per_layer) == state == llamacpp.llamacpp_state_bytes(spec, n_seq)
    # -np 1: 43 x 768 KiB + 21 x 2.5 MiB + 20 x 256 KiB of KV, 21 x 80 KiB + 20 x 512 KiB of state
    one = llamacpp.layer_cache_bytes(spec, N_CTX, "f16", 1)
    assert sum(k for k, _ in one) == 43 * 786432 + 21 * 2621440 + 20 * 262144
    assert sum(st for _, st in one) == 21 * 81920 + 20 * 524288


def test_deepseek_v4_k_only_cache_is_not_padded_without_flash_attention() -> None:
    """The DSV4 caches are K-only (dsv4_make_k_only, src/llama-kv-cache-dsv4.cpp:883-887): no V to
    transpose or pad with -fa off."""
    spec = catalog_spec("DeepSeek-V4-Flash")
    assert layer_caches(spec, flash_attention=False) == layer_caches(spec, flash_attention=True)


def _devices(n_layer: int, ngl: int, gpus: int) -> list[int | None]:
    """llama.cpp's layer placement written as its code reads (src/llama-model.cpp:1589-1597): the
    std::upper_bound of (il - i_gpu_start) / act_gpu_layers in the split points k / gpus."""
    splits = [(k + 1) / gpus for k in range(gpus)]
    start = max(n_layer + 1 - ngl, 0)
    act = min(ngl, n_layer + 1)
    return [
        None if il < start else bisect.bisect_right(splits, (il - start) / act) for il in range(n_layer + 1)
    ]


@pytest.mark.parametrize("name", [r[0] for r in ROWS] + ["DeepSeek-V4-Flash"])
def test_each_gpu_holds_its_layers_cache(name: str) -> None:
    """-sm layer over 1, 2, 4 and 8 equal GPUs, -np 1 and 4: each GPU's KV + state is the sum over the
    layers llama.cpp places on it, and its weights those layers' plus the output head on the last."""
    spec = catalog_spec(name)
    n_layer = len(spec.layers)
    for n_seq in (1, 4):
        per_layer = llamacpp.layer_cache_bytes(spec, N_CTX, "f16", n_seq)
        for gpus in (1, 2, 4, 8):
            devices = _devices(n_layer, n_layer + 1, gpus)
            split = llamacpp.llamacpp_split(
                spec, [1] * n_layer, 0, 1000, n_layer + 1, N_CTX, "f16", True, n_seq, gpus
            )
            want_kv = [
                sum(kv + st for (kv, st), d in zip(per_layer, devices, strict=False) if d == g)
                for g in range(gpus)
            ]
            want_w = [
                sum(1 for d in devices[:n_layer] if d == g) + (1000 if devices[n_layer] == g else 0)
                for g in range(gpus)
            ]
            assert [kv for _, kv in split.per_gpu] == want_kv, (name, n_seq, gpus)
            assert [w for w, _ in split.per_gpu] == want_w, (name, n_seq, gpus)
            assert split.gpu_kv_bytes == sum(kv + st for kv, st in per_layer)


def test_the_fullest_gpu_decides_the_fit() -> None:
    """Llama-3.1-8B over 4 GPUs, -c 8192: 33 offloaded layers (32 + output) placed by (il / 33) x 4 on
    GPUs 0-8 / 9-16 / 17-24 / 25-32, so GPU 0 holds 9 layers' KV (8192 cells x 8 kv x 256 x 2 B = 32 MiB
    each) where an even split would say 8; the fit reads the fullest GPU."""
    spec = catalog_spec("Llama-3.1-8B")
    split = llamacpp.llamacpp_split(spec, [1] * 32, 0, 1, 33, 8192, "f16", True, 1, 4)
    assert [kv for _, kv in split.per_gpu] == [9 * 32 * 2**20, 8 * 32 * 2**20, 8 * 32 * 2**20, 7 * 32 * 2**20]


def test_flash_attention_off_pads_v_to_the_widest_layer() -> None:
    """MiMo-V2-Flash without flash attention: V transposed and padded to n_embd_v_gqa_max = 8 x 128
    (src/llama-kv-cache.cpp:210): a full layer holds K 4 x 192 + V 1024 = 1792 elements, not 1280."""
    spec = catalog_spec("MiMo-V2-Flash")
    kinds = Counter((c.kv_elements, c.window) for c in layer_caches(spec, flash_attention=False))
    assert kinds == {(4 * 192 + 8 * 128, None): 9, (8 * 192 + 8 * 128, 128): 39}


@pytest.mark.parametrize("name", ["MiniMax-M3", "Step-3.7-Flash", "Kimi-K3", "DeepSeek-V4-Flash"])
def test_a_family_llamacpp_added_is_sized(name: str) -> None:
    """MiniMax-M3 (minimax-m3), Step-3.7 (step35) and Kimi-K3 (kimi-k3) run on llama.cpp 0c1e57098
    (src/llama-arch.cpp LLM_ARCH_MINIMAX_M3, LLM_ARCH_STEP35, LLM_ARCH_KIMI_K3): sized, not refused,
    and no family carries the old "not checked against llama.cpp's code" note."""
    result = cli("fit", name, "--engine", "llamacpp", "--gpu", "H200", "--gpus", "8", "--ctx", "8k")
    words = " ".join(result.stdout.split() + result.stderr.split())
    assert result.code in (0, 1) and result.stdout, (name, result.stderr)
    assert "does not run" not in words and "not checked" not in words, name


def test_every_catalog_family_is_placed() -> None:
    """Each family of the catalog has its llama.cpp architecture."""
    for model in load_models():
        spec = parse_config(model.config)
        assert spec.family in LLAMACPP_ARCH, (model.name, spec.family)


def test_every_gguf_architecture_read_is_placed() -> None:
    """A GGUF file's family (sources/gguf.py ARCH_TO_MODEL_TYPE) is one llama.cpp runs, by that name."""
    for arch, family in ARCH_TO_MODEL_TYPE.items():
        assert family in LLAMACPP_ARCH, (arch, family)
        assert LLAMACPP_ARCH[family].name in (arch, "llama"), (arch, family)


def test_a_deepseek_v4_ratio_without_a_llamacpp_cache_is_refused() -> None:
    """llama_kv_cache_dsv4 builds caches for ratios 4 and 128 only (src/llama-kv-cache-dsv4.cpp:18-19,
    filter_csa / filter_hca): a layer of ratio 16 would keep its window alone there, so such a model is
    refused with one line rather than sized without its compressed cache."""
    spec = catalog_spec("DeepSeek-V4-Flash")
    assert family_refusal(spec) is None
    odd = replace(
        spec,
        layers=tuple(
            replace(la, compress_ratio=16) if la.compress_ratio == 128 else la for la in spec.layers
        ),
    )
    line = family_refusal(odd)
    assert line is not None and "\n" not in line and "16" in line and "--engine vllm" in line
