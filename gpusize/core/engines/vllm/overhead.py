"""The non-KV terms inside vLLM's budget: the activation peak of the profile run, non-torch memory and
the CUDA-graph estimate; the constants no source fixes are fitted by bench/calibrate_vllm.py."""

from __future__ import annotations

import bisect

from gpusize.core import runtime
from gpusize.core.engines.vllm.behaviour import Behaviour
from gpusize.core.engines.vllm.scheduler import SchedulerLimits
from gpusize.core.gpu import GpuSpec
from gpusize.core.spec import ModelSpec
from gpusize.units import GIB

__all__ = [
    "CAPTURE_SIZES",
    "CUDA_GRAPH_PER_CAPTURE",
    "CUDA_GRAPH_PER_CAPTURE_LAYER",
    "CUDA_GRAPH_PER_CAPTURE_TPN",
    "CUDA_GRAPH_POOL",
    "FLASHINFER_SAMPLER_COPIES",
    "HIDDEN_STATE_COPIES",
    "NCCL_INIT_TPN",
    "NON_TORCH_PP",
    "NON_TORCH_TP1",
    "NON_TORCH_TPN",
    "NON_TORCH_TPN_0_11",
    "SAMPLER_LOGITS_COPIES",
    "SORT_SAMPLER_EXTRA_COPIES",
    "V0_FORWARD_HIDDEN_COPIES",
    "V0_FORWARD_MLP_COPIES",
    "V1_0_7_LOGITS_BYTES",
    "activation_bytes",
    "capture_sizes",
    "cuda_graph_estimate_bytes",
    "non_torch_bytes",
    "nvls",
]


#: Profile-run peak (vLLM's 'torch peak increase') from 0.17.0, when top-k/top-p run as Triton kernels:
#: SAMPLER_LOGITS_COPIES fp32 copies of the dummy sampler's logits (min(max_num_seqs,
#: max_num_batched_tokens) rows x vocab, all-gathered on every rank) + HIDDEN_STATE_COPIES bf16 copies
#: of the dummy batch's hidden states (max_num_batched_tokens x hidden). Least-squares fit over the 16
#: non-PP vLLM 0.19 H100 records of tests/data/reference/engine-logs.yaml (bench/calibrate_vllm.py).
SAMPLER_LOGITS_COPIES = 3.76
HIDDEN_STATE_COPIES = 0.90
#: Before 0.17.0 top-k/top-p sorted the whole [rows, vocab] logits in PyTorch (fp32 values, int64
#: indices, a softmax and cumsum on the sorted copy, an out-of-place scatter): extra fp32 copies of the
#: sampler logits held at the peak. Fitted by bench/calibrate_vllm.py on the 0.10-0.16 start-up logs of
#: tests/data/engine_records.yaml (weights, available KV and GPU total logged; non-torch as below).
SORT_SAMPLER_EXTRA_COPIES = 5.0
#: With the FlashInfer sampler (the default up to 0.11.0 where FlashInfer is installed, opt-in after):
#: fp32 copies of the sampler logits at the peak, in place of the PyTorch or Triton path's. Fitted by
#: bench/calibrate_vllm.py on the 0.10.1 logs of a vllm-openai image deployment (FlashInfer inside).
FLASHINFER_SAMPLER_COPIES = 2.1

#: Memory outside PyTorch that grows during the profile run (vLLM 'non-torch forward increase'):
#: 0.24-0.27 GiB at TP=1 (mean 0.25; vLLM 0.19 H100 records llmd-v019-*), the same at TP>=2 over PCIe
#: (0.23 GiB on 2x T4 at 0.22).
NON_TORCH_TP1 = int(0.25 * GIB)
#: At TP>=2 on an NVSwitch Hopper/Blackwell server (NVLink SHARP and symmetric-memory all-reduce
#: buffers): 2.07-2.17 GiB per GPU in the 0.19 H100 logs (mean 2.10). The 0.11-0.16 logs show far
#: less (0.39 GiB at TP=2 on H100 in 0.12, zzsf records); 0.17-0.18 have no TP>=2 record and are
#: modelled as 0.19 (the larger, so the safer for a verdict).
NON_TORCH_TPN = int(2.10 * GIB)
NON_TORCH_TPN_0_11 = int(0.39 * GIB)
#: Pipeline-parallel non-torch increase per GPU (llmd-v019-04: 0.07 GiB at PP=2).
NON_TORCH_PP = int(0.07 * GIB)
#: Up to 0.10.2 the start-up snapshot came before distributed init, so what distributed init allocates
#: counted inside the budget: on an NVSwitch Hopper server NCCL's NVLink SHARP buffers, fitted by
#: bench/calibrate_vllm.py on the 0.10.0 TP=8 H100 logs; elsewhere the small NCCL share
#: (runtime.NCCL_PEER_TPN; 0.10.1 TP=2 A100 logs leave 0.12-0.14 GiB for it).
NCCL_INIT_TPN = int(2.36 * GIB)
#: CUDA-graph estimate (vLLM's "CUDA graph pool memory: ... (estimated)", subtracted from the budget
#: from 0.20): the estimator measures the first captures and extrapolates per graph, so it grows with
#: the number of capture sizes (1, 2, 4, then every 8 up to 256, every 16 up to 512, up to
#: max_num_seqs; the 0.18 max_num_seqs sweep scales that way) and, per graph, with the decoder layers
#: whose buffers the graph pool holds. Least-squares fit (bench/calibrate_vllm.py) over the estimates the
#: 0.19 logs print: bytes per capture = CUDA_GRAPH_PER_CAPTURE + CUDA_GRAPH_PER_CAPTURE_LAYER x layers
#: (+ CUDA_GRAPH_PER_CAPTURE_TPN at TP>=2). Mean error 0.16 GiB: the estimate is itself noisy.
CUDA_GRAPH_PER_CAPTURE = int(0.0078 * GIB)
CUDA_GRAPH_PER_CAPTURE_LAYER = int(0.00026 * GIB)
CUDA_GRAPH_PER_CAPTURE_TPN = int(0.0045 * GIB)
#: The largest CUDA-graph pool seen in the 0.19 H100 logs (1.84 GiB): what a release that captures
#: graphs outside the budget must find free there.
CUDA_GRAPH_POOL = int(1.84 * GIB)


def activation_bytes(
    spec: ModelSpec,
    limits: SchedulerLimits,
    tp: int = 1,
    fused_moe: bool = True,
    beh: Behaviour | None = None,
    expert_parallel: bool = False,
    flashinfer_sampler: bool = False,
) -> int:
    """Estimate of the activation peak on one GPU (vLLM's 'torch peak increase').

    sampler: copies x rows x vocab x 4 B (logits cast to fp32, top-k/top-p over them; before 0.17 the
    sort path holds SORT_SAMPLER_EXTRA_COPIES more; V1 0.7.x: the 16-bit logits of every dummy token,
    no sampler; V0: `_v0_activation_bytes`); hidden: copies x tokens x hidden x 2 B; fused MoE
    workspace (vLLM fused_moe caches): tokens x top_k x (3 x expert width / tp + hidden) x 2 B (with
    expert parallelism a rank runs 1/tp of the routed tokens at full width); Kimi-K3's attention residuals:
    tokens x cdiv(layers, attn_res_block_size) x hidden x 2 B (vllm/models/kimi_k3/nvidia/model.py
    `KimiLinearModel.forward`, the same in the 0.27.0-0.33.0 wheels: `block_residual =
    hidden_states.new_empty(tokens, num_attn_res_blocks, hidden)`). A vision encoder's profile is the reserve
    `multimodal.encoder_profile`."""
    tokens = limits.max_num_batched_tokens
    rows = min(limits.max_num_seqs, tokens)
    if beh is not None and not beh.v1:
        return _v0_activation_bytes(spec, limits, tp, flashinfer_sampler)
    if flashinfer_sampler and beh and beh.sort_sampler:
        copies = FLASHINFER_SAMPLER_COPIES
    else:
        copies = SAMPLER_LOGITS_COPIES + (SORT_SAMPLER_EXTRA_COPIES if beh and beh.sort_sampler else 0)
    sampler = copies * rows * spec.vocab_size * 4
    if beh is not None and beh.logits_every_token:
        sampler = tokens * spec.vocab_size * V1_0_7_LOGITS_BYTES
    hidden = HIDDEN_STATE_COPIES * tokens * spec.hidden_size * 2
    if spec.attn_res_block_size:  # Kimi-K3's block stack lives through the whole forward
        hidden += tokens * -(-spec.num_hidden_layers // spec.attn_res_block_size) * spec.hidden_size * 2
    moe = 0.0
    if spec.moe and fused_moe:
        m = spec.moe
        width = m.moe_intermediate_size / tp
        moe = tokens * m.num_experts_per_tok * (3 * width + spec.hidden_size) * 2
        if expert_parallel:  # 1/tp of the routed tokens at full width: the same product
            moe = tokens * m.num_experts_per_tok / tp * (3 * m.moe_intermediate_size + spec.hidden_size) * 2
    return int(sampler + hidden + moe)


#: V0's profile run (worker/model_runner.py profile_run) is one eager forward pass over
#: max_num_batched_tokens dummy tokens (no torch.compile, no chunking below 32K of context), then the
#: driver rank samples max_num_seqs rows: the peak is the larger of the two, not their sum. The
#: forward's peak per token: V0_FORWARD_MLP_COPIES 16-bit values of the MLP width / TP (gate_up output
#: and the activation's) + V0_FORWARD_HIDDEN_COPIES of the hidden size; fitted on vllm-10517-a/-b
#: (Llama-3.1-8B on an RTX 3090 at 20,000 and 29,000 tokens: 2.07 and 2.99 GiB above the weights,
#: tests/data/reference/engine-logs.yaml). The sampler (sampler.py _apply_top_k_top_p: fp32 logits, a
#: sort with int64 indices, softmax, cumsum, scatter) is the same PyTorch sort path as V1's before 0.17:
#: SAMPLER_LOGITS_COPIES + SORT_SAMPLER_EXTRA_COPIES fp32 copies (vllm-15815, Qwen2.5-32B on L40S TP=2,
#: logs the same 1.26 GiB peak on the driver and the other rank: the sampler's 1.27 GiB is not above it).
V0_FORWARD_MLP_COPIES = 3
V0_FORWARD_HIDDEN_COPIES = 3
#: V1 0.7.x profile_run: `logits = self.model.compute_logits(hidden_states, None)` over all
#: max_num_batched_tokens dummy tokens, in the model's 16-bit dtype, and no sampler ("TODO(woosuk):
#: Consider the memory usage of the sampler"). From the source only: no public 0.7 V1 log checks it.
V1_0_7_LOGITS_BYTES = 2


def _v0_activation_bytes(spec: ModelSpec, limits: SchedulerLimits, tp: int, flashinfer: bool) -> int:
    """The V0 profile peak: max(forward, sampler) (see V0_FORWARD_MLP_COPIES); a MoE layer's MLP width
    is top_k x the expert width (the fused-MoE intermediate of the routed tokens)."""
    tokens = limits.max_num_batched_tokens
    width = (
        spec.moe.moe_intermediate_size * spec.moe.num_experts_per_tok if spec.moe else spec.intermediate_size
    )
    forward = tokens * (V0_FORWARD_MLP_COPIES * width / tp + V0_FORWARD_HIDDEN_COPIES * spec.hidden_size) * 2
    copies = FLASHINFER_SAMPLER_COPIES if flashinfer else SAMPLER_LOGITS_COPIES + SORT_SAMPLER_EXTRA_COPIES
    sampler = copies * min(limits.max_num_seqs, tokens) * spec.vocab_size * 4
    return int(max(forward, sampler))


#: vLLM's default CUDA-graph capture sizes (vllm/config/compilation.py), ascending.
CAPTURE_SIZES = (1, 2, 4, *range(8, 257, 8), *range(272, 513, 16))


def capture_sizes(max_num_seqs: int) -> int:
    """How many batch sizes vLLM captures as CUDA graphs: 1, 2, 4, every 8 up to 256, every 16 up to
    512 (vllm/config/compilation.py default capture sizes), those <= min(max_num_seqs, 512)."""
    return bisect.bisect_right(CAPTURE_SIZES, min(max_num_seqs, 512))


def cuda_graph_estimate_bytes(spec: ModelSpec, limits: SchedulerLimits, tp: int) -> int:
    """The release's CUDA-graph memory estimate (see CUDA_GRAPH_PER_CAPTURE)."""
    per = CUDA_GRAPH_PER_CAPTURE + CUDA_GRAPH_PER_CAPTURE_LAYER * spec.num_hidden_layers
    per += CUDA_GRAPH_PER_CAPTURE_TPN if tp > 1 else 0
    return per * capture_sizes(limits.max_num_seqs)


def nvls(gpu: GpuSpec) -> bool:
    """An NVSwitch Hopper/Blackwell server, where NCCL and vLLM set up NVLink SHARP buffers."""
    return gpu.interconnect == "nvswitch" and gpu.architecture.startswith(("Hopper", "Blackwell"))


def non_torch_bytes(gpu: GpuSpec, tp: int, beh: Behaviour) -> int:
    """Non-torch memory inside the budget: the profile's increase, plus (0.10.x) distributed init."""
    if tp == 1:
        return NON_TORCH_TP1
    if not nvls(gpu):
        return NON_TORCH_TP1 + (runtime.NCCL_PEER_TPN if beh.nccl_init_in_budget else 0)
    if beh.nccl_init_in_budget:
        return NON_TORCH_TPN_0_11 + NCCL_INIT_TPN
    return NON_TORCH_TPN if beh.nvls_in_profile else NON_TORCH_TPN_0_11
