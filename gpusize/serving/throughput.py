"""Decode step time and prefill time from rooflines plus fitted per-engine costs (pure). Every figure
here is an ESTIMATE; the constants and their fit are in `gpusize.serving.calibrated`.

A decode step of `sequences` sequences at `context` tokens on one GPU group:
- bytes: what the step reads, per GPU: the text weights actually used (no vision tower, no MTP
  layers, one row of an untied input embedding, the experts the batch routes to), at their stored
  size (GGUF tensors as stored), plus every sequence's KV cache at its context;
- time: fitted fixed costs (per step, per layer, per kernel a layer launches beyond a dense attention
  layer's: `step_kernels`, per MoE layer, per sequence; a cost per routed expert run is the model
  before 2026-12-03, zero since) + max(bytes / effective bandwidth, flops / effective compute) +
  tensor-parallel all-reduces (two per layer); where the engine overlaps the per-sequence host work
  with the GPU's step (vLLM's async scheduling, `EngineModel.overlaps_host_work`), the step is the
  longer of that work and the rest. The MoE kernel's own work (`moe_kernel`: the weight tiles of vLLM's and
  SGLang's default kernel configs over the GPU's SMs, against the experts' bytes) is in the model as a
  term the engine may carry (`EngineSpeed.moe_mweight_s`); it was tried in place of the per-expert
  cost and not adopted (bench/VALIDATION.md), so no published engine has it.
llama.cpp's splits: `-sm layer` runs the GPUs one after another for a token (a pipeline, plus a hop
per GPU boundary), `-sm row` splits every matrix (each GPU reads its share) and gathers per layer;
layers left on the CPU (--n-gpu-layers) are read at host memory bandwidth, in series. vLLM's and
SGLang's --cpu-offload-gb weights cross PCIe every forward pass, in series (`host_copy_s`).
Speculative decoding with a stated --acceptance-rate: a step verifies k + 1 tokens per sequence,
runs k draft steps and yields (1 - a^(k+1)) / (1 - a) tokens (`_speculative`). Not modelled:
llama.cpp's pipelined prompt processing over a layer split (a layer-split prefill is estimated as
on one GPU: conservative).
"""

from __future__ import annotations

import functools

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.gpu import PCIE_GBPS, GpuSpec
from gpusize.core.params import moe_layers, routed_expert_params
from gpusize.core.releases import Version, parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.speculative import (
    draft_format,
    draft_weights_bytes,
    expected_tokens_per_step,
    mtp_weights_bytes,
    speculation,
)
from gpusize.core.weights import StoredLayers, estimated_layers, rope_cache_bytes, weights_bytes
from gpusize.core.workload import EngineSettings, Workload
from gpusize.dataclass import dataclass
from gpusize.serving import calibrated
from gpusize.serving.gpu_tables import SM_COUNT
from gpusize.serving.prefill_attention import prefill_attention_flops
from gpusize.serving.step_kernels import extra_kernels

__all__ = [
    "PCIE_GBPS",
    "architecture_family",
    "matmul_seconds",
    "prefill_mfu",
    "routed_active_params",
    "speed_release",
    "MOE_KERNELS",
    "MOE_TILE_FP8",
    "MOE_TILE_LARGE_M",
    "MOE_TILE_MXFP4",
    "MOE_TILE_SMALL_M",
    "SM_COUNT",
    "SM_FALLBACK_TFLOPS",
    "LlamaCppPlacement",
    "MoeKernel",
    "VLLM_DP_GAIN",
    "VLLM_DP_NOTE",
    "Speed",
    "allreduce_s",
    "assumptions",
    "attention_groups",
    "data_parallel_caveat",
    "decode_step",
    "decode_weight_bytes",
    "expert_column_blocks",
    "experts_touched",
    "host_copy_s",
    "kv_read_bytes",
    "link",
    "memory_class",
    "moe_kernel",
    "moe_kernel_family",
    "moe_tile",
    "prefill_seconds",
    "sm_count",
    "stored_decode_bytes",
]


@dataclass(frozen=True)
class Speed:
    """One decode step: its time, the tokens per second it gives, and where the time goes. Under
    speculative decoding (a stated acceptance rate) `step_s` is the verification step's time over
    the tokens it yields per sequence: the time per generated token."""

    step_s: float
    per_sequence_tokens_per_s: float
    aggregate_tokens_per_s: float
    bound: str  # memory | compute | host link (--cpu-offload-gb weights over PCIe)
    comm_s: float
    fixed_s: float


@dataclass(frozen=True)
class LlamaCppPlacement:
    """How llama.cpp spreads one model: over `gpus` GPUs by layer (pipeline) or row, with the
    layers --n-gpu-layers leaves off the GPUs read from host memory at `host_gbps`."""

    gpus: int = 1
    split_mode: str = "layer"  # layer | row
    host_gbps: float = calibrated.DEFAULT_HOST_GBPS
    #: llama.cpp --n-cpu-moe: the routed experts of the first this many layers stay in host memory.
    cpu_moe_layers: int = 0


def memory_class(gpu: GpuSpec) -> str:
    """hbm | gddr | lpddr, from the catalog's memory type (GDDR when unknown)."""
    kind = gpu.memory_type.upper()
    return next((c for prefix, c in calibrated.MEMORY_CLASSES.items() if kind.startswith(prefix)), "gddr")


def link(gpu: GpuSpec) -> tuple[str, float]:
    """('nvlink' | 'pcie' | 'pcie-host', per-direction GB/s) used for tensor-parallel traffic. NVSwitch
    boards and AMD Infinity Fabric count as NVLink. GeForce cards have no peer-to-peer (NVIDIA disables
    it in the driver) and neither, an assumption, do the PCIe Ada cards (L4, L40S, RTX 6000 Ada: vLLM
    turns its custom all-reduce off on them for lack of P2P): their traffic goes through host memory."""
    if gpu.interconnect in ("nvswitch", "infinity-fabric") or (
        gpu.nvlink_gbps and gpu.interconnect == "bridge-pairs"
    ):
        return "nvlink", (gpu.nvlink_gbps or 128.0) / 2
    pcie = PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0)
    no_p2p = gpu.segment == "consumer" or gpu.architecture.startswith("Ada")
    return ("pcie-host", pcie / 2) if no_p2p else ("pcie", pcie)


def allreduce_s(gpu: GpuSpec, tp: int, n_bytes: float, eager: bool = False) -> float:
    """One all-reduce of `n_bytes` over `tp` GPUs: over NVLink a fitted latency (one-shot custom
    all-reduce), over PCIe a ring of 2 (tp - 1) steps of a fitted latency each (under the tried
    `ALLREDUCE_PCIE_NCCL`, peer-to-peer PCIe pays NCCL's LL ring latency instead where the step is
    captured in CUDA graphs, not `eager`: the fitted steps came from a release without them, whose
    host launched each all-reduce); plus the ring's 2 (tp - 1) / tp x bytes over the link."""
    if tp == 1:
        return 0.0
    kind, gbps = link(gpu)
    if kind == "nvlink" and gpu.interconnect == "bridge-pairs" and tp > 2:
        kind, gbps = "pcie", PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0)  # bridges join pairs only
    steps = 2 * (tp - 1)
    if kind == "nvlink":
        latency = calibrated.ALLREDUCE_NVLINK_S
    elif kind == "pcie" and calibrated.ALLREDUCE_PCIE_NCCL and not eager:  # tried, off by default
        latency = calibrated.NCCL_RING_LL_BASE_S + steps * calibrated.NCCL_PCI_RING_LL_HOP_S
    else:
        latency = steps * calibrated.ALLREDUCE_HOP_S[kind]
    return latency + steps / tp * n_bytes / (gbps * 1e9)


def experts_touched(spec: ModelSpec, sequences: int) -> float:
    """Expected fraction of a layer's experts a batch of `sequences` tokens routes to (uniform
    routing): 1 - (1 - k/E)^N. gpt-oss-120b (top-4 of 128) at 64 sequences: 0.869 = 111.2 of 128,
    as InferenceX PR #1061 measured ("nearly all 111/128 unique experts are loaded per decode step")."""
    if spec.moe is None:
        return 1.0
    k, e = spec.moe.num_experts_per_tok, spec.moe.num_experts
    return 1 - (1 - k / e) ** max(sequences, 1)


#: The fused-MoE Triton kernel's tile (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K) when no tuned config
#: file matches the shape: `get_default_config` of vLLM (vllm/model_executor/layers/fused_moe/
#: fused_moe.py, commit 000d1458) and of SGLang (python/sglang/srt/layers/moe/fused_moe_triton/
#: fused_moe_triton_config.py, commit 083d6013), identical for 16-bit weights: M (tokens) <= E
#: (experts) -> 16 x 32 x 64, else 64 x 64 x 32. One thread block computes BLOCK_M x BLOCK_N outputs of
#: one expert, loading a BLOCK_N x BLOCK_K weight tile per step of its K loop.
MOE_TILE_SMALL_M = (16, 32, 64)
MOE_TILE_LARGE_M = (64, 64, 32)
#: FP8 weights: vLLM's block-wise config (BLOCK_SIZE_N, BLOCK_SIZE_K = the checkpoint's 128 x 128 scale
#: blocks, BLOCK_SIZE_M 64), the same as SGLang's per-tensor FP8 config at M <= E (64 x 128 x 128).
MOE_TILE_FP8 = (64, 128, 128)
#: MXFP4 experts (gpt-oss) run OpenAI's triton_kernels matmul_ogs in vLLM and SGLang, not the fused_moe
#: kernel: on Hopper and Ampere its weight tile is 128 x 128 (triton-lang/triton python/triton_kernels/
#: triton_kernels/matmul_ogs_details/opt_flags_details/opt_flags_nvidia.py, commit 052a2c97:
#: `compute_block_n` returns 128 for the Hopper/Ampere MX scale layout, `compute_block_k` 128 for
#: 4-bit weights without native MXFP), BLOCK_M 16 at decode batch sizes.
MOE_TILE_MXFP4 = (16, 128, 128)

#: A GPU not in SM_COUNT: its SMs estimated from its dense BF16 TFLOPS at H100 SXM's rate per SM
#: (989.4 TFLOPS / 132 SMs): fewer SMs than an older or smaller architecture has, so a slower MoE
#: kernel (conservative).
SM_FALLBACK_TFLOPS = 989.4 / 132


def sm_count(gpu: GpuSpec) -> int | None:
    """SMs (CUs) of one GPU: a MIG slice's own, the SM_COUNT table, else estimated from its BF16 TFLOPS
    (SM_FALLBACK_TFLOPS); None without either."""
    if gpu.sm_count:
        return gpu.sm_count
    if gpu.name in SM_COUNT:
        return SM_COUNT[gpu.name]
    return max(1, round(gpu.bf16_tflops / SM_FALLBACK_TFLOPS)) if gpu.bf16_tflops else None


#: The MoE kernel families a decode step's experts run in vLLM and SGLang: OpenAI's triton_kernels
#: `matmul_ogs` for MXFP4 (gpt-oss), the Triton `fused_moe` kernel for the other formats. Their speeds
#: are fitted apart (`EngineSpeed.moe_mweight_s`): they are different kernels, not formats.
MOE_KERNELS = ("fused_moe", "matmul_ogs")


def moe_kernel_family(weights: str) -> str:
    """The MoE kernel (MOE_KERNELS) that runs experts stored in this weight format."""
    return "matmul_ogs" if weights == "mxfp4" else "fused_moe"


def moe_tile(weights: str, tokens: int, experts: int) -> tuple[int, int, int]:
    """(BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K) of the fused-MoE kernel for `tokens` tokens a step
    over `experts` experts (MOE_TILE_*). MXFP4 and 4-bit experts run other kernels (OpenAI's
    triton_kernels: MOE_TILE_MXFP4; 4-bit GPTQ/AWQ experts, Marlin: the default config's, an assumption)."""
    if weights == "fp8":
        return MOE_TILE_FP8
    if weights == "mxfp4":
        return MOE_TILE_MXFP4
    return MOE_TILE_SMALL_M if tokens <= experts else MOE_TILE_LARGE_M


@dataclass(frozen=True)
class MoeKernel:
    """The fused-MoE kernel of ONE MoE layer in one decode step on one GPU: the distinct experts the
    batch routes to, the M blocks (at least one per touched expert), the thread blocks of its two
    grouped GEMMs (one BLOCK_M x BLOCK_N output tile each, per M block), the weight tiles they load
    (BLOCK_N x BLOCK_K, one per step of a thread block's K loop) and the expert bytes read."""

    touched: float
    m_blocks: float
    blocks: float
    tiles: float
    elements: float
    bytes: float
    kernel: str


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def moe_kernel(spec: ModelSpec, work: Workload, tp: int, sequences: int) -> MoeKernel | None:
    """One MoE layer's fused-MoE work at `sequences` tokens a step under tensor parallel `tp` (experts
    split along their intermediate width, as vLLM and SGLang shard them). The two grouped GEMMs per
    touched expert: gate_up (N = 2 x intermediate / tp, 1 x without a gate; K = hidden or the latent
    width) and down (N = hidden, K = intermediate / tp); a matrix of N x K needs ceil(N / BLOCK_N) x
    ceil(K / BLOCK_K) tiles per M block. M blocks: each touched expert's tokens padded to BLOCK_M
    (moe_align_block_size), at least max(touched, tokens x top-k / BLOCK_M). Bytes: the touched
    experts' share of the layer's routed-expert weights, at the format's expert bytes. None for a
    dense model."""
    moe, layers = spec.moe, moe_layers(spec)
    if moe is None or layers == 0:
        return None
    e, k = moe.num_experts, moe.num_experts_per_tok
    tokens = max(sequences, 1)
    touched = e * experts_touched(spec, tokens)
    block_m, block_n, block_k = moe_tile(work.weights.name, tokens, e)
    width = moe.latent_size or spec.hidden_size
    inter = _cdiv(moe.moe_intermediate_size, tp)
    gate_up = (2 if moe.gated else 1) * inter
    n_up, n_down = _cdiv(gate_up, block_n), _cdiv(width, block_n)
    tiles = n_up * _cdiv(width, block_k) + n_down * _cdiv(inter, block_k)
    m_blocks = max(touched, tokens * k / block_m)
    fmt = work.weights
    layer_bytes = spec.params.experts * fmt.role_bytes("experts") * fmt.checkpoint_scale / tp / layers
    return MoeKernel(
        touched,
        m_blocks,
        m_blocks * (n_up + n_down),
        m_blocks * tiles,
        m_blocks * tiles * block_n * block_k,
        layer_bytes * touched / e,
        moe_kernel_family(work.weights.name),
    )


def kernel_rate(spec: ModelSpec, work: Workload, gpu: GpuSpec, speed: calibrated.EngineSpeed) -> float:
    """Seconds per million weights per SM the MoE layers' kernel is costed at (`_moe_kernel_s`), or 0
    where its experts pay the per-routed-expert cost `expert_s` instead: a dense model, a kernel
    family without a fitted rate (`EngineSpeed.moe_mweight_s`) and a GPU of unknown SMs (CUs). On
    AMD the tiles' time is the rate's times ROCm's kernel-floor factor (`_moe_kernel_s`)."""
    if spec.moe is None or not sm_count(gpu):
        return 0.0
    return speed.mweight_s(moe_kernel_family(work.weights.name))


def _moe_kernel_s(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    sequences: int,
    bandwidth: float,
    speed: calibrated.EngineSpeed,
) -> float:
    """Seconds a step's MoE layers add beyond their expert bytes at `bandwidth` (already in the step's
    memory time): per MoE layer max(0, elements / 1e6 x mweight_s / SMs - bytes / bandwidth): the
    weight elements its tiles load (`MoeKernel.elements`) at the engine's fitted seconds per million
    weights per SM of that kernel (`moe_mweight_s`), fitted on NVIDIA GPUs: on AMD times
    `kernel_floor_factor`, as every kernel floor of the step (the factor, fitted on the MI300X
    records with it, brings InferenceX PR 1061's gpt-oss runs, never fitted, within 4%). Zero for a
    dense model, an engine without a fitted kernel time, or a GPU of unknown SMs."""
    mweight_s = kernel_rate(spec, work, gpu, speed)
    work_per_layer = moe_kernel(spec, work, tp, sequences)
    sms = sm_count(gpu)
    if not mweight_s or work_per_layer is None or not sms:
        return 0.0
    issue = work_per_layer.elements / 1e6 * mweight_s / sms * kernel_floor_factor(gpu, speed)
    return moe_layers(spec) * max(0.0, issue - work_per_layer.bytes / bandwidth)


def _expert_share(spec: ModelSpec) -> float:
    """Routed experts' share of the decoder blocks' parameters (to split stored GGUF block bytes)."""
    c = spec.params
    blocks = c.attention + c.mlp + c.experts + c.shared_experts + c.router + c.small
    return c.experts / blocks if blocks else 0.0


def stored_decode_bytes(spec: ModelSpec, stored: StoredLayers, sequences: int) -> tuple[list[float], float]:
    """(bytes each decoder block reads per step, output head bytes) from a GGUF file's stored tensors:
    the input embedding is looked up, not read; a tied table is read whole as the output head."""
    untouched = _expert_share(spec) * (1 - experts_touched(spec, sequences))
    blocks = [b * (1 - untouched) for b in stored.layer_bytes]
    return blocks, float(stored.output_bytes or stored.token_embd_bytes)


def decode_weight_bytes(spec: ModelSpec, work: Workload, tp: int, sequences: int) -> float:
    """Weight bytes ONE GPU reads in one decode step of `sequences` sequences at tensor parallel `tp`.

    Not read: the vision tower (decode is text only), MTP layers (loaded only with --mtp), the rope
    table, all but one row of an untied input embedding, and the experts no sequence routes to."""
    if work.stored_layers is not None:
        blocks, head = stored_decode_bytes(spec, work.stored_layers, sequences)
        return (sum(blocks) + head) / tp
    fmt, counts = work.weights, spec.params
    scale = fmt.checkpoint_scale
    full = weights_bytes(spec, fmt, tp) - rope_cache_bytes(spec, fmt)
    unread = (counts.lookup_only + counts.vision) * fmt.other_bytes * scale / tp
    experts_bytes = fmt.role_bytes("experts")
    idle = counts.experts * experts_bytes * scale / tp * (1 - experts_touched(spec, sequences))
    return full - unread - idle


def touched_expert_bytes(spec: ModelSpec, work: Workload, tp: int, sequences: int) -> float:
    """Bytes of the routed experts one GPU reads in a decode step of `sequences` sequences: every
    expert weight / tp, times the fraction the batch touches (`experts_touched`). Zero when dense."""
    if spec.moe is None:
        return 0.0
    fmt = work.weights
    every = spec.params.experts * fmt.role_bytes("experts") * fmt.checkpoint_scale / tp
    return every * experts_touched(spec, sequences)


def kv_read_bytes(spec: ModelSpec, work: Workload, tp: int, context: int) -> float:
    """KV cache bytes one sequence of `context` tokens reads per decode step on one GPU (sliding
    windows and recurrent state as the engine keeps them)."""
    layout = kvcache.kv_layout(spec, work.kv_bytes, tp)
    kv = kvcache.request_kv_bytes(layout, context, 1) if layout and context > 0 else 0
    return kv + kvcache.recurrent_state_bytes(spec, work.kv_bytes, tp)


def _tflops(gpu: GpuSpec, work: Workload) -> float | None:
    """Dense tensor TFLOPS the matmuls run at: FP8 for FP8 weights where the GPU has FP8 units."""
    if work.weights.name == "fp8" and gpu.fp8_tflops:
        return gpu.fp8_tflops
    return gpu.bf16_tflops


def kernel_floor_factor(gpu: GpuSpec, speed: calibrated.EngineSpeed | None = None) -> float:
    """How many times the NVIDIA-fitted kernel floors (per layer, per MoE layer, per extra kernel of
    a layer) a step pays on this GPU: `calibrated.ROCM_KERNEL_FLOOR_FACTOR` on AMD (ROCm, HIP graphs),
    1 elsewhere, and 1 for constants fitted on their own build (`EngineSpeed.build`: llama.cpp's ROCm
    and Vulkan floors are measured on AMD GPUs, not scaled from NVIDIA's)."""
    if speed is not None and speed.build is not None:
        return 1.0
    return calibrated.ROCM_KERNEL_FLOOR_FACTOR if gpu.vendor == "AMD" else 1.0


def expert_column_blocks(spec: ModelSpec, work: Workload, tp: int, sequences: int) -> int:
    """Thread blocks ONE M block of one touched expert runs in the fused-MoE gate_up GEMM under
    tensor parallel `tp`: ceil(N / BLOCK_N), N = (2 if gated else 1) x moe_intermediate_size / tp (the
    expert's slice on this GPU), BLOCK_N the kernel's tile at this batch (`moe_tile`). vLLM's
    `invoke_fused_moe_kernel` (vllm/model_executor/layers/fused_moe/fused_moe.py, commit 000d1458)
    launches cdiv(EM, BLOCK_SIZE_M) x cdiv(N, BLOCK_SIZE_N) programs, each looping over all of K
    (the hidden width, whatever the TP): the programs per expert fall as 1/tp down to one, the work
    of each does not. The down GEMM's programs (N = hidden) do not depend on tp. 0 when dense."""
    moe = spec.moe
    if moe is None:
        return 0
    _, block_n, _ = moe_tile(work.weights.name, max(sequences, 1), moe.num_experts)
    gate_up = (2 if moe.gated else 1) * _cdiv(moe.moe_intermediate_size, tp)
    return _cdiv(gate_up, block_n)


def expert_run_s(
    spec: ModelSpec, work: Workload, gpu: GpuSpec, tp: int, speed: calibrated.EngineSpeed, sequences: int = 1
) -> float:
    """Seconds per routed expert run: `expert_tuned_s` where the engine release ships a tuned
    fused-MoE Triton config for the layer on this GPU (`moe_config.tuned_config`) and the engine has
    that constant (the tried model, zero in the published constants), else `expert_s`; plus
    `expert_block_s` per gate_up thread block of the expert on one GPU (`expert_column_blocks`: the
    part that shrinks with tp down to one block; the tried model, zero in the published constants).
    Zero where the experts' kernel is priced by its tiles instead (`kernel_rate`)."""
    if kernel_rate(spec, work, gpu, speed):
        return 0.0  # the kernel is costed by its tiles over the SMs (`_moe_kernel_s`)
    blocks = (
        speed.expert_block_s * expert_column_blocks(spec, work, tp, sequences)
        if speed.expert_block_s
        else 0.0
    )
    if speed.expert_weight_s:  # the tried per-weight expert cost (zero in the published constants)
        blocks += speed.expert_weight_s * routed_expert_params(spec)
    if not speed.expert_tuned_s or spec.moe is None:
        return speed.expert_s + blocks
    # start-up: the shipped config list is read only by the tried tuned-config model
    from gpusize.serving.moe_config import tuned_config

    return (speed.expert_tuned_s if tuned_config(spec, work, gpu, tp) else speed.expert_s) + blocks


def _fixed_s(
    spec: ModelSpec,
    work: Workload,
    speed: calibrated.EngineSpeed,
    sequences: int,
    gpu: GpuSpec,
    expert_s: float | None = None,
) -> float:
    """The fitted costs a step's GPU side pays whatever it reads: per step, per layer, per kernel the
    layers run beyond a dense attention layer's (`kernel_s` x `step_kernels.extra_kernels`), per MoE
    layer (routing and the MoE kernels' launches: a floor) and per routed expert run (experts touched
    x MoE layers at `expert_s`, default the engine's: the model published before 2026-12-03, zero
    since); the per-sequence host work (`sequence_s`) is the callers', which may overlap it. The
    kernel floors are scaled by `kernel_floor_factor` (ROCm's dispatch on AMD GPUs). Mamba and Kimi
    Delta layers add no kernel of their own here (no record to count them on)."""
    layers = moe_layers(spec)
    experts = spec.moe.num_experts * experts_touched(spec, sequences) * layers if spec.moe else 0.0
    launches = (speed.layer_s * len(spec.layers) + speed.moe_layer_s * layers) * kernel_floor_factor(
        gpu, speed
    )
    if speed.kernel_s:
        launches += speed.kernel_s * extra_kernels(spec, work) * kernel_floor_factor(gpu, speed)
    per_expert = speed.expert_s if expert_s is None else expert_s
    return speed.step_s + launches + per_expert * experts


def build_of(settings: EngineSettings, gpu: GpuSpec) -> str | None:
    """The build an engine run with these settings runs on `gpu` (`EngineModel.build`); None for the
    engines that have one build."""
    build = engine(settings.name).build
    return None if build is None else build(settings, gpu)


def architecture_family(gpu: GpuSpec) -> str:
    """The architecture a GPU's speed is fitted and ranged by: the first word of the catalog's
    `architecture` ("Hopper", "Blackwell", "CDNA3", "Apple")."""
    return gpu.architecture.split()[0] if gpu.architecture else "unknown"


def speed_release(work: Workload) -> Version | None:
    """The release the speed model runs: the one the plan names, else the engine's default."""
    return _release(work.engine.name, work.engine.version)


@functools.lru_cache(maxsize=256)
def _release(name: str, version: str | None) -> Version | None:
    return parse_version(version) if version else engine(name).releases.default_version


def prefill_mfu(speed: calibrated.EngineSpeed, gpu: GpuSpec, work: Workload) -> float:
    """The fraction of the dense peak an engine's prefill matmuls reach on this GPU under the plan's
    release (its family's, where the release is one the family's records ran)."""
    return speed.prefill_mfu_on(architecture_family(gpu), speed_release(work))


@functools.lru_cache(maxsize=1024)
def routed_active_params(spec: ModelSpec) -> int:
    """Weights of the routed experts one token runs through: top-k experts in every MoE layer (0 for a
    dense model)."""
    moe = spec.moe
    if moe is None:
        return 0
    return routed_expert_params(spec) * moe.num_experts_per_tok * moe_layers(spec)


def matmul_seconds(
    spec: ModelSpec,
    speed: calibrated.EngineSpeed,
    gpu: GpuSpec,
    work: Workload,
    tokens: float,
    peak_flops: float,
) -> float:
    """Seconds the weight matmuls of `tokens` tokens take at `peak_flops` dense FLOP/s (the GPUs'
    together): the active weights at the family's prefill MFU (`prefill_mfu`), the routed experts' at
    `EngineSpeed.expert_mfu_ratio` of it (their grouped GEMMs)."""
    routed = min(routed_active_params(spec), spec.params.active)
    weights = spec.params.active - routed + routed / speed.expert_mfu_ratio
    return 2 * weights * tokens / (peak_flops * prefill_mfu(speed, gpu, work))


def speed_on(work: Workload, gpu: GpuSpec) -> calibrated.EngineSpeed:
    """The fitted constants the plan's engine runs with on `gpu`: those of its build where they are
    fitted (`calibrated.engine_speed`), else the engine's."""
    return calibrated.engine_speed(work.engine.name, build_of(work.engine, gpu))


def attention_groups(spec: ModelSpec, work: Workload, tp: int) -> int:
    """Data-parallel attention's groups in a plan of `tp` GPUs (`EngineModel.attention_dp`; 1: none)."""
    return engine(work.engine.name).attention_dp(spec, work, tp)[0]


def decode_step(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    sequences: int,
    context: int,
    llamacpp: LlamaCppPlacement | None = None,
    host_overlap: bool = True,
) -> Speed | None:
    """Estimated decode step of one engine instance serving `sequences` sequences at `context` tokens
    (tensor parallel `tp` for vLLM/SGLang/transformers; `llamacpp` for llama.cpp's splits). Where the
    engine overlaps a step's per-sequence host work with the GPU's step (`EngineModel.
    overlaps_host_work`: vLLM's async scheduling) and the launch lets it (`host_overlap`: False for
    one engine over several servers, pipeline stages or Ray's executor, where vLLM turns it off),
    the step is the longer of the two."""
    if not gpu.bandwidth_gbps:
        return None
    speed = speed_on(work, gpu)
    bandwidth = gpu.bandwidth_gbps * 1e9 * speed.efficiency(memory_class(gpu))
    if engine(work.engine.name).splits_layers:
        return _llamacpp_step(spec, work, gpu, sequences, context, llamacpp or LlamaCppPlacement(), bandwidth)
    # attention data parallel: each group attends to its own sequences (the step waits for the
    # busiest, `local`) on tp / groups GPUs, reading their KV cache only and the attention weights at
    # its own slice; the MoE and MLP layers, their all-reduces and compute stay those of all tp
    groups, attention_extra = engine(work.engine.name).attention_dp(spec, work, tp)
    local = -(-sequences // groups)
    kv = local * kv_read_bytes(spec, work, tp // groups, context)
    read = decode_weight_bytes(spec, work, tp, sequences) + attention_extra + kv
    t_mem = read / bandwidth + _moe_kernel_s(spec, work, gpu, tp, sequences, bandwidth, speed)
    t_mem += speed.expert_byte_s * touched_expert_bytes(spec, work, tp, sequences)
    tflops = _tflops(gpu, work)
    accepted, verified, draft_s = _speculative(spec, work, tp, bandwidth, speed)
    tokens = sequences * verified
    t_cmp = matmul_seconds(spec, speed, gpu, work, tokens, tp * tflops * 1e12) if tflops else 0.0
    eager = work.engine.enforce_eager
    comm = 2 * len(spec.layers) * allreduce_s(gpu, tp, tokens * spec.hidden_size * 2, eager)
    fixed = _fixed_s(spec, work, speed, sequences, gpu, expert_run_s(spec, work, gpu, tp, speed, sequences))
    t_host = host_copy_s(spec, work, gpu, tp)
    # under speculative decoding one verification step yields `accepted` tokens per sequence: the
    # time per generated token, what every caller reads as the step, is the step over them
    # the per-sequence host work: each group's scheduler its own, unless one front end serves them all
    host = speed.sequence_s * engine(work.engine.name).host_sequences(work, sequences, local)
    gpu_s = fixed + max(t_mem, t_cmp) + comm + t_host + draft_s
    overlaps = engine(work.engine.name).overlaps_host_work
    if host_overlap and overlaps is not None and overlaps(work, gpu):
        whole, fixed = max(gpu_s, host), (fixed if gpu_s >= host else host)
    else:
        whole, fixed = gpu_s + host, fixed + host
    step = whole / accepted
    bound = "host link" if t_host > max(t_mem, t_cmp) else "memory" if t_mem >= t_cmp else "compute"
    return Speed(step, 1 / step, sequences / step, bound, comm, fixed)


def host_copy_s(spec: ModelSpec, work: Workload, gpu: GpuSpec, tp: int) -> float:
    """Seconds one forward pass spends moving the weights the engine keeps in host memory
    (--cpu-offload-gb) to each GPU: their bytes per GPU over PCIe x16 of the GPU's generation
    (PCIE_GBPS, one direction; gen 4 where the catalog gives none), in series with the rest of the
    step: each offloaded layer is copied (SGLang, vLLM V0) or read through UVA (vLLM V1) when its turn
    comes. The link's full rate: a real copy reaches less, so this is a lower bound on the time."""
    host = engine(work.engine.name).host_weights(spec, work, tp)
    return host / (PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0) * 1e9) if host else 0.0


def _speculative(
    spec: ModelSpec, work: Workload, tp: int, bandwidth: float, speed: calibrated.EngineSpeed
) -> tuple[float, int, float]:
    """(tokens each sequence gains per step, tokens each sequence verifies per step, seconds the draft
    adds) under speculative decoding with a stated --acceptance-rate; (1, 1, 0) without. The target
    verifies k + 1 tokens per sequence in one step (its weights read once, its compute k + 1 times);
    the draft runs k steps, each reading its weights and paying the fitted per-step and per-layer
    costs; the step yields (1 - a^(k+1)) / (1 - a) tokens (`expected_tokens_per_step`)."""
    drafting = speculation(work.engine, spec)
    if drafting is None or work.acceptance_rate is None:
        return 1.0, 1, 0.0
    k = drafting.tokens
    accepted = expected_tokens_per_step(work.acceptance_rate, k)
    if drafting.method == "ngram":
        return accepted, k + 1, 0.0
    if drafting.method == "mtp" or work.draft is None:
        read, layers = mtp_weights_bytes(spec, work.weights, tp), max(spec.num_nextn_predict_layers, 1)
    else:
        fmt = draft_format(spec, work.draft.spec)
        read = draft_weights_bytes(spec, work.draft, drafting.method, fmt, tp)
        layers = len(work.draft.spec.layers)
    per_draft_step = read / bandwidth + speed.step_s + speed.layer_s * layers
    return accepted, k + 1, k * per_draft_step


def _llamacpp_step(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    sequences: int,
    context: int,
    lay: LlamaCppPlacement,
    bandwidth: float,
) -> Speed:
    """llama.cpp: blocks on the GPUs at GPU bandwidth (one GPU after another with -sm layer, all at
    once with -sm row), blocks left in host memory at host bandwidth, in series."""
    speed = speed_on(work, gpu)
    stored = work.stored_layers or estimated_layers(spec, work.weights)
    blocks, head = stored_decode_bytes(spec, stored, sequences)
    kv = kv_read_bytes(spec, work, 1, context) * sequences / max(len(blocks), 1)
    n = len(blocks)
    ngl = n + 1 if work.engine.n_gpu_layers is None else min(work.engine.n_gpu_layers, n + 1)
    on_gpu = max(ngl - 1, 0)
    gpu_bytes = sum(b + kv for b in blocks[n - on_gpu :]) + (head if ngl >= 1 else 0)
    host_bytes = sum(b + kv for b in blocks[: n - on_gpu]) + (0 if ngl >= 1 else head)
    if lay.cpu_moe_layers:  # the experts these layers read this step, out of their GPU blocks
        touched = _expert_share(spec) * experts_touched(spec, sequences)
        moved = sum(stored.layer_bytes[: lay.cpu_moe_layers]) * touched
        gpu_bytes, host_bytes = gpu_bytes - moved, host_bytes + moved
    comm = 0.0
    if lay.gpus > 1 and lay.split_mode == "row":
        gpu_bytes /= lay.gpus
        comm = calibrated.ROW_SPLIT_SYNC_S * on_gpu * lay.gpus
    elif lay.gpus > 1:
        comm = calibrated.LAYER_SPLIT_HOP_S * (lay.gpus - 1)
    host_bw = lay.host_gbps * 1e9 * calibrated.HOST_EFFICIENCY
    t_mem = gpu_bytes / bandwidth + host_bytes / host_bw
    split = lay.gpus if lay.split_mode == "row" else 1
    tflops = gpu.bf16_tflops
    t_cmp = matmul_seconds(spec, speed, gpu, work, sequences, split * tflops * 1e12) if tflops else 0.0
    fixed = _fixed_s(spec, work, speed, sequences, gpu) + speed.sequence_s * sequences
    step = fixed + max(t_mem, t_cmp) + comm
    return Speed(step, 1 / step, sequences / step, "memory" if t_mem >= t_cmp else "compute", comm, fixed)


def prefill_seconds(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    prompt: int,
    sequences: int = 1,
    cached: int = 0,
) -> float | None:
    """Estimated compute time to prefill `sequences` prompts of `prompt` tokens together (dense
    matmuls at the weights' rate + causal attention at the 16-bit rate, `prefill_attention`) on `tp`
    GPUs, plus the all-reduces of their activations and the copy
    of offloaded weights (`host_copy_s`). `cached`: the first tokens of each prompt the engine's prefix
    cache already holds (vLLM's automatic prefix caching, SGLang's radix cache): only the other
    prompt - cached tokens are computed, each attending to the cached prefix and, causally, to half
    the new tokens on average. Under data-parallel attention (`EngineModel.attention_dp`) a prompt's
    attention (its projections and the attention itself) runs on its own group's tp / groups GPUs,
    the prompts spread over the groups, the busiest taking ceil(sequences / groups); every group
    steps together through the MoE layers, so the step waits for that group."""
    tflops = _tflops(gpu, work)
    new = prompt - min(max(cached, 0), prompt)
    if not tflops or new <= 0:
        return 0.0 if tflops else None
    speed = speed_on(work, gpu)
    mfu = prefill_mfu(speed, gpu, work)
    if speed.prefill_tflops_ceiling:
        tflops = min(tflops * mfu, speed.prefill_tflops_ceiling) / mfu
    # QK^T and PV of each layer kind, with its own widths and the keys it reads (latent attention's
    # 192 / 128 widths, sparse attention's top-k and indexer, DeepSeek-V4's compressed entries)
    attention = prefill_attention_flops(spec, prompt - new, new)
    peak = tp * tflops * 1e12
    dense = matmul_seconds(spec, speed, gpu, work, sequences * new, peak)
    # attention runs on the activations (bf16/fp16 FlashAttention-class kernels), not at the FP8
    # weights' rate: the 16-bit peak, under the same ceiling
    attention_peak = peak * (gpu.bf16_tflops or tflops) / (_tflops(gpu, work) or tflops)
    attend = sequences * attention / (attention_peak * (speed.attention_mfu or mfu))
    groups = attention_groups(spec, work, tp)
    if groups > 1:  # the busiest group's prompts on its tp / groups GPUs, not spread over all tp
        busiest = -(-sequences // groups) * groups / sequences
        counts = spec.params
        projections = 2 * (counts.attention - counts.replicated_attention) * sequences * new / (peak * mfu)
        dense += (busiest - 1) * projections
        attend *= busiest
    comm = (
        2
        * len(spec.layers)
        * allreduce_s(gpu, tp, sequences * new * spec.hidden_size * 2, work.engine.enforce_eager)
    )
    return dense + attend + comm + host_copy_s(spec, work, gpu, tp)


#: vLLM's --data-parallel-size on one server, beside its speed estimates: the ranks' decode step as
#: data-parallel attention's groups (`attention_dp`), the per-sequence host work on one API server up
#: to 0.14 (`EngineModel.host_sequences`), and the one published pair it was checked on
#: (tests/serving/test_vllm_data_parallel.py derives both ratios from the records).
VLLM_DP_GAIN = (
    "one API server process streams every rank's outputs up to vLLM 0.14 (the step pays the whole "
    "batch's per-sequence host work), one per rank from 0.15.0; on the one published pair (gpustack, "
    "vLLM 0.13.0, DeepSeek-V3.2 on 8 x H200, a ShareGPT burst of 1,000) -dp 8 moved 1.11x the tok/s of "
    "-tp 8, estimated 1.05x; no record checks the gain from 0.15.0"
)
VLLM_DP_NOTE = (
    "--data-parallel-size {dp}: the decode step is modelled per rank (its own sequences' KV cache and "
    "scheduler, the weights it holds whole at its own TP) with the MoE layers over every GPU; " + VLLM_DP_GAIN
)


def data_parallel_caveat(work: Workload) -> str | None:
    """What the speed of vLLM's --data-parallel-size rests on (`VLLM_DP_GAIN`); None without it."""
    return VLLM_DP_GAIN if (work.engine.data_parallel_size or 1) > 1 else None


def unmodelled(work: Workload) -> list[str]:
    """Settings the plan is sized with that the speed estimates model only in part, said beside them:
    data-parallel attention's decode step and prefill are its groups' (`decode_step`,
    `prefill_seconds`); expert parallel on one server is sized for its whole experts per GPU, while no
    public record fits its decode step."""
    out = []
    adp = "enable_attention_dp" if work.engine.enable_attention_dp else None
    if work.engine.enable_dp_attention and (work.engine.dp_size or 1) > 1:
        adp = f"--enable-dp-attention --dp-size {work.engine.dp_size}"
    if adp:
        out.append(
            f"{adp}: the decode step is modelled per "
            "attention group (its own sequences' KV cache, the attention weights at the group's slice); "
            "a prompt's attention prefills on its own group's GPUs and the MoE layers on all of them "
            "(a burst's prompts spread over the groups)"
        )
    if data_parallel_caveat(work):
        out.append(VLLM_DP_NOTE.format(dp=work.engine.data_parallel_size))
    if (
        work.engine.enable_expert_parallel
        or max(work.engine.ep_size or 1, work.engine.expert_parallel_size or 1) > 1
    ):
        # whole experts per GPU (vLLM --enable-expert-parallel, TensorRT-LLM --ep_size) change the
        # memory per GPU; the decode step still reads the experts as tensor parallel slices
        out.append(
            "expert parallel is sized for memory only: the speed estimates read the experts as tensor "
            "parallel slices (its all-to-all and expert load balance are not modelled on one server)"
        )
    return out


def assumptions(spec: ModelSpec, gpu: GpuSpec, work: Workload) -> str:
    """One line on how the speed estimates were made for this engine, model and GPU."""
    speed = speed_on(work, gpu)
    kind = memory_class(gpu)
    eff = speed.efficiency(kind)
    note = (
        "" if speed.calibrated_for(kind) else f", no {kind.upper()} calibration record: the engine's lowest"
    )
    kernel, rate = moe_kernel_family(work.weights.name), kernel_rate(spec, work, gpu, speed)
    if rate:
        layer_costs = f", {kernel} MoE kernel at {1e-3 / rate:.1f} G weights per SM per s"
    else:
        layer_costs = f", {speed.expert_s * 1e6:.1f} us per routed expert run" if speed.expert_s else ""
    kernels = extra_kernels(spec, work) if speed.kernel_s else 0
    if kernels:
        per_kernel = speed.kernel_s * 1e6
        layer_costs += f", {per_kernel:.1f} us per kernel beyond a dense layer's ({kernels:,} a step)"
    build = build_of(work.engine, gpu)
    if build is not None:
        label = engine(work.engine.name).build_labels.get(build, build)
        own = calibrated.backend_calibrated(work.engine.name, build)
        note += (
            f", {label} build" if own else f", {label} build (no {label} record: the CUDA build's constants)"
        )
    if engine(work.engine.name).splits_layers:
        multi = (
            f"-sm layer runs the GPUs one after another (+{calibrated.LAYER_SPLIT_HOP_S * 1e6:.0f} us per "
            f"GPU boundary), -sm row gathers every layer ({calibrated.ROW_SPLIT_SYNC_S * 1e6:.0f} us per "
            "layer per GPU)"
        )
    else:
        multi = (
            "one device: no tensor-parallel traffic"
            if gpu.one_device
            else (f"tensor-parallel traffic over {gpu.tp_link}")
        )
    return (
        f"estimates from a model fitted on published measurements ({speed.fitted_on}): "
        f"{eff:.0%} of spec memory bandwidth ({kind}{note}), {speed.layer_s * 1e6:.0f} us per layer per "
        f"step{layer_costs}, prefill at {prefill_mfu(speed, gpu, work):.0%} of dense peak, {multi}; ranges "
        "are the 10th-90th percentiles of the leave-one-out calibration residuals"
    )
