"""Which of gpusize's model families llama.cpp runs, and what it caches for each layer, in bytes
(pure; llamacpp.py places the layers and adds the weights and compute buffer).

The allocation rules are read in ggml-org/llama.cpp at a5bb8ba4 (vendored whole by ollama/ollama
ef00199fb, 2026-02-02, llama/llama.cpp/): the newest llama.cpp whose src/ gpusize could read as one
tree. The build gpusize names (llamacpp.py VERSION, 0c1e57098 = b11312) was not readable here; the
rules below are those of a5bb8ba4, and a family whose architecture came after it is sized with them
and says so (`family_notes`).

Per layer il, with the file:line at a5bb8ba4:
- K holds n_embd_k_gqa(il) = n_embd_head_k x n_head_kv(il) and V n_embd_v_gqa(il) elements per cell
  (src/llama-hparams.cpp:79-89); a layer without KV heads (DeciLM's no-op attention, Nemotron-H's
  Mamba and MLP blocks) has none (src/llama-kv-cache.cpp:103-111, has_kv and the hybrid filters of
  src/llama-model.cpp:7562-7572);
- MLA (deepseek2: DeepSeek-V2/V3, Kimi-K2): one KV head of kv_lora_rank + qk_rope_head_dim for K, and
  no V tensor: V is a view of K (src/llama-kv-cache.cpp:136-139 `has_v = !is_mla`);
- a sliding window only where the architecture sets `swa_type` (src/llama-model.cpp: gemma2 :1316,
  gemma3 :1343, llama4 chunked :666, gpt-oss :2273, mimo2 :2452); llama (Mistral, Mixtral), phi3 and
  starcoder2 ignore the config's sliding_window and cache the whole context (:637, :1177-1198 "Phi
  SWA is currently disabled", :1420);
- without flash attention V is transposed and every layer's V is padded to the widest
  (n_embd_v_gqa_max, src/llama-kv-cache.cpp:95-115);
- recurrent layers: n_embd_r = (d_conv - 1) x (d_inner + 2 x n_group x d_state) and n_embd_s =
  d_state x d_inner f32 elements per sequence (src/llama-hparams.cpp:131-156), Falcon-H1 keeping KV
  and state in every layer (src/llama-model.cpp:7562-7564).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from gpusize.core.kinds import mixer_kind
from gpusize.core.kvcache import kv_width
from gpusize.core.spec import KV_MIXERS, LayerSpec, ModelSpec

__all__ = [
    "AFTER_READ",
    "LLAMACPP_CTX_PAD",
    "LLAMACPP_KV_BYTES",
    "LLAMACPP_STATE_BYTES",
    "LLAMACPP_UBATCH",
    "LLAMACPP_ARCH",
    "NOT_RUN",
    "LayerCache",
    "family_notes",
    "family_refusal",
    "layer_cache_bytes",
    "layer_caches",
    "layer_devices",
    "llamacpp_kv_bytes",
    "llamacpp_state_bytes",
    "pad",
]

#: llama.cpp pads the context (KV cells) to a multiple of 256 (llama-context.cpp GGML_PAD).
LLAMACPP_CTX_PAD = 256
#: Defaults of llama-server: n_ubatch 512 tokens per micro-batch.
LLAMACPP_UBATCH = 512
#: Bytes per element of llama.cpp KV cache types (`-ctk/-ctv`, common/arg.cpp kv_cache_types), from
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

#: The llama.cpp tree the rules of this module were read in.
READ_AT = "a5bb8ba4"


class Arch(NamedTuple):
    """The llama.cpp architecture (LLM_ARCH_NAMES) a family converts to, and whether its hparams
    keep the config's sliding window (a NamedTuple: built at start-up)."""

    name: str
    keeps_window: bool = False


#: model family (config model_type) -> llama.cpp architecture at a5bb8ba4 (src/llama-arch.cpp
#: LLM_ARCH_NAMES; the HF architecture registered by convert_hf_to_gguf.py: Mistral and Mixtral as
#: llama, MiMo-7B as qwen2, SantaCoder as starcoder, Kimi-K2/Kimi-VL as deepseek2).
LLAMACPP_ARCH: dict[str, Arch] = {
    "cohere": Arch("command-r"),
    "deepseek_v2": Arch("deepseek2"),
    "deepseek_v3": Arch("deepseek2"),
    "falcon": Arch("falcon"),
    "falcon_h1": Arch("falcon-h1"),
    "gemma": Arch("gemma"),
    "gemma2": Arch("gemma2", keeps_window=True),
    "gemma3_text": Arch("gemma3", keeps_window=True),
    "glm4": Arch("glm4"),
    "glm4_moe": Arch("glm4moe"),
    "gpt_bigcode": Arch("starcoder"),
    "gpt_neox": Arch("gptneox"),
    "gpt_oss": Arch("gpt-oss", keeps_window=True),
    "granite": Arch("granite"),
    "granitemoehybrid": Arch("granitehybrid"),
    "kimi_k2": Arch("deepseek2"),
    "llama": Arch("llama"),
    "llama4_text": Arch("llama4", keeps_window=True),
    "mimo": Arch("qwen2"),
    "mimo_v2_flash": Arch("mimo2", keeps_window=True),
    "minimax_m2": Arch("minimax-m2"),
    "mistral": Arch("llama"),
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
    "qwen3_moe": Arch("qwen3moe"),
    "qwen3_next": Arch("qwen3next"),
    "qwen3_vl_moe_text": Arch("qwen3vlmoe"),
    "qwen3_vl_text": Arch("qwen3vl"),
    "smollm3": Arch("smollm3"),
    "starcoder2": Arch("starcoder2"),
}

#: Families whose llama.cpp architecture is absent at a5bb8ba4 and present in a later
#: ggml-org/llama.cpp src/llama-arch.cpp (the stored copy at 00395eb28): run, sized with the rules
#: above, their own cache layout (DeepSeek-V4's compressed cache, DSA's indexer keys, Kimi-Linear's
#: KDA state) not checked against llama.cpp's code. -> (architecture, the family as people name it).
AFTER_READ: dict[str, tuple[str, str]] = {
    "deepseek_v32": ("deepseek32", "DeepSeek-V3.2"),
    "deepseek_v4": ("deepseek4", "DeepSeek-V4"),
    "gemma4_text": ("gemma4", "Gemma 4"),
    "glm_moe_dsa": ("glm-dsa", "GLM-5"),
    "kimi_linear": ("kimi-linear", "Kimi-Linear"),
    "mistral4": ("mistral4", "Mistral Small 4"),
    "qwen3_5_moe_text": ("qwen35moe", "Qwen3.5 MoE (ggml-org/llama.cpp#19468, Feb 2026)"),
    "qwen3_5_text": ("qwen35", "Qwen3.5 (ggml-org/llama.cpp#19468, Feb 2026)"),
}

#: Families (or the architecture of a composite) with no llama.cpp architecture in any llama.cpp
#: source gpusize read, the newest being src/llama-arch.cpp at 00395eb28 (no minimax-m3, no Step-3.7
#: and no Kimi-K3 entry).
NOT_RUN: dict[str, str] = {
    "KimiK3ForConditionalGeneration": "Kimi-K3",
    "minimax_m3": "MiniMax-M3",
    "step3p7": "Step-3.7-Flash",
}


class LayerCache(NamedTuple):
    """What llama.cpp keeps for one layer: K + V elements per cell (0: no KV), the window capping its
    cells (None: the whole context), and recurrent state elements per sequence (f32)."""

    kv_elements: int
    window: int | None
    state_elements: int


def family_refusal(spec: ModelSpec) -> str | None:
    """Why llama.cpp cannot run this model (no architecture for its family), or None."""
    label = NOT_RUN.get(spec.architecture) or NOT_RUN.get(spec.family)
    if label is None:
        return None
    return (
        f"llama.cpp does not run {label} ({spec.family}): no llama.cpp build gpusize read has an "
        "architecture for it (src/llama-arch.cpp at 00395eb28); use --engine vllm or --engine sglang"
    )


def family_notes(spec: ModelSpec) -> tuple[str, ...]:
    """The caveat for a family whose llama.cpp architecture came after the tree the rules were read
    in: its KV and state are sized with the general rules, not llama.cpp's own code for it."""
    later = AFTER_READ.get(spec.family)
    if later is None:
        return ()
    arch, label = later
    return (
        f"llama.cpp runs {label} as architecture '{arch}', added after the llama.cpp code gpusize "
        f"read ({READ_AT}): its KV and state are sized with the general per-layer rules, not checked "
        "against llama.cpp's own cache code for it",
    )


@functools.lru_cache(maxsize=256)  # read for every -ngl the offload search tries
def layer_caches(spec: ModelSpec, flash_attention: bool = True) -> tuple[LayerCache, ...]:
    """Each decoder layer's cache in model order, as llama.cpp allocates it (module docstring)."""
    arch = LLAMACPP_ARCH.get(spec.family)
    keeps_window = arch.keeps_window if arch else True
    caches = []
    for layer in spec.layers:
        kv = kv_width(spec, layer.num_key_value_heads, layer) if layer.mixer in KV_MIXERS else 0
        window = layer.window if keeps_window else None
        caches.append(LayerCache(kv, window, mixer_kind(spec, layer).state_elements(spec, layer)))
    if not flash_attention and not spec.mla:
        caches = _padded_v(spec, caches)
    return tuple(caches)


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


def layer_devices(n_layer: int, n_gpu_layers: int, num_gpus: int) -> tuple[int | None, ...]:
    """The GPU (0-based) of each layer il = 0..n_layer (n_layer: the output head) under -sm layer, or
    None on the CPU: llama.cpp offloads the last `n_gpu_layers` and splits them by free memory, equal
    GPUs taking equal fractions (src/llama-model.cpp:2548-2556: i_gpu_start = n_layer + 1 - ngl, device
    = upper_bound(splits, (il - i_gpu_start) / act_gpu_layers), splits = k / num_gpus)."""
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
    unified: bool = True,
    flash_attention: bool = True,
) -> tuple[tuple[int, int], ...]:
    """(KV bytes, recurrent state bytes) of each layer for a context of n_ctx cells in total and
    n_seq sequences (-np): cells x the layer's K + V elements x type size, a sliding-window layer
    keeping min(n_ctx per sequence, window x streams + n_ubatch) cells padded to 256; state in f32
    per sequence (`llamacpp_families.layer_caches`)."""
    size = LLAMACPP_KV_BYTES[kv_type]
    n_ctx = pad(n_ctx, LLAMACPP_CTX_PAD)
    per_seq = n_ctx if unified else n_ctx // n_seq
    streams = 1 if unified else n_seq
    out = []
    for cache in layer_caches(spec, flash_attention):
        cells = n_ctx
        if cache.window is not None:
            swa = min(per_seq, cache.window * (n_seq if unified else 1) + n_ubatch)
            cells = pad(swa, LLAMACPP_CTX_PAD) * streams
        state = cache.state_elements * LLAMACPP_STATE_BYTES * max(1, n_seq)
        out.append((int(cells * cache.kv_elements * size), state))
    return tuple(out)


def llamacpp_kv_bytes(
    spec: ModelSpec,
    n_ctx: int,
    kv_type: str = "f16",
    n_seq: int = 1,
    n_ubatch: int = LLAMACPP_UBATCH,
    unified: bool = True,
    flash_attention: bool = True,
) -> tuple[int, int]:
    """(full-attention KV bytes, sliding-window KV bytes) for a context of n_ctx cells in total."""
    caches = layer_caches(spec, flash_attention)
    per_layer = layer_cache_bytes(spec, n_ctx, kv_type, n_seq, n_ubatch, unified, flash_attention)
    full = sum(kv for (kv, _), c in zip(per_layer, caches, strict=True) if c.window is None)
    return full, sum(kv for kv, _ in per_layer) - full


#: llama.cpp keeps the recurrent layers' conv (r) and SSM (s) states in f32 whatever -ctk/-ctv say
#: (llama-model.cpp create_memory: llama_memory_recurrent / llama_memory_hybrid built with
#: GGML_TYPE_F32 for type_r and type_s), one cell per sequence (mem_size = max(1, n_seq_max)).
LLAMACPP_STATE_BYTES = 4


def llamacpp_state_bytes(spec: ModelSpec, n_seq: int = 1) -> int:
    """Recurrent state of every Mamba-2 / DeltaNet layer for `n_seq` sequences (-np): each layer's
    n_embd_r (conv window) + n_embd_s (SSM state) elements in f32, per sequence cell."""
    return sum(c.state_elements for c in layer_caches(spec)) * LLAMACPP_STATE_BYTES * max(1, n_seq)
