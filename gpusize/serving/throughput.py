"""Decode step time and prefill time from rooflines plus fitted per-engine costs (pure). Every figure
here is an ESTIMATE; the constants and their fit are in `gpusize.serving.calibrated`.

A decode step of `sequences` sequences at `context` tokens on one GPU group:
- bytes: what the step reads, per GPU: the text weights actually used (no vision tower, no MTP
  layers, one row of an untied input embedding, the experts the batch routes to), at their stored
  size (GGUF tensors as stored), plus every sequence's KV cache at its context;
- time: fitted fixed costs (per step, per layer, per routed expert run, per MoE layer, per
  sequence) + max(bytes / effective bandwidth, flops / effective compute) + tensor-parallel
  all-reduces (two per layer).
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

from dataclasses import dataclass

from gpusize.core import kvcache
from gpusize.core.engines import engine
from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.core.speculative import (
    draft_format,
    draft_weights_bytes,
    expected_tokens_per_step,
    mtp_weights_bytes,
    speculation,
)
from gpusize.core.weights import StoredLayers, estimated_layers, rope_cache_bytes, weights_bytes
from gpusize.core.workload import Workload
from gpusize.serving import calibrated

__all__ = [
    "PCIE_GBPS",
    "LlamaCppPlacement",
    "Speed",
    "allreduce_s",
    "assumptions",
    "decode_step",
    "decode_weight_bytes",
    "experts_touched",
    "host_copy_s",
    "kv_read_bytes",
    "link",
    "memory_class",
    "prefill_seconds",
    "stored_decode_bytes",
]

#: Per-direction link bandwidth (GB/s) of PCIe x16 by generation (PCI-SIG).
PCIE_GBPS = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


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


def allreduce_s(gpu: GpuSpec, tp: int, n_bytes: float) -> float:
    """One all-reduce of `n_bytes` over `tp` GPUs: over NVLink a fitted latency (one-shot custom
    all-reduce), over PCIe a ring of 2 (tp - 1) steps of a fitted latency each; plus the ring's
    2 (tp - 1) / tp x bytes over the link."""
    if tp == 1:
        return 0.0
    kind, gbps = link(gpu)
    if kind == "nvlink" and gpu.interconnect == "bridge-pairs" and tp > 2:
        kind, gbps = "pcie", PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0)  # bridges join pairs only
    steps = 2 * (tp - 1)
    latency = calibrated.ALLREDUCE_NVLINK_S if kind == "nvlink" else steps * calibrated.ALLREDUCE_HOP_S[kind]
    return latency + steps / tp * n_bytes / (gbps * 1e9)


def experts_touched(spec: ModelSpec, sequences: int) -> float:
    """Expected fraction of a layer's experts a batch of `sequences` tokens routes to (uniform
    routing): 1 - (1 - k/E)^N. gpt-oss-120b (top-4 of 128) at 64 sequences: 0.869 = 111.2 of 128,
    as InferenceX PR #1061 measured ("nearly all 111/128 unique experts are loaded per decode step")."""
    if spec.moe is None:
        return 1.0
    k, e = spec.moe.num_experts_per_tok, spec.moe.num_experts
    return 1 - (1 - k / e) ** max(sequences, 1)


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


def _fixed_s(spec: ModelSpec, speed: calibrated.EngineSpeed, sequences: int) -> float:
    """The fitted costs a step pays whatever it reads: per step, per layer, per routed expert run
    (experts touched x MoE layers) and per sequence."""
    moe_layers = sum(1 for layer in spec.layers if layer.ffn == "moe")
    experts = spec.moe.num_experts * experts_touched(spec, sequences) * moe_layers if spec.moe else 0.0
    per_layer = speed.layer_s * len(spec.layers) + speed.expert_s * experts + speed.moe_layer_s * moe_layers
    return speed.step_s + per_layer + speed.sequence_s * sequences


def decode_step(
    spec: ModelSpec,
    work: Workload,
    gpu: GpuSpec,
    tp: int,
    sequences: int,
    context: int,
    llamacpp: LlamaCppPlacement | None = None,
) -> Speed | None:
    """Estimated decode step of one engine instance serving `sequences` sequences at `context` tokens
    (tensor parallel `tp` for vLLM/SGLang/transformers; `llamacpp` for llama.cpp's splits)."""
    if not gpu.bandwidth_gbps:
        return None
    speed = calibrated.engine_speed(work.engine.name)
    bandwidth = gpu.bandwidth_gbps * 1e9 * speed.efficiency(memory_class(gpu))
    if engine(work.engine.name).splits_layers:
        return _llamacpp_step(spec, work, gpu, sequences, context, llamacpp or LlamaCppPlacement(), bandwidth)
    read = decode_weight_bytes(spec, work, tp, sequences) + sequences * kv_read_bytes(spec, work, tp, context)
    t_mem = read / bandwidth
    tflops = _tflops(gpu, work)
    accepted, verified, draft_s = _speculative(spec, work, tp, bandwidth, speed)
    tokens = sequences * verified
    t_cmp = 2 * spec.params.active * tokens / tp / (tflops * 1e12 * speed.prefill_mfu) if tflops else 0.0
    comm = 2 * len(spec.layers) * allreduce_s(gpu, tp, tokens * spec.hidden_size * 2)
    fixed = _fixed_s(spec, speed, sequences)
    t_host = host_copy_s(spec, work, gpu, tp)
    # under speculative decoding one verification step yields `accepted` tokens per sequence: the
    # time per generated token, what every caller reads as the step, is the step over them
    step = (fixed + max(t_mem, t_cmp) + comm + t_host + draft_s) / accepted
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
    speed = calibrated.engine_speed("llamacpp")
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
    active = 2 * spec.params.active * sequences / split
    t_cmp = active / (tflops * 1e12 * speed.prefill_mfu) if tflops else 0.0
    fixed = _fixed_s(spec, speed, sequences)
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
    matmuls + causal attention) on `tp` GPUs, plus the all-reduces of their activations and the copy
    of offloaded weights (`host_copy_s`). `cached`: the first tokens of each prompt the engine's prefix
    cache already holds (vLLM's automatic prefix caching, SGLang's radix cache): only the other
    prompt - cached tokens are computed, each attending to the cached prefix and, causally, to half
    the new tokens on average."""
    tflops = _tflops(gpu, work)
    new = prompt - min(max(cached, 0), prompt)
    if not tflops or new <= 0:
        return 0.0 if tflops else None
    speed = calibrated.engine_speed(work.engine.name)
    if speed.prefill_tflops_ceiling:
        tflops = min(tflops * speed.prefill_mfu, speed.prefill_tflops_ceiling) / speed.prefill_mfu
    attn_width = spec.num_attention_heads * spec.head_dim
    attention = 0.0
    past = prompt - new
    for layer in spec.attention_layers:  # QK^T and PV: 4 x width flops per (query, key) pair
        keys = past + new / 2  # causal: the cached prefix, then half the new tokens on average
        keys = min(layer.window, keys) if layer.window else keys
        attention += 4 * new * keys * attn_width
    peak = tp * tflops * 1e12
    dense = sequences * 2 * spec.params.active * new / (peak * speed.prefill_mfu)
    attend = sequences * attention / (peak * (speed.attention_mfu or speed.prefill_mfu))
    comm = 2 * len(spec.layers) * allreduce_s(gpu, tp, sequences * new * spec.hidden_size * 2)
    return dense + attend + comm + host_copy_s(spec, work, gpu, tp)


def assumptions(gpu: GpuSpec, work: Workload) -> str:
    """One line on how the speed estimates were made for this engine and GPU."""
    speed = calibrated.engine_speed(work.engine.name)
    kind = memory_class(gpu)
    eff = speed.efficiency(kind)
    note = (
        "" if speed.calibrated_for(kind) else f", no {kind.upper()} calibration record: the engine's lowest"
    )
    moe = f", {speed.expert_s * 1e6:.1f} us per routed expert run" if speed.expert_s else ""
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
        f"step{moe}, prefill at {speed.prefill_mfu:.0%} of dense peak, {multi}; ranges are the 10th-90th "
        "percentiles of the leave-one-out calibration residuals"
    )
