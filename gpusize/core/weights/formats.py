"""WeightFormat: how an engine stores a model's weights, bytes per weight by role (pure).

The named constants of the formats it is built from (scales, groups, padding) are declared here once;
`core.weights.dtype` builds a WeightFormat from `--dtype`, `core.weights.checkpoint` from a
checkpoint's own quantization_config.
"""

from __future__ import annotations

import operator
from dataclasses import fields

from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass, kept_hash

__all__ = [
    "BPW_RANGE",
    "FP4_EXPERT_BYTES",
    "FP8_CHANNEL_SCALE_BYTES",
    "INT4_GROUP_SIZE",
    "MXFP4_EXPERT_PAD",
    "NVFP4_GROUP",
    "WeightFormat",
    "activation_dtype",
    "bits_per_weight",
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

    def __hash__(self) -> int:
        """The fields' hash, kept (`kept_hash`): every workload of a fit holds one, hashed with it."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _FORMAT_VALUES) if known is None else known


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


def activation_dtype(spec: ModelSpec) -> str:
    """The compute dtype: the checkpoint's torch_dtype, with fp32 checkpoints served in bf16
    (vLLM's dtype=auto rule) and quantized checkpoints computing in bf16/fp16."""
    return "bf16" if spec.torch_dtype in ("fp32", "fp8", "int8", "int4", "fp4") else spec.torch_dtype


_FORMAT_VALUES = operator.attrgetter(*(f.name for f in fields(WeightFormat)))
