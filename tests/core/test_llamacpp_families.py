"""llama.cpp's KV per token per layer and recurrent state per sequence, family by family, each against
a worked example from llama.cpp's own code.

The code is ggml-org/llama.cpp a5bb8ba4 as ollama/ollama ef00199fb vendors it (llama/llama.cpp/src),
the newest llama.cpp tree readable here (core/engines/llamacpp_families.py says why). f16 cache (2 B
an element), flash attention on, -c 8192, -ub 512, unified KV:
- K + V per cell = n_head_kv(il) x (n_embd_head_k + n_embd_head_v) (src/llama-hparams.cpp:79-89);
- MLA: K = kv_lora_rank + qk_rope_head_dim with one KV head, no V tensor (src/llama-kv-cache.cpp:136-139);
- SWA cells = GGML_PAD(min(n_ctx, n_swa x n_seq + n_ubatch), 256) (src/llama-kv-cache-iswa.cpp:50);
- state = (n_embd_r + n_embd_s) x 4 B per sequence, n_embd_r = (d_conv - 1) x (d_inner + 2 x n_group x
  d_state), n_embd_s = d_state x d_inner (src/llama-hparams.cpp:131-156).
"""

from __future__ import annotations

import bisect
from collections import Counter

import pytest

from gpusize.core.engines import llamacpp
from gpusize.core.engines.llamacpp_families import (
    AFTER_READ,
    LLAMACPP_ARCH,
    NOT_RUN,
    layer_caches,
)
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
    # Architectures after a5bb8ba4 (AFTER_READ): the general rules, stated, not llama.cpp's own code.
    (
        "Qwen3.5-27B",
        {(4096, None): 16, (0, None): 48},
        48 * 4 * (3 * (6144 + 2 * 16 * 128) + 128 * 6144),
        "qwen35 (after a5bb8ba4): 4 kv x 512 x 2 B; 48 delta-net layers d_inner 48 x 128",
    ),
    (
        "Qwen3.5-35B-A3B",
        {(2048, None): 10, (0, None): 30},
        30 * 4 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096),
        "qwen35moe (after a5bb8ba4): 2 kv x 512 x 2 B; 30 delta-net layers d_inner 32 x 128",
    ),
    (
        "DeepSeek-V3.2",
        {(1152, None): 61},
        0,
        "deepseek32 (after a5bb8ba4): the MLA latent, indexer not added",
    ),
    ("GLM-5", {(1152, None): 78}, 0, "glm-dsa (after a5bb8ba4): the MLA latent, indexer not added"),
    ("Mistral-Small-4-119B-2603", {(640, None): 36}, 0, "mistral4 (after a5bb8ba4): MLA (256 + 64) x 2 B"),
]


def _kinds(name: str) -> tuple[Counter[tuple[int, int | None]], int]:
    spec = catalog_spec(name)
    kinds = Counter((c.kv_elements * F16, c.window) for c in layer_caches(spec))
    return kinds, llamacpp.llamacpp_state_bytes(spec, 1)


def _pad(n: int) -> int:
    return -(-n // 256) * 256


@pytest.mark.parametrize(("name", "kinds", "state", "why"), ROWS, ids=[r[0] for r in ROWS])
def test_kv_and_state_per_layer_as_llamacpp_allocates(
    name: str, kinds: dict[tuple[int, int | None], int], state: int, why: str
) -> None:
    """The worked example of the row (its `why`), then the cache at -np 1 and -np 4 (-c 8192 in all):
    full layers N_CTX cells, SWA layers pad(min(8192, window x np + 512)), state x np."""
    got, got_state = _kinds(name)
    assert dict(got) == kinds, why
    assert got_state == state, why
    spec = catalog_spec(name)
    for n_seq in (1, 4):
        full = sum(b * n * N_CTX for (b, w), n in kinds.items() if w is None)
        swa = sum(
            b * n * _pad(min(N_CTX, w * n_seq + UBATCH)) for (b, w), n in kinds.items() if w is not None
        )
        assert llamacpp.llamacpp_kv_bytes(spec, N_CTX, "f16", n_seq) == (full, swa), (name, n_seq)
        assert llamacpp.llamacpp_state_bytes(spec, n_seq) == state * n_seq


def _devices(n_layer: int, ngl: int, gpus: int) -> list[int | None]:
    """llama.cpp's layer placement written as its code reads (src/llama-model.cpp:2548-2556): the
    std::upper_bound of (il - i_gpu_start) / act_gpu_layers in the split points k / gpus."""
    splits = [(k + 1) / gpus for k in range(gpus)]
    start = max(n_layer + 1 - ngl, 0)
    act = min(ngl, n_layer + 1)
    return [
        None if il < start else bisect.bisect_right(splits, (il - start) / act) for il in range(n_layer + 1)
    ]


@pytest.mark.parametrize("name", [r[0] for r in ROWS])
def test_each_gpu_holds_its_layers_cache(name: str) -> None:
    """-sm layer over 1, 2, 4 and 8 equal GPUs, -np 4: each GPU's KV + state is the sum over the
    layers llama.cpp places on it, and its weights those layers' plus the output head on the last."""
    spec = catalog_spec(name)
    n_layer = len(spec.layers)
    per_layer = llamacpp.layer_cache_bytes(spec, N_CTX, "f16", 4)
    for gpus in (1, 2, 4, 8):
        devices = _devices(n_layer, n_layer + 1, gpus)
        split = llamacpp.llamacpp_split(
            spec, [1] * n_layer, 0, 1000, n_layer + 1, N_CTX, "f16", True, 4, gpus
        )
        want_kv = [
            sum(kv + st for (kv, st), d in zip(per_layer, devices, strict=False) if d == g)
            for g in range(gpus)
        ]
        want_w = [
            sum(1 for d in devices[:n_layer] if d == g) + (1000 if devices[n_layer] == g else 0)
            for g in range(gpus)
        ]
        assert [kv for _, kv in split.per_gpu] == want_kv, (name, gpus)
        assert [w for w, _ in split.per_gpu] == want_w, (name, gpus)
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
    (src/llama-kv-cache.cpp:115): a full layer holds K 4 x 192 + V 1024 = 1792 elements, not 1280."""
    spec = catalog_spec("MiMo-V2-Flash")
    kinds = Counter((c.kv_elements, c.window) for c in layer_caches(spec, flash_attention=False))
    assert kinds == {(4 * 192 + 8 * 128, None): 9, (8 * 192 + 8 * 128, 128): 39}


@pytest.mark.parametrize("name", ["MiniMax-M3", "Step-3.7-Flash", "Kimi-K3"])
def test_a_family_llamacpp_never_ran_is_refused(name: str) -> None:
    """No llama.cpp architecture for it: exit 2, one line naming that and the engines that run it."""
    result = cli("fit", name, "--engine", "llamacpp", "--gpu", "H200", "--gpus", "8", "--ctx", "8k")
    assert result.code == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert "\n" not in line and "llama.cpp does not run" in line and "--engine vllm" in line


def test_a_family_after_the_read_code_says_so() -> None:
    """DeepSeek-V4-Flash runs (exit 0) with a note that its cache is not checked against llama.cpp."""
    result = cli(
        "fit", "DeepSeek-V4-Flash", "--engine", "llamacpp", "--gpu", "H200", "--gpus", "8", "--ctx", "8k"
    )
    assert result.code == 0
    assert "'deepseek4', added after the llama.cpp code" in " ".join(
        result.stdout.split() + result.stderr.split()
    )


def test_every_catalog_family_is_placed() -> None:
    """Each family of the catalog is run at the read code, run by a later architecture, or refused."""
    for model in load_models():
        spec = parse_config(model.config)
        known = spec.family in LLAMACPP_ARCH or spec.family in AFTER_READ
        assert known or spec.family in NOT_RUN or spec.architecture in NOT_RUN, (model.name, spec.family)


def test_every_gguf_architecture_read_is_placed() -> None:
    """A GGUF file's family (sources/gguf.py ARCH_TO_MODEL_TYPE) is one llama.cpp runs, by that name."""
    for arch, family in ARCH_TO_MODEL_TYPE.items():
        assert family in LLAMACPP_ARCH, (arch, family)
        assert LLAMACPP_ARCH[family].name in (arch, "llama"), (arch, family)
