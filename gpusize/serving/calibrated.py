"""Per-engine speed constants, each fitted on published measurements (pure values).

The fit is `bench/calibrate_throughput.py` (`python bench/calibrate_throughput.py --fit`) over the
calibration records of tests/data/throughput_records.yaml (source URL and verbatim quote per record);
tests/serving/test_throughput_conformance.py recomputes it and fails when a constant here drifts from
it, and checks the holdout records (chosen by source before fitting) against the tolerances of the
README's "Throughput model". The figures of the last fit are in bench/RESULTS.md; every record predicted
by a fit that never saw its source (leave one source out, `--loso`) in bench/VALIDATION.md.

vLLM's decode constants are fitted in two stages: those every model pays on the dense models' records,
those only a MoE model pays (kernel_s, moe_mweight_s, moe_layer_s) on the MoE models' records.

Decode step time on one GPU group (`gpusize.serving.throughput.decode_step`):
    step = step_s + layer_s x layers
           + kernel_s x the kernels the layers launch beyond a dense attention layer's
             (`step_kernels.extra_kernels`: MoE routing and combine, shared experts, MLA, q/k norms,
             linear attention, FP8 activation quantization; counted from the engines' code)
           + moe_layer_s x MoE layers (these three x ROCM_KERNEL_FLOOR_FACTOR on AMD)
           + sequence_s x sequences (the host work: where the engine overlaps it with the GPU's step,
             vLLM's async scheduling from 0.14.0, the step is the longer of it and the rest)
           [+ expert_s x experts touched (summed over MoE layers): the model published until
              2026-12-03, `bench/calibrate_throughput.py --per-expert`; zero in the published
              constants: the measured steps barely follow the experts a step touches
              (bench/VALIDATION.md, "The layers' kernels in place of a cost per routed expert")]
           [+ expert_tuned_s / expert_block_s: tried, not adopted (bench/VALIDATION.md), zero]
           + max(bytes read / (bandwidth x bandwidth_efficiency), flops / (TFLOPS x prefill_mfu))
           + per MoE layer max(0, tile weights / 1e6 x moe_mweight_s / SMs - expert bytes / (bandwidth
              x bandwidth_efficiency)): the MoE kernel at the slower of its bytes over the bandwidth and
              its weight tiles over the SMs (x ROCM_KERNEL_FLOOR_FACTOR on AMD), in place of expert_s,
              for a kernel family with a fitted rate (`throughput.kernel_rate`: matmul_ogs, MXFP4
              experts; fused_moe's rate was tried and not adopted, bench/VALIDATION.md)
           + tensor-parallel all-reduces (ALLREDUCE_NVLINK_S each over NVLink, ALLREDUCE_HOP_S per
             ring step over PCIe, + bytes / link bandwidth)
Prefill: flops / (TFLOPS x prefill_mfu) + the all-reduces of the prompt's activations; time to first
token adds `request_s` (API server, tokenizer, scheduling) and one decode step.
"""

from __future__ import annotations

from dataclasses import field, replace

from gpusize.core.releases import Version, parse_version
from gpusize.dataclass import dataclass

__all__ = [
    "ALLREDUCE_HOP_S",
    "ALLREDUCE_NVLINK_S",
    "ALLREDUCE_PCIE_NCCL",
    "DEFAULT_HOST_GBPS",
    "ENGINE_SPEED",
    "HOST_EFFICIENCY",
    "LAYER_SPLIT_HOP_S",
    "MEMORY_CLASSES",
    "NCCL_PCI_RING_LL_HOP_S",
    "NCCL_RING_LL_BASE_S",
    "ROCM_FITTED_ON",
    "ROCM_KERNEL_FLOOR_FACTOR",
    "ROW_SPLIT_SYNC_S",
    "EngineSpeed",
    "backend_calibrated",
    "engine_speed",
    "speed_key",
]

#: Memory technologies as the catalog names them (prefix) -> the class a bandwidth efficiency is fitted
#: per: HBM2/HBM2e (A100, H100 PCIe), HBM3/HBM3e (H100 SXM, H200, B200, MI300X), GDDR, LPDDR (DGX Spark).
MEMORY_CLASSES = {"HBM2": "hbm2", "HBM3": "hbm3", "HBM": "hbm3", "GDDR": "gddr", "LPDDR": "lpddr"}


@dataclass(frozen=True)
class EngineSpeed:
    """How fast one engine turns memory bandwidth and FLOPS into tokens (all fitted, see module doc)."""

    engine: str
    #: Fraction of the spec memory bandwidth a decode step reaches, per memory class; a class without
    #: calibration data (LPDDR for every engine) gets the lowest the engine has: conservative.
    bandwidth_efficiency: dict[str, float] = field(default_factory=dict)
    #: Seconds per decode step: fixed, per decoder layer, per routed expert a step runs in one layer (a
    #: grouped-GEMM floor; the model published until 2026-12-03, zero since: `kernel_s` prices the MoE
    #: layers), per MoE layer, per sequence in the batch (scheduler, sampler, detokenizer).
    step_s: float = 0.0
    layer_s: float = 0.0
    expert_s: float = 0.0
    #: Seconds per routed expert run where the engine release ships a tuned fused-MoE Triton config
    #: for the layer's shape on the GPU (`moe_config.tuned_config`); `expert_s` is then the cost under
    #: the kernel's default tiles. Tried (`bench/calibrate_throughput.py --moe-config`), not adopted
    #: (bench/VALIDATION.md), so zero in the published constants: every expert run costs `expert_s`.
    expert_tuned_s: float = 0.0
    moe_layer_s: float = 0.0
    #: Seconds one SM spends per million weights its MoE kernel's thread blocks load (BLOCK_N x BLOCK_K
    #: tiles, once per M block: load, dequantize, a BLOCK_M-row MMA), per kernel family
    #: (`throughput.MOE_KERNELS`: "fused_moe", "matmul_ogs"; `throughput.moe_kernel`). A family with its
    #: own is costed by its tiles in place of `expert_s`; a family without pays `expert_s` a run.
    moe_mweight_s: dict[str, float] = field(default_factory=dict)
    #: Seconds per byte of the routed experts a step touches on one GPU, over their time at the
    #: bandwidth: the grouped GEMM reading expert weights at a lower rate than dense GEMMs at small M.
    #: Tried in place of `expert_s` (`bench/calibrate_throughput.py --expert-bytes`), not adopted
    #: (bench/VALIDATION.md), so zero in the published constants.
    expert_byte_s: float = 0.0
    #: Seconds per thread block of a routed expert's fused-MoE gate_up GEMM on one GPU, beside
    #: `expert_s` (`throughput.expert_column_blocks`: ceil(2 x intermediate / tp / BLOCK_N), the part
    #: of an expert run that shrinks with tensor parallelism down to one block). Tried
    #: (`bench/calibrate_throughput.py --expert-blocks`), not adopted (bench/VALIDATION.md), so zero in
    #: the published constants.
    expert_block_s: float = 0.0
    #: Seconds per weight of a routed expert run, the whole expert (all TP ranks: gate, up and down,
    #: `core.params.routed_expert_params`), beside `expert_s`: a per-expert cost that grows with the expert's
    #: size and not with its slice on one GPU (the measured Qwen3-Next steps are TP-independent).
    #: Tried (`bench/calibrate_throughput.py --expert-size`), not adopted (bench/VALIDATION.md), so
    #: zero in the published constants.
    expert_weight_s: float = 0.0
    #: Seconds per kernel a decode step's layers launch beyond a dense attention layer's
    #: (`step_kernels.extra_kernels`: MoE routing and combine, shared experts, MLA's projections and
    #: norms, linear attention's recurrences, activation quantization of FP8 GEMMs): small kernels of
    #: a few rows each, latency-bound under CUDA graphs whatever their bytes. In place of `expert_s`
    #: since 2026-12-03 (bench/VALIDATION.md, "The layers' kernels in place of a cost per routed
    #: expert"); `bench/calibrate_throughput.py --per-expert` refits the model published before.
    kernel_s: float = 0.0
    sequence_s: float = 0.0
    #: Fractions of the dense tensor peak reached by the matmuls of prefill (and of a compute-bound
    #: batched decode step: the same kernels) and by prefill attention (QK^T, PV).
    prefill_mfu: float = 0.5
    #: The same fraction on a GPU architecture family (`throughput.architecture_family`: "Hopper")
    #: where the engine's records show it apart; a family not listed takes `prefill_mfu`. A GPU of a
    #: higher peak reaches less of it: at one MFU, vLLM 0.10-0.11's prefill-bound dense bursts are
    #: estimated 10-30% too slow on A100 and 26-38% too fast on H100 (bench/VALIDATION.md, 2026-12-04).
    prefill_mfu_by_family: dict[str, float] = field(default_factory=dict)
    #: The newest release (major.minor) the family MFUs hold for: the newest their records ran. A later
    #: release takes `prefill_mfu`: vLLM 0.19.1's 20k-token prompts on an H100 (the vLLM blog, held
    #: out) are within 8-11% of it and 1.65-1.8x faster than Hopper's 0.10-0.11 MFU allows, and no
    #: record between the two releases says where it changed (bench/VALIDATION.md, 2026-12-04).
    #: None: every release.
    family_mfu_through: str | None = None
    attention_mfu: float | None = None  # None: as prefill_mfu (FlashAttention-class kernels)
    #: The fraction of the dense matmuls' MFU the routed experts' grouped GEMMs reach (prefill, and a
    #: compute-bound decode step): each expert runs its share of the tokens (tokens x top-k / experts
    #: rows), routed, permuted and combined around it (`throughput.matmul_seconds`). 1: as dense.
    expert_mfu_ratio: float = 1.0
    #: Highest dense TFLOPS the engine's prefill kernels reach on any GPU (None: no ceiling).
    prefill_tflops_ceiling: float | None = None
    #: Seconds a request pays before its prefill (API server, tokenizer, scheduling): part of TTFT.
    request_s: float = 0.0
    #: What the constants were fitted on, for the assumptions line.
    fitted_on: str = ""
    #: The engine build these constants were fitted on where it has several (llama.cpp's "metal",
    #: "vulkan", "rocm": ENGINE_SPEED["llamacpp/metal"], ...); None: the engine's own fit (CUDA on NVIDIA
    #: GPUs, with `ROCM_KERNEL_FLOOR_FACTOR` for AMD).
    build: str | None = None

    def efficiency(self, memory_class: str) -> float:
        eff = self.bandwidth_efficiency
        return eff.get(memory_class) or min(eff.values())

    def prefill_mfu_on(self, family: str, release: Version | None = None) -> float:
        """The fraction of the dense peak prefill's matmuls reach on a GPU of this architecture family,
        under `release` (None: any)."""
        through = parse_version(self.family_mfu_through) if self.family_mfu_through else None
        if through is not None and release is not None and release.parts[:2] > through.parts[:2]:
            return self.prefill_mfu
        return self.prefill_mfu_by_family.get(family, self.prefill_mfu)

    def calibrated_for(self, memory_class: str) -> bool:
        return memory_class in self.bandwidth_efficiency

    def mweight_s(self, kernel: str) -> float:
        """Seconds per million weights per SM of one MoE kernel family (0: no kernel term, the family's
        experts pay `expert_s` a run instead)."""
        return self.moe_mweight_s.get(kernel, 0.0)


_VLLM = EngineSpeed(
    "vllm",
    {"hbm3": 0.923, "hbm2": 0.676},
    step_s=0.000828,
    layer_s=1.8e-05,
    expert_s=0.0,
    moe_layer_s=3.34e-06,
    kernel_s=8.72e-06,
    # MXFP4 experts (gpt-oss) run triton_kernels' matmul_ogs, priced by its weight tiles over the SMs
    # (`throughput.kernel_rate`; on AMD times ROCM_KERNEL_FLOOR_FACTOR); fused_moe experts are read at
    # the bandwidth, and every MoE layer pays its extra kernels (`kernel_s`)
    moe_mweight_s={"matmul_ogs": 2.14e-05},
    sequence_s=8.09e-05,
    prefill_mfu=0.515,
    prefill_mfu_by_family={"Hopper": 0.345},
    family_mfu_through="0.11",
    expert_mfu_ratio=0.536,
    request_s=0.0439,
    fitted_on="vLLM 0.10-0.11 (gpustack performance lab incl. its fixed-length bursts, dennislee22 "
    "sweeps) and Oct 2023 (mlc-ai/llm-perf-bench) on A100 and H100/H200: 15 decode, 69 load and 62 "
    "first-token figures",
)

_LLAMACPP = EngineSpeed(
    "llamacpp",
    {"gddr": 0.926, "hbm2": 0.507},
    step_s=0.00104,
    layer_s=5.84e-05,
    expert_s=0.0,  # no all-GPU llama.cpp MoE record to fit it on
    prefill_mfu=0.663,
    attention_mfu=0.124,
    prefill_tflops_ceiling=120.0,
    fitted_on="llama.cpp May 2024 (XiongjieDai/GPU-Benchmarks-on-LLM-Inference) and Oct 2023 "
    "(mlc-ai/llm-perf-bench) on GeForce, RTX Ada and A100: 17 decode and 4 prompt figures",
)


def _llamacpp_build(
    build: str,
    efficiency: dict[str, float],
    step_s: float,
    layer_s: float,
    fitted_on: str,
    prefill_mfu: float | None = None,
) -> EngineSpeed:
    """One of llama.cpp's other builds (`core.engines.llamacpp.backend`): its own bandwidth efficiency
    per memory class it was measured on and per-token floors, fitted on its own records
    (bench/calibrate_throughput.py, `Record.domain`), and its prompt MFU where one fits its records
    (Metal); else the CUDA build's prompt constants."""
    return replace(
        _LLAMACPP,
        build=build,
        bandwidth_efficiency=efficiency,
        step_s=step_s,
        layer_s=layer_s,
        prefill_mfu=_LLAMACPP.prefill_mfu if prefill_mfu is None else prefill_mfu,
        fitted_on=fitted_on,
    )


ENGINE_SPEED: dict[str, EngineSpeed] = {
    "vllm": _VLLM,
    # SGLang runs the same kernel families (FlashInfer / Triton / CUTLASS) under CUDA graphs: vLLM's
    # kernel constants, its own per-step and per-request costs (gpustack Qwen3-8B runs).
    "sglang": replace(
        _VLLM,
        engine="sglang",
        step_s=0.000317,
        request_s=0.0216,
        # vLLM's Hopper and routed-expert prefill shares are its own releases' kernels: not inherited
        # (bench/calibrate_throughput.py OWN)
        prefill_mfu_by_family={},
        expert_mfu_ratio=1.0,
        fitted_on="SGLang 0.5.3 (gpustack performance lab, H100): step and request costs over vLLM's "
        "kernel constants",
    ),
    "llamacpp": _LLAMACPP,
    # llama.cpp's other builds, each fitted on its own records (`_llamacpp_build`)
    "llamacpp/metal": _llamacpp_build(
        "metal",
        {"lpddr": 0.867},
        0.000676,
        0.000168,
        "llama.cpp Metal, Aug 2023 and May 2024 (llama.cpp PR #2917, XiongjieDai/GPU-Benchmarks-on-LLM-"
        "Inference) on M1 Max, M2 Ultra and M3 Max: 10 decode and 11 prompt figures",
        prefill_mfu=0.633,
    ),
    "llamacpp/vulkan": _llamacpp_build(
        "vulkan",
        {"gddr": 0.957, "lpddr": 0.805},
        0.00205,
        1.2e-05,
        "llama.cpp Vulkan, 2026 (llama.cpp PR #21024 on an RTX 3090, kyuz0/amd-strix-halo-toolboxes RADV "
        "on Strix Halo): 10 decode figures",
    ),
    "llamacpp/rocm": _llamacpp_build(
        "rocm",
        {"lpddr": 0.829},
        0.000577,
        0.000128,
        "llama.cpp ROCm 7.2.3, 2026 (kyuz0/amd-strix-halo-toolboxes on Strix Halo): 8 decode figures",
    ),
    # PyTorch eager (Transformers generate): vLLM's kernels, a per-layer cost of eager launches.
    "transformers": replace(
        _VLLM,
        engine="transformers",
        layer_s=7.87e-05,
        sequence_s=0.0,
        request_s=0.0,
        fitted_on="one record: the llm-awq PyTorch runtime (LMDeploy docs, RTX 4090), per-layer cost over "
        "vLLM's kernel constants",
    ),
}

#: Latency of one all-reduce of a decode step's activations over NVLink / NVSwitch (and AMD Infinity
#: Fabric): vLLM's and SGLang's one-shot custom all-reduce, whatever the GPU count (fitted at 10 us:
#: vLLM PR 39080's kernel table puts a one-shot all-reduce at 6-7 us on 8 MI355X GPUs).
ALLREDUCE_NVLINK_S = 1e-05
#: Kernel floors on AMD GPUs (ROCm): the per-layer, per-MoE-layer and per-extra-kernel floors
#: (`layer_s`, `moe_layer_s`, `kernel_s`), fitted on NVIDIA under CUDA graphs, are this many times
#: longer under ROCm's HIP graphs, whose dispatch of each captured kernel costs more
#: (ROCm/rocm-systems issue 10834: HIP graph replay 3-10x Vulkan's cost per dispatch, on RDNA 3). A
#: per-routed-expert cost (the tried models) is not scaled (the experts run inside one fused kernel
#: launch); the MXFP4 kernel's tile time is (`throughput._moe_kernel_s`: a rate fitted on NVIDIA GPUs).
#: Fitted on the AMD calibration records alone: ROCm vLLM on MI300X (ROCm/vllm docs/dev-docker,
#: Llama-3.1-70B/405B FP8 TP=8; InferenceX PR #1092, gpt-oss-120b TP=8); the NVIDIA floors left every
#: AMD single-stream figure 29-44% too fast. 2.13 while a MoE step paid a cost per routed expert; 1.15
#: since the layers' kernels are priced, the FP8 Llama records' activation-quantization kernels
#: carrying the rest (bench/VALIDATION.md).
ROCM_KERNEL_FLOOR_FACTOR = 1.2
#: The GPUs of the AMD calibration records that fit ROCM_KERNEL_FLOOR_FACTOR (catalog names;
#: tests/serving/test_throughput_conformance.py holds it to the records).
ROCM_FITTED_ON = ("MI300X",)
#: Over PCIe the all-reduce is a ring of 2 x (tp - 1) steps; latency of one step, with peer-to-peer
#: ("pcie": Oct 2023 vLLM on A100 PCIe, mlc-ai/llm-perf-bench) and through host memory ("pcie-host":
#: GeForce cards, whose peer-to-peer NVIDIA disables; fitted on dennislee22's TP=2 runs, two
#: single-GPU pods joined by Ray, which cannot reach each other's memory).
ALLREDUCE_HOP_S = {"pcie": 2.44e-05, "pcie-host": 1.74e-05}
#: NCCL's own latency model of a single-server ring all-reduce in its LL protocol (the one it picks
#: for a decode step's few-KiB messages; LL128 is off over PCIe): baseLat[Ring][LL] + 2 (tp - 1) x
#: hwLat[PCI][Ring][LL] (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel, commit b6475625: 6.6 us
#: and 1.0 us). Tried in place of the fitted `ALLREDUCE_HOP_S["pcie"]` ring (peer-to-peer PCIe only),
#: `python bench/calibrate_throughput.py --nccl-pcie`; not adopted (bench/VALIDATION.md), so off.
NCCL_RING_LL_BASE_S = 6.6e-06
NCCL_PCI_RING_LL_HOP_S = 1.0e-06
ALLREDUCE_PCIE_NCCL = False
#: llama.cpp `-sm layer`: seconds added per token for each GPU boundary a token crosses.
LAYER_SPLIT_HOP_S = 7.99e-05
#: llama.cpp `-sm row`: seconds per layer and per GPU to gather the row-split matmuls on the main GPU.
ROW_SPLIT_SYNC_S = 0.00013
#: Host memory for llama.cpp layers left on the CPU (--n-gpu-layers): peak GB/s assumed when the user
#: gives none (dual-channel DDR5-5600: 2 x 64 bit x 5600 MT/s = 89.6 GB/s), and the fraction of it a
#: CPU decode step reaches (fitted on llmfit PR #755: Qwen3-30B-A3B experts on a quad-channel DDR4
#: host measured at ~102 GB/s).
DEFAULT_HOST_GBPS = 89.6
HOST_EFFICIENCY = 0.394


def speed_key(name: str, backend: str | None = None) -> str:
    """The ENGINE_SPEED entry of an engine run on a backend: "llamacpp/metal" for llama.cpp's own
    fitted constants of a non-CUDA build, else the engine's (llama.cpp's are CUDA's)."""
    return f"{name}/{backend}" if backend and backend != "cuda" else name


def backend_calibrated(name: str, backend: str | None) -> bool:
    """Whether this engine's build has constants of its own (False: it borrows the engine's CUDA ones)."""
    return speed_key(name, backend) in ENGINE_SPEED


def engine_speed(name: str, backend: str | None = None) -> EngineSpeed:
    """The fitted constants of an engine (llama.cpp: of its `backend` build where they are fitted, else
    of its CUDA build)."""
    return ENGINE_SPEED.get(speed_key(name, backend)) or ENGINE_SPEED.get(name, ENGINE_SPEED["vllm"])
