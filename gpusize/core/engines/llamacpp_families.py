"""Which of gpusize's model families llama.cpp runs, and what it caches for each layer, in bytes
(pure; llamacpp.py places the layers and adds the weights and compute buffer).

Read in the build gpusize models, llama.cpp 0c1e57098 as vendored in llama-cpp-python 0.3.36 (PyPI
sdist llama_cpp_python-0.3.36.tar.gz, 2026-10-01; its CHANGELOG: "update llama.cpp to
ggml-org/llama.cpp@0c1e57098"), at these lines:
- cells: n_ctx padded to 256, then per stream n_ctx_seq = n_ctx (unified) or pad(n_ctx / np, 256)
  (src/llama-context.cpp:290-306); llama-server is not unified when -np is given
  (`LLAMACPP_KV_UNIFIED`); caches are built with n_pad 1 (src/llama-model.cpp create_memory);
- K holds n_embd_k_gqa(il) = n_embd_head_k(il) x n_head_kv(il) and V n_embd_v_gqa(il) elements per
  cell (src/llama-hparams.cpp:156-166, head widths per SWA/full layer :140-154); a layer with
  n_head_kv 0 (DeciLM's no-op attention, Kimi's KDA layers) or past n_layer_kv_from_start holds
  none (src/llama-hparams.cpp:321, src/llama-kv-cache.cpp:102-240); hybrid models keep KV in the
  attention layers only, MTP blocks out of the main context (src/llama-model.cpp:2679-2770, :2796-2803);
- MLA (deepseek2, mistral4, kimi-linear, kimi-k3): one KV head of kv_lora_rank + qk_rope_head_dim
  for K, and no V tensor: V is a view of K (src/llama-kv-cache.cpp:231 `has_v = !is_mla`);
- a sliding window only where the architecture sets `swa_type` (gemma2/3/4, llama4 chunked, gpt-oss,
  mimo2, step35: `Arch.keeps_window`); llama (Mistral, Mixtral), phi3 and starcoder2 ignore the
  config's sliding_window and cache the whole context; SWA cells pad(min(n_ctx_seq, n_swa x (np if
  unified else 1) + n_ubatch), 256) (src/llama-kv-cache-iswa.cpp:73);
- without flash attention V is transposed and every layer's V is padded to the widest
  (src/llama-kv-cache.cpp:210, n_embd_v_gqa_max src/llama-hparams.cpp:199);
- recurrent layers: n_embd_r = (d_conv - 1) x (d_inner + 2 x n_group x d_state) and n_embd_s =
  d_state x d_inner (Mamba-2, gated DeltaNet: qwen3next/qwen35/qwen35moe), for KDA n_embd_r = 3 x
  (d_conv - 1) x n_head x head_dim and n_embd_s = head_dim^2 x n_head (src/llama-hparams.cpp:208-260),
  f32, max(1, np) x (1 + n_rs_seq) rows, n_rs_seq 0 without a draft model
  (src/llama-memory-recurrent.cpp:101, src/llama-model.cpp:2670-2770, common/common.h:396-402);
- DSA (deepseek32, glm-dsa): llama_kv_cache_dsa, the MLA cache plus an indexer K cache of one head
  of indexer_head_size on the trunk layers (glm-dsa: the layers indexer_types marks full)
  (src/llama-model.cpp:2397-2447, src/llama-kv-cache-dsa.cpp:33-52);
- MSA (minimax-m3): llama_kv_cache_msa, the K/V cache plus an indexer cache of one K and one V head
  of indexer_head_size on the layers past the leading dense ones (src/llama-model.cpp:2375-2395,
  src/llama-kv-cache-msa.cpp:13-48);
- DeepSeek-V4 (deepseek4): llama_kv_cache_dsv4 (src/llama-model.cpp:2587-2628, `_dsv4_cache`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from gpusize.core.kinds import mixer_kind
from gpusize.core.kvcache import kv_width
from gpusize.core.spec import KV_MIXERS, LayerSpec, ModelSpec

__all__ = [
    "DSV4_RATIOS",
    "LLAMACPP_CTX_PAD",
    "LLAMACPP_KV_BYTES",
    "LLAMACPP_STATE_BYTES",
    "LLAMACPP_UBATCH",
    "LLAMACPP_ARCH",
    "LLAMACPP_KV_UNIFIED",
    "LayerCache",
    "family_refusal",
    "layer_cache_bytes",
    "layer_caches",
    "layer_devices",
    "llamacpp_kv_bytes",
    "llamacpp_state_bytes",
    "pad",
]

#: llama.cpp pads the context (KV cells) to a multiple of 256 (src/llama-context.cpp:290 GGML_PAD).
LLAMACPP_CTX_PAD = 256
#: Defaults of llama-server: n_ubatch 512 tokens per micro-batch (common/common.h:454).
LLAMACPP_UBATCH = 512
#: Bytes per element of llama.cpp KV cache types (`-ctk/-ctv`, common/arg.cpp:304-314), from
#: ggml-common.h block sizes: q8_0 = fp16 scale + 32 int8 per 32; q4_0 = scale + 16 B; q4_1 = scale,
#: min + 16 B; q5_0 = scale + 4 B high bits + 16 B; q5_1 = scale, min + 4 + 16 B; iq4_nl = scale + 16 B.
LLAMACPP_KV_BYTES = {
    "f32": 4.0,
    "f16": 2.0,
    "bf16": 2.0,
    "q8_0": 34 / 32,
    "q4_0": 18 / 32,
    "q4_1": 20 / 32,
    "iq4_nl": 18 / 32,
    "q5_0": 22 / 32,
    "q5_1": 24 / 32,
}

#: Where the rules of this module were read: the exact build gpusize models (llamacpp.py VERSION).
READ_AT = "0c1e57098 as vendored in llama-cpp-python 0.3.36 (PyPI sdist)"
#: llama-server keeps one KV stream per slot unless --kv-unified is given or -np is left on auto
#: (common/common.h:575 `kv_unified = false`; tools/server/server.cpp:156-160 sets it only for
#: -np auto, and gpusize's launch line passes -np): each sequence has n_ctx_seq = pad(n_ctx / np)
#: cells of its own (src/llama-context.cpp:290-306).
LLAMACPP_KV_UNIFIED = False
#: DeepSeek-V4's compress ratios llama.cpp has a cache for (src/llama-kv-cache-dsv4.cpp:18-19
#: DSV4_CSA_RATIO, DSV4_HCA_RATIO); 0 is a layer with its window only.
DSV4_RATIOS = (0, 4, 128)


class Arch(NamedTuple):
    """The llama.cpp architecture (LLM_ARCH_NAMES) a family converts to, whether its hparams keep
    the config's sliding window, and the memory class create_memory builds for it when that is not
    the general one (src/llama-model.cpp:2352-2880): "dsa" llama_kv_cache_dsa (MLA + indexer keys),
    "msa" llama_kv_cache_msa (K/V + block-sparse indexer keys), "dsv4" llama_kv_cache_dsv4
    (a NamedTuple: built at start-up)."""

    name: str
    keeps_window: bool = False
    memory: str = ""


#: model family (config model_type) -> llama.cpp architecture (src/llama-arch.cpp LLM_ARCH_NAMES;
#: the HF architecture registered by convert_hf_to_gguf.py and conversion/__init__.py: Mistral and
#: Mixtral as llama, MiMo-7B as qwen2, SantaCoder as starcoder, Kimi-K2/Kimi-VL as deepseek2,
#: Mistral Small 4 (Mistral3ForConditionalGeneration, model_type mistral4) as mistral4, Step-3.7
#: (Step3p7ForConditionalGeneration, conversion/step3.py) as step35; Kimi-K3, whose config says
#: kimi_linear, converts to kimi-k3 (conversion/kimi_k3.py) with Kimi-Linear's hybrid cache).
LLAMACPP_ARCH: dict[str, Arch] = {
    "cohere": Arch("command-r"),
    "deepseek_v2": Arch("deepseek2"),
    "deepseek_v3": Arch("deepseek2"),
    "deepseek_v32": Arch("deepseek32", memory="dsa"),
    "deepseek_v4": Arch("deepseek4", memory="dsv4"),
    "falcon": Arch("falcon"),
    "falcon_h1": Arch("falcon-h1"),
    "gemma": Arch("gemma"),
    "gemma2": Arch("gemma2", keeps_window=True),
    "gemma3_text": Arch("gemma3", keeps_window=True),
    "gemma4_text": Arch("gemma4", keeps_window=True),
    "glm4": Arch("glm4"),
    "glm4_moe": Arch("glm4moe"),
    "glm_moe_dsa": Arch("glm-dsa", memory="dsa"),
    "gpt_bigcode": Arch("starcoder"),
    "gpt_neox": Arch("gptneox"),
    "gpt_oss": Arch("gpt-oss", keeps_window=True),
    "granite": Arch("granite"),
    "granitemoehybrid": Arch("granitehybrid"),
    "kimi_k2": Arch("deepseek2"),
    "kimi_linear": Arch("kimi-linear"),
    "llama": Arch("llama"),
    "llama4_text": Arch("llama4", keeps_window=True),
    "mimo": Arch("qwen2"),
    "mimo_v2_flash": Arch("mimo2", keeps_window=True),
    "minimax_m2": Arch("minimax-m2"),
    "minimax_m3": Arch("minimax-m3", memory="msa"),
    "mistral": Arch("llama"),
    "mistral4": Arch("mistral4"),
    "mixtral": Arch("llama"),
    "nemotron-nas": Arch("deci"),
    "nemotron_h": Arch("nemotron_h"),
    "olmo2": Arch("olmo2"),
    "phi3": Arch("phi3"),
    "qwen2": Arch("qwen2"),
    "qwen2_moe": Arch("qwen2moe"),
    # Qwen2-VL and Qwen2.5-VL both convert to qwen2vl (LLM_ARCH_QWEN2VL; M-RoPE, plain attention cache)
    "qwen2_vl": Arch("qwen2vl"),
    "qwen2_5_vl": Arch("qwen2vl"),
    "qwen3": Arch("qwen3"),
    "qwen3_5_moe_text": Arch("qwen35moe"),
    "qwen3_5_text": Arch("qwen35"),
    "qwen3_moe": Arch("qwen3moe"),
    "qwen3_next": Arch("qwen3next"),
    "qwen3_vl_moe_text": Arch("qwen3vlmoe"),
    "qwen3_vl_text": Arch("qwen3vl"),
    "smollm3": Arch("smollm3"),
    "starcoder2": Arch("starcoder2"),
    "step3p7": Arch("step35", keeps_window=True),
}


class LayerCache(NamedTuple):
    """What llama.cpp keeps for one layer: K + V elements per cell of its main cache (0: no KV), the
    window capping those cells (None: the whole context), recurrent or compressor state elements
    per sequence (f32), an indexer cache's elements per cell beside the main one (DSA: one K head of
    indexer_head_size; MSA: one K and one V head), whether the window cache keeps a stream per
    sequence even when the KV is unified (DeepSeek-V4's raw cache), and DeepSeek-V4's compressed
    caches as (elements per entry, tokens per entry)."""

    kv_elements: int
    window: int | None
    state_elements: int
    index_elements: int = 0
    per_sequence: bool = False
    compressed: tuple[tuple[int, int], ...] = ()


def family_refusal(spec: ModelSpec) -> str | None:
    """Why llama.cpp cannot run this model, or None: a DeepSeek-V4 compress ratio its cache has no
    place for."""
    if spec.compressed is None:
        return None
    odd = sorted({layer.compress_ratio for layer in spec.layers} - set(DSV4_RATIOS))
    if not odd:
        return None
    return (
        f"llama.cpp's DeepSeek-V4 cache holds compress ratios 4 and 128 only (src/llama-kv-cache-dsv4.cpp "
        f"DSV4_CSA_RATIO, DSV4_HCA_RATIO), this model has {odd[0]}; use --engine vllm or --engine sglang"
    )


@functools.lru_cache(maxsize=256)  # read for every -ngl the offload search tries
def layer_caches(spec: ModelSpec, flash_attention: bool = True) -> tuple[LayerCache, ...]:
    """Each decoder layer's cache in model order, as llama.cpp allocates it (module docstring)."""
    arch = LLAMACPP_ARCH.get(spec.family)
    keeps_window = arch.keeps_window if arch else True
    memory = arch.memory if arch else ""
    if memory == "dsv4":
        return tuple(_dsv4_cache(spec, layer) for layer in spec.layers)
    # MSA: the indexer cache covers the layers past the leading dense ones (src/llama-model.cpp:2378)
    lead = next((il for il, layer in enumerate(spec.layers) if layer.ffn != "dense"), len(spec.layers))
    index_width = max((layer.index_head_dim for layer in spec.layers), default=0)
    caches = []
    for il, layer in enumerate(spec.layers):
        kv = kv_width(spec, layer.num_key_value_heads, layer) if layer.mixer in KV_MIXERS else 0
        kv -= layer.index_head_dim if kv else 0  # gpusize's attention width counts vLLM's index key
        index = 0
        if memory == "dsa" and spec.mla and spec.mla.indexer and kv and not layer.shares_indexer:
            index = spec.mla.indexer.head_dim  # K only: the indexer hparams stay MLA (no V)
        elif memory == "msa" and kv and il >= lead:
            index = 2 * index_width  # one K and one V head: the indexer hparams are not MLA
        window = layer.window if keeps_window else None
        state = mixer_kind(spec, layer).state_elements(spec, layer)
        caches.append(LayerCache(kv, window, state, index))
    if not flash_attention and not spec.mla:
        caches = _padded_v(spec, caches)
    return tuple(caches)


def _dsv4_cache(spec: ModelSpec, layer: LayerSpec) -> LayerCache:
    """DeepSeek-V4's layer in llama_kv_cache_dsv4 (src/llama-kv-cache-dsv4.cpp:1210-1335): a K-only
    raw cache of head_dim over the sliding window, one stream per sequence (unified_raw = false);
    ratio 4 (CSA): compressed K of head_dim and lightning-indexer K of indexer_head_size, one entry
    per 4 tokens, with f32 compressor states of 2 x (2 x head_dim) x 8 and 2 x (2 x
    indexer_head_size) x 8 (kv and score tensors, state_size 2 x ratio); ratio 128 (HCA):
    compressed K of head_dim per 128 tokens and a state of 2 x head_dim x 128."""
    c = spec.compressed
    assert c is not None
    ratio = layer.compress_ratio
    compressed: tuple[tuple[int, int], ...]
    if ratio == DSV4_RATIOS[1]:
        compressed = ((c.head_dim + c.index_head_dim, ratio),)
        state = 2 * (2 * c.head_dim) * (2 * ratio) + 2 * (2 * c.index_head_dim) * (2 * ratio)
    elif ratio == DSV4_RATIOS[2]:
        compressed, state = ((c.head_dim, ratio),), 2 * c.head_dim * ratio
    else:
        compressed, state = (), 0
    return LayerCache(c.head_dim, c.window, state, 0, True, compressed)


def _padded_v(spec: ModelSpec, caches: list[LayerCache]) -> list[LayerCache]:
    """Without flash attention every layer's V takes n_embd_v_gqa_max elements (V transposed)."""
    heads = [layer.num_key_value_heads for layer in spec.layers]
    v = [_v_width(spec, layer) * h for layer, h in zip(spec.layers, heads, strict=True)]
    widest = max((w for w, c in zip(v, caches, strict=True) if c.kv_elements), default=0)
    return [
        c._replace(kv_elements=c.kv_elements - w + widest) if c.kv_elements else c
        for c, w in zip(caches, v, strict=True)
    ]


def _v_width(spec: ModelSpec, layer: LayerSpec) -> int:
    return layer.v_head_dim or layer.head_dim or spec.head_dim


#: Cached (three small integers): read for every -ngl the offload search tries, on every row of a batch.
@functools.lru_cache(maxsize=1024)
def layer_devices(n_layer: int, n_gpu_layers: int, num_gpus: int) -> tuple[int | None, ...]:
    """The GPU (0-based) of each layer il = 0..n_layer (n_layer: the output head) under -sm layer, or
    None on the CPU: llama.cpp offloads the last `n_gpu_layers` and splits them by free memory, equal
    GPUs taking equal fractions (src/llama-model.cpp:1560-1597: i_gpu_start = n_layer_all + 1 - ngl,
    device = upper_bound(splits, (il - i_gpu_start) / act_gpu_layers), splits = k / num_gpus; n_layer_all
    counts a GGUF's MTP blocks)."""
    act = max(0, min(n_gpu_layers, n_layer + 1))
    start = n_layer + 1 - act
    return tuple(
        None if il < start else min((il - start) * num_gpus // act, num_gpus - 1) for il in range(n_layer + 1)
    )


def pad(n: int, to: int) -> int:
    """n rounded up to a multiple of `to` (GGML_PAD)."""
    return -(-n // to) * to


def layer_cache_bytes(
    spec: ModelSpec,
    n_ctx: int,
    kv_type: str = "f16",
    n_seq: int = 1,
    n_ubatch: int = LLAMACPP_UBATCH,
    unified: bool = LLAMACPP_KV_UNIFIED,
    flash_attention: bool = True,
) -> tuple[tuple[int, int], ...]:
    """(KV bytes, state bytes) of each layer for -c n_ctx and n_seq sequences (-np): n_ctx padded to
    256 and, per stream (one, or one per sequence when not unified), n_ctx_seq = pad(n_ctx / np) cells
    (src/llama-context.cpp:290-306); a sliding-window layer keeps pad(min(n_ctx_seq, window x (np if
    unified else 1) + n_ubatch)) cells per stream (src/llama-kv-cache-iswa.cpp:73); an indexer cache
    the layer's cells; DeepSeek-V4's compressed caches pad(max(1, ceil(n_ctx_seq / ratio))) cells per
    sequence (src/llama-kv-cache-dsv4.cpp:28-30, :1292-1312); state in f32 per sequence."""
    size = LLAMACPP_KV_BYTES[kv_type]
    n_seq = max(1, n_seq)
    n_ctx = pad(n_ctx, LLAMACPP_CTX_PAD)
    seq_cells, streams = (n_ctx, 1) if unified else (pad(n_ctx // n_seq, LLAMACPP_CTX_PAD), n_seq)
    out = []
    for cache in layer_caches(spec, flash_attention):
        cells = seq_cells * streams
        if cache.window is not None:
            own = n_seq if cache.per_sequence else streams
            reach = cache.window * (n_seq if own == 1 else 1) + n_ubatch
            cells = pad(min(seq_cells, reach), LLAMACPP_CTX_PAD) * own
        kv = cells * (cache.kv_elements + cache.index_elements)
        for elements, ratio in cache.compressed:
            kv += pad(max(1, -(-seq_cells // ratio)), LLAMACPP_CTX_PAD) * n_seq * elements
        state = cache.state_elements * LLAMACPP_STATE_BYTES * n_seq
        out.append((int(kv * size), state))
    return tuple(out)


def llamacpp_kv_bytes(
    spec: ModelSpec,
    n_ctx: int,
    kv_type: str = "f16",
    n_seq: int = 1,
    n_ubatch: int = LLAMACPP_UBATCH,
    unified: bool = LLAMACPP_KV_UNIFIED,
    flash_attention: bool = True,
) -> tuple[int, int]:
    """(KV bytes of the layers without a window, of the layers with one) for -c n_ctx; a DeepSeek-V4
    layer's compressed caches count with its window."""
    caches = layer_caches(spec, flash_attention)
    per_layer = layer_cache_bytes(spec, n_ctx, kv_type, n_seq, n_ubatch, unified, flash_attention)
    full = sum(kv for (kv, _), c in zip(per_layer, caches, strict=True) if c.window is None)
    return full, sum(kv for kv, _ in per_layer) - full


#: llama.cpp keeps the recurrent layers' conv (r) and SSM (s) states in f32 whatever -ctk/-ctv say
#: (src/llama-model.cpp:2670-2770: llama_memory_recurrent / llama_memory_hybrid built with
#: GGML_TYPE_F32 for type_r and type_s), one row per sequence (mem_size = max(1, n_seq_max)), and
#: DeepSeek-V4's compressor states in f32 per sequence (src/llama-kv-cache-dsv4.cpp:964-966).
LLAMACPP_STATE_BYTES = 4


def llamacpp_state_bytes(spec: ModelSpec, n_seq: int = 1) -> int:
    """State of every recurrent layer (Mamba-2, DeltaNet, KDA: n_embd_r + n_embd_s) and DeepSeek-V4
    compressor for `n_seq` sequences (-np), in f32, per sequence."""
    return sum(c.state_elements for c in layer_caches(spec)) * LLAMACPP_STATE_BYTES * max(1, n_seq)
