"""Weight formats and weight bytes per GPU, in integer bytes (pure).

A WeightFormat says how an engine stores the weights (the checkpoint's own quantization, or the
`--dtype` the user asked for); `weights_bytes` applies it to the parameter counts by role, with the
tensor-parallel sharding and replication rules of vLLM's linear layers. Exact, from the config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusize.core.gguf_quant import FTYPES, GGML_TYPES, SMALL_TYPE, bits_of, ftype_name
from gpusize.core.gguf_tensors import gguf_layer_bytes
from gpusize.core.kinds.attention import head_width, value_width
from gpusize.core.modelopt import algo_bytes, modelopt_roles
from gpusize.core.params import layer_params
from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.units import DTYPE_BYTES, GIB

__all__ = [
    "BPW_RANGE",
    "CHECKPOINT_TOLERANCE",
    "FP4_EXPERT_BYTES",
    "FP8_CHANNEL_SCALE_BYTES",
    "INT4_GROUP_SIZE",
    "MXFP4_EXPERT_PAD",
    "NVFP4_GROUP",
    "StoredLayers",
    "WeightFormat",
    "activation_dtype",
    "bits_per_weight",
    "checkpoint_agreement",
    "estimated_layers",
    "gguf_weight_format",
    "linear_bytes_per_gpu",
    "rope_cache_bytes",
    "weight_format",
    "weights_bytes",
]


@dataclass(frozen=True)
class WeightFormat:
    """How the engine stores weights: linear layers in `linear_bytes` per element (scales
    included), everything else (embeddings, lm_head, norms, routers, vision) in `other_bytes`."""

    name: str
    linear_bytes: float
    other_bytes: float
    #: Roles left in `other_bytes` by the checkpoint (modules_to_not_convert).
    unquantized: tuple[str, ...] = ()
    #: vLLM's MXFP4 MoE kernels pad expert matrices: (hidden multiple, per-rank intermediate multiple).
    expert_pad: tuple[int, int] = (1, 1)
    note: str = ""
    #: Stored bytes / config-arithmetic bytes, when a checkpoint's own tensors disagree with its
    #: config by more than CHECKPOINT_TOLERANCE (e.g. FP8 tensors under a bf16 torch_dtype).
    checkpoint_scale: float = 1.0
    #: Bytes per routed-expert weight where the checkpoint stores experts in another format than
    #: its other linear layers (DeepSeek-V4: FP4 experts under an FP8 quantization_config).
    expert_bytes: float | None = None

    def role_bytes(self, role: str) -> float:
        """Bytes per weight of one linear role (attention, mlp, experts, shared_experts)."""
        for name, per in self.overrides:
            if name == role:
                return per
        if role in self.unquantized:
            return self.other_bytes
        if role == "experts" and self.expert_bytes is not None:
            return self.expert_bytes
        return self.linear_bytes

    #: A GGUF file type (`--dtype Q4_K_M`): every tensor in the type llama-quantize gives it
    #: (core/gguf_quant.py); the bytes below are then per-role averages of that mixture.
    gguf: str | None = None
    #: Bytes per element of the token embedding, the output head and the norms/biases/routers when
    #: they differ from `other_bytes` (a GGUF file: Q4_K / Q6_K / F32); None: `other_bytes`.
    embedding_bytes: float | None = None
    lm_head_bytes: float | None = None
    small_bytes: float | None = None
    #: (role, bytes per weight) where each role has its own format (ModelOpt MIXED_PRECISION).
    overrides: tuple[tuple[str, float], ...] = ()


#: DeepSeek's FP4 experts (`expert_dtype: fp4`): e2m1 values, two per byte, and one ue8m0 scale per
#: 32 (the MXFP4 layout vLLM loads them into).
FP4_EXPERT_BYTES = 0.5 + 1 / 32
#: NVFP4's group: one fp8 (e4m3) scale per 16 e2m1 values (NVIDIA ModelOpt; the per-tensor fp32
#: scale is negligible).
NVFP4_GROUP = 16
#: fp8 per-channel weight scale: one fp32 per output row; the row length is ~hidden_size.
FP8_CHANNEL_SCALE_BYTES = 4
#: Group size of int4 weight-only formats (GPTQ/AWQ/compressed-tensors w4a16): one fp16 scale per 128.
INT4_GROUP_SIZE = 128
#: vLLM 0.19 `mxfp4_round_up_hidden_size_and_intermediate_size` (fused_moe/oracle/mxfp4.py): the
#: expert hidden size is rounded up to 256 (Marlin, TRT-LLM, ROCm branches) and the per-rank
#: intermediate size to 64 (default branch). gpt-oss: 2880 -> 3072 hidden, giving 64.57 GiB for
#: gpt-oss-120b (64.38 logged) and 13.46 for gpt-oss-20b (13.64 logged). The Marlin branch also
#: rounds the intermediate size to 128 (2880 -> 2944): 13.67 / 65.8 GiB, which fits the 0.19 and
#: Marlin logs (13.64, 65.97) but not the Triton-backend 64.38; we keep the default branch.
MXFP4_EXPERT_PAD = (256, 64)


#: Bits per weight a `--dtype bpwN` may state: EXL2 goes from 2.0 (GGUF IQ1_S: 1.5625) up to 8.
BPW_RANGE = (1.0, 16.0)


def bits_per_weight(dtype: str) -> float | None:
    """The N of `bpwN` (exact bits per linear weight, scales included: EXL2 `2.5bpw`, GGUF IQ2_XS
    2.3125), or None for any other dtype name. Raises ValueError for a malformed or out-of-range N."""
    if not dtype.startswith("bpw"):
        return None
    try:
        bits = float(dtype[3:])
    except ValueError:
        raise ValueError("write the bits per weight as a number: bpw2.5") from None
    if not BPW_RANGE[0] <= bits <= BPW_RANGE[1]:  # also refuses nan
        raise ValueError(f"bits per weight {bits:g} outside {BPW_RANGE[0]:g}-{BPW_RANGE[1]:g}")
    return bits


def weight_format(spec: ModelSpec, dtype: str) -> WeightFormat:
    """Resolve `--dtype` (auto = the checkpoint's own storage; bpwN = N bits per linear weight) into a
    WeightFormat."""
    act = activation_dtype(spec)
    if ftype_name(dtype) is not None:
        return gguf_weight_format(spec, dtype)
    bits = bits_per_weight(dtype)
    if bits is not None:
        return WeightFormat(
            f"bpw{bits:g}",
            bits / 8,
            DTYPE_BYTES[act],
            note=f"linear layers at exactly {bits:g} bits per weight, scales included (EXL2 / GGUF "
            f"IQ-style); embeddings, lm_head, norms and routers stay {act}",
        )
    if dtype == "auto" and spec.quantization is not None:
        return _checkpoint_format(spec, DTYPE_BYTES[act])
    if dtype == "auto":
        return WeightFormat(act, DTYPE_BYTES[act], DTYPE_BYTES[act])
    other = DTYPE_BYTES[act] if dtype in ("fp8", "int8", "int4") else DTYPE_BYTES[dtype]
    if dtype == "fp8":
        return WeightFormat(
            "fp8",
            1 + FP8_CHANNEL_SCALE_BYTES / spec.hidden_size,
            other,
            note="linear layers FP8 with per-channel scales (vLLM --quantization "
            "fp8); embeddings, lm_head, norms and routers stay " + act,
        )
    if dtype == "int8":
        return WeightFormat(
            "int8",
            1 + FP8_CHANNEL_SCALE_BYTES / spec.hidden_size,
            other,
            note="linear layers int8 with per-channel scales; embeddings, "
            "lm_head, norms and routers stay " + act,
        )
    if dtype == "int4":
        return WeightFormat(
            "int4",
            0.5 + 2 / INT4_GROUP_SIZE,
            other,
            note=f"linear layers int4 with one fp16 scale per {INT4_GROUP_SIZE} "
            f"weights (GPTQ/AWQ-style); embeddings, lm_head, norms and "
            f"routers stay {act}",
        )
    return WeightFormat(dtype, DTYPE_BYTES[dtype], DTYPE_BYTES[dtype])


def gguf_weight_format(spec: ModelSpec, dtype: str) -> WeightFormat:
    """A llama-quantize file type as a WeightFormat: the linear layers at the mixture's average bytes
    per weight for this model (Q4_K_M: Q4_K with Q6_K attn_v/ffn_down in part of the layers), the
    token embedding and output head at their own types, norms, biases and routers F32, a vision tower
    F16 (Ollama's and llama.cpp's mmproj files)."""
    ftype = ftype_name(dtype)
    assert ftype is not None
    blocks, embd, output = gguf_layer_bytes(spec, ftype)
    counts = spec.params
    small = GGML_TYPES[SMALL_TYPE][1]
    block_small = sum(c.small + c.router for c in (layer_params(spec, layer) for layer in spec.layers))
    linear = (sum(blocks) - block_small * small) / max(counts.linear, 1)
    vocab = spec.vocab_size * spec.hidden_size
    return WeightFormat(
        ftype,
        linear,
        DTYPE_BYTES["fp16"],
        gguf=ftype,
        embedding_bytes=embd / vocab if vocab else None,
        lm_head_bytes=output / vocab if output and vocab else None,
        small_bytes=small,
        note=f"GGUF {ftype}: {FTYPES[ftype]} ({bits_of(FTYPES[ftype]):g} bits per weight) with "
        f"llama-quantize's mixture, {8 * linear:.3f} bits per linear weight on average for this "
        f"model; token embedding {8 * embd / max(vocab, 1):.3f} bits, norms F32",
    )


#: Disagreement between a checkpoint's stored bytes and the config arithmetic above which the stored
#: bytes win (and a warning says so).
CHECKPOINT_TOLERANCE = 0.01


def checkpoint_agreement(spec: ModelSpec, fmt: WeightFormat, stored_bytes: int) -> tuple[float, str | None]:
    """(scale to apply, warning): the stored tensors vs the config arithmetic for the same model.

    Stored bytes also hold MTP layers the engine skips; their share (config-derived) is removed
    before comparing."""
    counts = spec.params
    config_bytes = weights_bytes(spec, fmt, 1) - rope_cache_bytes(spec, fmt)
    main_share = counts.total / (counts.total + counts.mtp) if counts.mtp else 1.0
    ratio = stored_bytes * main_share / config_bytes
    if abs(ratio - 1) <= CHECKPOINT_TOLERANCE:
        return 1.0, None
    return ratio, (
        f"the checkpoint stores {stored_bytes / GIB:.2f} GiB of tensors, {ratio - 1:+.1%} vs the "
        f"config arithmetic ({config_bytes / GIB:.2f} GiB); sizing from the stored bytes"
    )


def activation_dtype(spec: ModelSpec) -> str:
    """The compute dtype: the checkpoint's torch_dtype, with fp32 checkpoints served in bf16
    (vLLM's dtype=auto rule) and quantized checkpoints computing in bf16/fp16."""
    return "bf16" if spec.torch_dtype in ("fp32", "fp8", "int8", "int4", "fp4") else spec.torch_dtype


def _checkpoint_format(spec: ModelSpec, other: float) -> WeightFormat:
    q = spec.quantization
    assert q is not None
    skip = _modelopt_skipped(spec) if q.modelopt else _unquantized_roles(q.not_converted)
    if q.method == "modelopt-mixed":
        return _mixed_format(spec, other, skip)
    o_share = _quantized_o_proj_share(spec) if q.modelopt and "attention" in skip else 0.0
    if q.method == "mxfp4":
        return WeightFormat(
            "mxfp4",
            0.5 + 1 / 32,
            other,
            skip,
            MXFP4_EXPERT_PAD,
            note="MXFP4 experts (4-bit values + one e8m0 scale per 32); "
            "attention, router, embeddings and lm_head in bf16",
        )
    if q.method == "nvfp4":
        group = q.group_size or NVFP4_GROUP
        per = 0.5 + 1 / group
        attention = o_share * per + (1 - o_share) * other
        return WeightFormat(
            "nvfp4",
            per,
            other,
            skip,
            note=f"{q.label}: 4-bit values + one fp8 scale per {group} ({per:.4f} bytes per weight); "
            "the ignored modules, embeddings and lm_head in bf16"
            + (f"; the MLA o_proj NVFP4 ({o_share:.1%} of the attention weights)" if o_share else ""),
            overrides=(("attention", attention),) if o_share else (),
        )
    # 8-bit with a group size (GPTQ/compressed-tensors int8 g128) keeps one fp16 scale per group, below.
    if q.weight_bits == 8 and q.group_size is None:
        scale = (
            4 / (q.block_size[0] * q.block_size[1])
            if q.block_size
            else 0.0
            if q.per_tensor  # one fp32 per tensor (ModelOpt FP8): none per weight
            else (FP8_CHANNEL_SCALE_BYTES / spec.hidden_size)
        )
        if q.expert_format == "fp4":
            return WeightFormat(
                "fp8",
                1 + scale,
                other,
                skip,
                note=f"{q.label}, routed experts FP4 (4-bit + ue8m0 scale per 32); embeddings and "
                "lm_head in bf16",
                expert_bytes=FP4_EXPERT_BYTES,
            )
        return WeightFormat("fp8", 1 + scale, other, skip, note=f"{q.label}; embeddings and lm_head in bf16")
    # GPTQ/AWQ without grouping (group_size -1) keep one fp16 scale per output channel, whose rows are
    # about hidden_size long; other methods without a stated group use the common 128.
    per_channel = q.group_size is None and q.method in ("gptq", "awq")
    group = spec.hidden_size if per_channel else (q.group_size or INT4_GROUP_SIZE)
    per = q.weight_bits / 8 + q.scale_bytes / group
    return WeightFormat(
        f"int{q.weight_bits}",
        per,
        other,
        skip,
        note=f"{q.label}: {per:.4f} bytes per weight with scales; embeddings and lm_head in bf16",
    )


def _modelopt_skipped(spec: ModelSpec) -> tuple[str, ...]:
    """The linear roles a ModelOpt checkpoint's exclude_modules / ignore list keeps unquantized."""
    q = spec.quantization
    assert q is not None
    layers = len(spec.layers) or 1 << 30
    roles = {role for name in q.not_converted for role in modelopt_roles(name, layers)}
    if "mlp" in roles and spec.family in _MLP_AS_SHARED:
        roles.add("shared_experts")
    return tuple(sorted(roles))


#: Families whose `mlp` module is the dense MLP beside the routed experts, which gpusize counts with
#: the shared experts (Gemma 4: `layers.N.mlp` and `layers.N.experts`; core/parse/mixers.py `_moe`).
_MLP_AS_SHARED = frozenset({"gemma4_text"})


#: The MLA projections a ModelOpt exclude list names one by one (DeepSeek-V3.x NVFP4: q_a_proj,
#: q_b_proj, kv_a_proj_with_mqa, kv_b_proj and the indexer excluded, o_proj quantized).
_MLA_PROJECTIONS = ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "indexer", "q_proj")


def _quantized_o_proj_share(spec: ModelSpec) -> float:
    """The share of an MLA model's attention weights in o_proj when its exclude list names the other
    projections one by one and not o_proj (nvidia/DeepSeek-V3.2-NVFP4), else 0: o_proj is then
    quantized like the experts (vLLM quantizes every linear the list does not match)."""
    q = spec.quantization
    assert q is not None
    attn = [name for name in q.not_converted if "attn" in name.lower()]
    named = all(any(f"attn.{proj}" in name for proj in _MLA_PROJECTIONS) for name in attn)
    if spec.mla is None or not attn or not named or any("o_proj" in name for name in attn):
        return 0.0
    layers = sum(1 for layer in spec.layers if layer.mixer == "attention")
    o_proj = layers * spec.num_attention_heads * spec.mla.v_head_dim * spec.hidden_size
    return o_proj / spec.params.attention if spec.params.attention else 0.0


def _mixed_format(spec: ModelSpec, other: float, skip: tuple[str, ...]) -> WeightFormat:
    """ModelOpt MIXED_PRECISION: each role in its own format, a role the file leaves out (or
    excludes) in the activation dtype."""
    q = spec.quantization
    assert q is not None
    per_role = {role: algo_bytes(algo, group, spec.hidden_size) for role, algo, group in q.mixed}
    linear = ("attention", "mlp", "experts", "shared_experts")
    overrides = tuple((role, other if role in skip else per_role.get(role, other)) for role in linear)
    largest = max(b for _, b in overrides)
    return WeightFormat(
        "modelopt",
        largest,
        other,
        overrides=overrides,
        lm_head_bytes=per_role.get("lm_head") if "lm_head" not in skip else None,
        note=f"{q.label}: "
        + ", ".join(f"{role} {b:.4f} B/weight" for role, b in overrides)
        + "; embeddings, norms and routers in bf16",
    )


def _unquantized_roles(patterns: tuple[str, ...]) -> tuple[str, ...]:
    roles = []
    for pattern in patterns:
        if "attn" in pattern:
            roles.append("attention")
        if "shared_expert" in pattern:
            roles.append("shared_experts")
    return tuple(roles)


# --------------------------------------------------------------------------- weights


def rope_cache_bytes(spec: ModelSpec, fmt: WeightFormat) -> int:
    """vLLM keeps a cos/sin table of max_position_embeddings x rotary dim in the model dtype on
    every rank (Llama-3.1-8B: 131072 x 128 x 2 B = 32 MiB, the gap between 2 x params = 14.96 GiB
    and the logged 14.99 GiB; Llama-4-Scout's 10M positions make it 2.5 GiB per GPU)."""
    if spec.mla or not spec.max_position_embeddings or spec.learned_position_embeddings:
        return 0
    return int(spec.max_position_embeddings * spec.head_dim * fmt.other_bytes)


def weights_bytes(
    spec: ModelSpec, fmt: WeightFormat, tp: int = 1, include_mtp: bool = False, expert_parallel: bool = False
) -> int:
    """Weight bytes held by ONE GPU at tensor-parallel size `tp` (tp=1: the whole model).

    Sharded: attention projections, MLPs, experts, embeddings and lm_head (vocab-parallel).
    Replicated on every rank: norms and biases, routers, MLA down-projections, k/v projections
    when tp exceeds the KV heads (vLLM QKVParallelLinear replicas), and the rope table.
    MTP layers count only with `include_mtp` (engines load them for speculative decoding only).
    With `expert_parallel` the routed experts are not sliced: each of the `tp` ranks holds whole
    experts at full width, the fullest rank ceil(experts / tp) of them (vLLM determine_expert_map).
    """
    counts = spec.params
    quant = {role: fmt.role_bytes(role) for role in ("attention", "mlp", "experts", "shared_experts")}
    sliced = 1 if expert_parallel else tp
    experts = counts.experts * _expert_padding(spec, fmt, sliced) * quant["experts"]
    if expert_parallel and spec.moe:
        experts *= tp * math.ceil(spec.moe.num_experts / tp) / spec.moe.num_experts  # / tp below
    sharded = (
        (counts.attention - counts.replicated_attention) * quant["attention"]
        + counts.mlp * quant["mlp"]
        + experts
        + (counts.shared_experts - _latent_projections(spec)) * quant["shared_experts"]
        + counts.embedding * _or(fmt.embedding_bytes, fmt.other_bytes)
        + counts.lm_head * _or(fmt.lm_head_bytes, fmt.other_bytes)
        + counts.vision * fmt.other_bytes
    )
    replicated = (
        counts.replicated_attention * quant["attention"]
        + _latent_projections(spec) * quant["shared_experts"]
        + (counts.small + counts.router) * _or(fmt.small_bytes, fmt.other_bytes)
    )
    extra_kv = _replicated_kv_weights(spec, tp) * quant["attention"]
    # MTP modules (speculative decoding) are decoder layers quantized like the others.
    mtp = counts.mtp * fmt.linear_bytes / tp if include_mtp else 0
    stored = (sharded / tp + replicated + extra_kv + mtp) * fmt.checkpoint_scale
    return int(stored) + rope_cache_bytes(spec, fmt)


def _latent_projections(spec: ModelSpec) -> int:
    """The latent MoE's hidden <-> latent projections of every MoE layer (part of shared_experts in
    `core.params`): vLLM builds them as ReplicatedLinear (Nemotron-3 fc1/fc2_latent_proj, Kimi-K3
    routed_expert_down_proj/up_proj), whole on every TP rank."""
    if spec.moe is None or not spec.moe.latent_size:
        return 0
    moe_layers = sum(n for layer, n in spec.layer_counts if layer.ffn == "moe")
    return moe_layers * 2 * spec.hidden_size * spec.moe.latent_size


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _expert_padding(spec: ModelSpec, fmt: WeightFormat, tp: int) -> float:
    """Stored / logical size of each expert's matrices after the kernel's padding."""
    if spec.moe is None or fmt.expert_pad == (1, 1):
        return 1.0
    hidden_pad, inter_pad = fmt.expert_pad
    hidden, width = spec.moe.latent_size or spec.hidden_size, spec.moe.moe_intermediate_size // tp
    return (math.ceil(hidden / hidden_pad) * hidden_pad / hidden) * (
        math.ceil(width / inter_pad) * inter_pad / width
    )


def _replicated_kv_weights(spec: ModelSpec, tp: int) -> float:
    """Extra k/v projection weights per GPU where tp exceeds a layer's KV heads: each rank holds a
    whole head. Per layer, with the layer's own KV heads and widths (Gemma 4's global layers have 4
    KV heads of 512 beside sliding layers of 16 x 256; a K-equals-V layer has no v_proj)."""
    if spec.mla:
        return 0.0
    extra = 0.0
    for layer in spec.attention_layers:
        kv = layer.num_key_value_heads
        if kv and tp > kv:
            width = head_width(spec, layer) + (0 if layer.k_eq_v else value_width(spec, layer))
            extra += spec.hidden_size * width * (1 - kv / tp)
    return extra


def linear_bytes_per_gpu(spec: ModelSpec, fmt: WeightFormat, n: int) -> float:
    """A cheap lower bound of what one of `n` GPUs holds: the linear weights alone, split n ways. Above
    a GPU's memory it rules a plan out before sizing it (`which`, fix suggestions)."""
    return spec.params.linear * fmt.linear_bytes / n


@dataclass(frozen=True)
class StoredLayers:
    """Bytes of each repeating block, the token embedding and the output head as a file stores them
    (GGUF): what llama.cpp's `--n-gpu-layers` moves between GPU and system RAM."""

    layer_bytes: tuple[int, ...]
    token_embd_bytes: int
    output_bytes: int


def estimated_layers(spec: ModelSpec, fmt: WeightFormat) -> StoredLayers:
    """Per-block, embedding and output bytes from config arithmetic (for non-GGUF sources); for a GGUF
    file type, tensor by tensor as llama-quantize types them."""
    if fmt.gguf is not None:
        blocks, embd, output = gguf_layer_bytes(spec, fmt.gguf)
        return StoredLayers(blocks, embd, output)
    sizes: dict[LayerSpec, int] = {}  # identical layers (one object per kind) counted once
    for layer, _ in spec.layer_counts:
        counts = layer_params(spec, layer)
        sizes[layer] = int(counts.linear * fmt.linear_bytes + counts.small * fmt.other_bytes)
    layers = [sizes[layer] for layer in spec.layers]
    embd = int(spec.params.embedding * fmt.other_bytes)
    output = int(spec.params.lm_head * fmt.other_bytes) or embd
    return StoredLayers(tuple(layers), embd, output)
