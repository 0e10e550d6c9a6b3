"""The time of one training step (pure): compute at an efficiency fitted per GPU architecture and
method, QLoRA's dequantization, and the data-parallel collectives that compute does not hide.

    step = compute + dequant + optimizer + max(comm - OVERLAP x compute, 0)
    compute = FLOPs per token (time_cost.flops_per_token: forward, backward, recompute) x tokens per
              step per GPU / (peak x EFFICIENCY[method] x ARCH_FACTOR[architecture]
              x (1 - CONTENTION) on a GPU with data-parallel peers)
    dequant = QLoRA: every NF4 linear read and written back as bf16 once per pass (forward, backward,
              recompute) per micro-batch, at the GPU's memory bandwidth
    optimizer = the optimizer step's memory traffic (weights, master, gradients, two moments) over the
              GPU's share of the trainable parameters, at the memory bandwidth
    comm    = bytes each GPU moves per step for its sharding (`collective_bytes`) / link bandwidth

The fitted constants live in training/speed_fit.py, written by `python bench/calibrate_training_speed.py
--write` from the published throughputs of tests/data/training_speed_records.yaml, with the
leave-one-source-out error that gives every estimate its range. Every time here is an ESTIMATE.
"""

from __future__ import annotations

from gpusize.core.gpu import PCIE_GBPS, GpuSpec
from gpusize.core.network import GPUS_PER_NODE, NodeLink
from gpusize.core.spec import ModelSpec
from gpusize.dataclass import dataclass
from gpusize.training import speed_fit
from gpusize.training.anatomy import trainable_params
from gpusize.training.setup import NF4_BYTES_PER_PARAM, SHARD_STAGE, TrainSetup, state_bytes
from gpusize.training.time_cost import flops_per_token

__all__ = [
    "DEFAULT_FIT",
    "DEQUANT_BYTES_PER_PARAM",
    "FP32_PEAK_FRACTION",
    "GATHER_BYTES",
    "NVLINK_EFFICIENCY",
    "Fit",
    "StepTime",
    "collective_bytes",
    "dequant_seconds",
    "efficiency",
    "estimate_words",
    "inter_node_bytes_per_s",
    "intra_node_bytes_per_s",
    "optimizer_seconds",
    "step_time",
]

#: Fraction of NVLink's per-direction bandwidth a collective reaches inside a server: nccl-tests
#: all_reduce bus bandwidth on 8x H100 SXM is ~360 GB/s of 450 GB/s per direction (NVIDIA's DGX H100
#: figures), 0.8.
NVLINK_EFFICIENCY = 0.8
#: Bytes per parameter gathered for compute under ZeRO-3 / FSDP (bf16 weights).
GATHER_BYTES = 2
#: fp32 training runs on the CUDA cores, not the bf16 tensor cores: A100 19.5 FP32 TFLOPS against 312
#: BF16 (NVIDIA A100 datasheet). A datasheet ratio, not fitted: no published record trains in fp32.
FP32_PEAK_FRACTION = 19.5 / 312
#: Bytes per NF4 weight per dequantization: the 4-bit block read (NF4_BYTES_PER_PARAM) and the bf16
#: copy written for the matmul (bitsandbytes `dequantize_4bit`, then a bf16 GEMM).
DEQUANT_BYTES_PER_PARAM = NF4_BYTES_PER_PARAM + 2


@dataclass(frozen=True, kw_only=True)
class Fit:
    """The fitted constants of the step model (speed_fit.py's values by default; the calibration
    script passes its own while fitting)."""

    efficiency: dict[str, float]
    arch_factor: dict[str, float]
    overlap: float
    #: Fraction of the compute rate a GPU loses once its job has data-parallel peers (speed_fit.CONTENTION).
    contention: float = 0.0


DEFAULT_FIT = Fit(
    efficiency=dict(speed_fit.EFFICIENCY),
    arch_factor=dict(speed_fit.ARCH_FACTOR),
    overlap=speed_fit.OVERLAP,
    contention=speed_fit.CONTENTION,
)


@dataclass(frozen=True, kw_only=True)
class StepTime:
    """One optimizer step on one GPU of a data-parallel job."""

    tokens_per_step: int  # per GPU
    compute_s: float
    dequant_s: float
    optimizer_s: float
    comm_s: float
    #: What the collectives add to the step: the part not hidden behind OVERLAP x compute.
    exposed_comm_s: float
    step_s: float
    #: Compute efficiency used (fraction of the GPU's peak at the job's precision).
    efficiency: float

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second on this GPU."""
        return self.tokens_per_step / self.step_s


def efficiency(gpu: GpuSpec, setup: TrainSetup, fit: Fit = DEFAULT_FIT) -> float:
    """Fraction of the bf16 peak the step's FLOPs reach: EFFICIENCY[method] x ARCH_FACTOR[architecture]
    (1 for an architecture no record measured) x FP32_PEAK_FRACTION for fp32 training."""
    value = fit.efficiency[setup.method] * fit.arch_factor.get(gpu.architecture, 1.0)
    return value * (FP32_PEAK_FRACTION if setup.precision == "fp32" else 1.0)


def dequant_seconds(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec) -> float:
    """QLoRA: each NF4 linear dequantized once per pass (forward, backward, and the recompute under
    checkpointing) per micro-batch, DEQUANT_BYTES_PER_PARAM each, at the memory bandwidth."""
    if setup.method != "qlora" or not gpu.bandwidth_gbps:
        return 0.0
    passes = (2 + setup.grad_ckpt) * setup.grad_accum
    return passes * spec.params.linear * DEQUANT_BYTES_PER_PARAM / (gpu.bandwidth_gbps * 1e9)


def optimizer_seconds(spec: ModelSpec, setup: TrainSetup, gpu: GpuSpec, ranks: int) -> float:
    """One optimizer step, bound by memory: AdamW reads the weight, the fp32 master, the gradient and
    both moments and writes back all but the gradient (state_bytes per trainable parameter), over the
    parameters this GPU steps (1/ranks of them once ZeRO-1 or more shards the optimizer)."""
    if not gpu.bandwidth_gbps:
        return 0.0
    b = state_bytes(setup.precision, setup.method, setup)
    per_param = 2 * (b.weight + b.master) + b.grad + 4 * b.moment
    share = ranks if SHARD_STAGE.get(setup.sharding, 0) >= 1 and ranks > 1 else 1
    return trainable_params(spec, setup) / share * per_param / (gpu.bandwidth_gbps * 1e9)


def collective_bytes(spec: ModelSpec, setup: TrainSetup, sharding: str, ranks: int) -> float:
    """Bytes each GPU sends per optimizer step (ring collectives, nccl-tests doc/PERFORMANCE.md):
    - ddp / zero1 / zero2: the gradients' all-reduce (or reduce-scatter + all-gather of the updated
      parameters: the same volume, ZeRO paper section 7), 2 (n-1)/n x trainable x gradient bytes;
    - zero3 / fsdp: per micro-batch the weights all-gathered in forward and again in backward and the
      gradients reduce-scattered, (n-1)/n x (2 x stored weights + gradients). FSDP shards frozen
      weights too, so LoRA gathers the whole base (NF4 for QLoRA)."""
    if ranks <= 1 or sharding == "none":
        return 0.0
    grads = trainable_params(spec, setup) * state_bytes(setup.precision, setup.method, setup).grad
    share = (ranks - 1) / ranks
    if sharding in ("ddp", "zero1", "zero2"):
        return 2 * share * grads
    if setup.method == "qlora":
        stored = (
            spec.params.linear * NF4_BYTES_PER_PARAM + (spec.params.total - spec.params.linear) * GATHER_BYTES
        )
    else:
        stored = spec.params.total * GATHER_BYTES
    return setup.grad_accum * share * (2 * stored + grads)


def intra_node_bytes_per_s(gpu: GpuSpec, ranks: int) -> float:
    """What a collective reaches between the GPUs of one server: NVLink/NVSwitch (or a bridged pair)
    at NVLINK_EFFICIENCY of one direction, else PCIe x16 of the GPU's generation; GeForce and PCIe
    Ada cards have no peer-to-peer, so their traffic crosses host memory at half that."""
    if gpu.nvlink_gbps and (gpu.interconnect in ("nvswitch", "infinity-fabric") or ranks <= 2):
        return gpu.nvlink_gbps / 2 * 1e9 * NVLINK_EFFICIENCY
    pcie = PCIE_GBPS.get(gpu.pcie_gen or 4, 32.0) * 1e9
    no_p2p = gpu.segment == "consumer" or gpu.architecture.startswith("Ada")
    return pcie / 2 if no_p2p else pcie


def inter_node_bytes_per_s(gpu: GpuSpec, link: NodeLink, gpus_per_node: int) -> float:
    """What a collective spanning servers reaches per GPU: NCCL spreads its rings over every NIC of
    the server (one channel per rail), so the server's GPUs share the sum of their NICs: the link's
    effective rate per GPU x GPUs per server (nccl-tests bus bandwidth across DGX servers is about
    the aggregate NIC rate), and never more than the NVLink inside the server."""
    return min(link.effective_bytes_per_s * gpus_per_node, intra_node_bytes_per_s(gpu, gpus_per_node))


def step_time(
    spec: ModelSpec,
    setup: TrainSetup,
    gpu: GpuSpec,
    num_gpus: int,
    link: NodeLink | None = None,
    fit: Fit = DEFAULT_FIT,
    gpus_per_node: int = GPUS_PER_NODE,
) -> StepTime | None:
    """The step of `setup` on each of `num_gpus` GPUs (None without the GPU's bf16 TFLOPS). `link`:
    the job spans servers of `gpus_per_node` GPUs and its collectives cross this link; without it
    they stay inside one server."""
    if not gpu.bf16_tflops:
        return None
    tokens = setup.batch * setup.seq_tokens * setup.grad_accum
    eff = efficiency(gpu, setup, fit)
    # With peers, the collective kernels run beside the GEMMs on the same GPU (speed_fit.CONTENTION).
    rate = gpu.bf16_tflops * 1e12 * eff * (1 - fit.contention if num_gpus > 1 else 1.0)
    compute = flops_per_token(spec, setup) * tokens / rate
    dequant = dequant_seconds(spec, setup, gpu)
    sharding = "none" if num_gpus <= 1 else ("ddp" if setup.sharding == "none" else setup.sharding)
    moved = collective_bytes(spec, setup, sharding, num_gpus)
    if link is not None:
        link_rate = inter_node_bytes_per_s(gpu, link, gpus_per_node)
    else:
        link_rate = intra_node_bytes_per_s(gpu, num_gpus)
    comm = moved / link_rate
    optimizer = optimizer_seconds(spec, setup, gpu, num_gpus)
    exposed = max(comm - fit.overlap * compute, 0.0)
    step = compute + dequant + optimizer + exposed
    return StepTime(
        tokens_per_step=tokens,
        compute_s=compute,
        dequant_s=dequant,
        optimizer_s=optimizer,
        comm_s=comm,
        exposed_comm_s=exposed,
        step_s=step,
        efficiency=eff,
    )


def estimate_words(gpu: GpuSpec | None = None) -> str:
    """What every training time is: an estimate, with the out-of-sample error of its model (and, for
    a GPU architecture no published record measured, that its efficiency is the records' mean)."""
    low, high = speed_fit.RANGE
    words = (
        f"estimate: published runs held out by source ran at {low:.2f}-{high:.2f}x the modelled speed "
        f"(8 in 10; mean error {speed_fit.LOSO_MEAN_ERROR:.0%}), hence the hours range"
    )
    if gpu is not None and gpu.architecture not in speed_fit.ARCH_FACTOR:
        words += f"; no published record on {gpu.architecture}: the records' mean efficiency"
    return words
