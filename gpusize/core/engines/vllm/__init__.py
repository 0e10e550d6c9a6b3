"""vLLM's memory model (pure), release by release over `core.releases.VLLM` (shown as `VLLM.span`).

Per GPU, the budget (gpu_memory_utilization x CUDA-visible total) must hold weights + activation peak
+ non-torch memory (+ the CUDA-graph estimate from 0.20.0) + the KV blocks the requests need; the CUDA
context and whatever else the release keeps outside the budget must fit in the rest of the device.
The KV pool is what the budget leaves after the non-KV terms
(vllm/v1/worker/gpu_worker.py determine_available_memory; the V0 engine of 0.7.0-0.10.2,
VLLM_USE_V1=0, vllm/worker/worker.py determine_num_available_blocks). What changes between releases is read
from each release's source (`Behaviour`, with the release ranges in `behaviour`); the few constants
no source fixes are fitted to public start-up logs by bench/calibrate_vllm.py, and those logs stay
as conformance tests (tests/core/test_conformance.py, tests/core/test_vllm_releases.py).

One module per concern: `behaviour` (the release table), `scheduler` (batch limits), `overhead`
(activation peak, non-torch memory, CUDA graphs), `pool` (one instance's KV pool and verdict) and
`pipeline` (TP x PP, multi-node), `levers` (what a fix suggestion may change); this package
assembles them into `ENGINE`.
"""

from __future__ import annotations

from gpusize.core import kvcache
from gpusize.core.engines.base import AcrossServers, EngineModel
from gpusize.core.engines.vllm.async_scheduling import overlaps_host_work
from gpusize.core.engines.vllm.behaviour import (
    Behaviour,
    behaviour,
    behaviour_of,
    context_refusal,
    engine_refusal,
    quantization_refusal,
    utilization,
)
from gpusize.core.engines.vllm.data_parallel import (
    attention_dp,
    dp_size,
    host_sequences,
    launch_tp,
    rank_tp,
    with_data_parallel,
)
from gpusize.core.engines.vllm.families import kv_default
from gpusize.core.engines.vllm.hybrid import state_blocks, with_state_pages
from gpusize.core.engines.vllm.levers import LEVERS
from gpusize.core.engines.vllm.lora import lora_note
from gpusize.core.engines.vllm.overhead import (
    CAPTURE_SIZES,
    CUDA_GRAPH_PER_CAPTURE,
    CUDA_GRAPH_PER_CAPTURE_LAYER,
    CUDA_GRAPH_PER_CAPTURE_TPN,
    CUDA_GRAPH_POOL,
    FLASHINFER_SAMPLER_COPIES,
    HIDDEN_STATE_COPIES,
    NCCL_INIT_TPN,
    NON_TORCH_PP,
    NON_TORCH_TP1,
    NON_TORCH_TPN,
    NON_TORCH_TPN_0_11,
    SAMPLER_LOGITS_COPIES,
    SORT_SAMPLER_EXTRA_COPIES,
    V0_FORWARD_HIDDEN_COPIES,
    V0_FORWARD_MLP_COPIES,
    activation_bytes,
    capture_sizes,
    cuda_graph_estimate_bytes,
    non_torch_bytes,
    nvls,
)
from gpusize.core.engines.vllm.pipeline import evaluate_nodes, evaluate_pipeline
from gpusize.core.engines.vllm.pool import (
    OFFLOAD_NOTE,
    THIN_MARGIN,
    evaluate,
    headroom_warning,
    offloaded_bytes,
    thin_margin_warning,
)
from gpusize.core.engines.vllm.scheduler import (
    HUGE_GPU_BYTES,
    LARGE_GPU_BYTES,
    SchedulerLimits,
    scheduler_limits,
    scheduler_note,
)
from gpusize.core.engines.vllm.speculative import draft_kv_bytes_per_token
from gpusize.core.gpu import GpuSpec
from gpusize.core.kinds import mixer_kind
from gpusize.core.kinds.mla_indexer import indexer_key_bytes, latent_bytes
from gpusize.core.releases import VLLM, parse_version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = [
    "CAPTURE_SIZES",
    "CUDA_GRAPH_PER_CAPTURE",
    "CUDA_GRAPH_PER_CAPTURE_LAYER",
    "CUDA_GRAPH_PER_CAPTURE_TPN",
    "CUDA_GRAPH_POOL",
    "ENGINE",
    "FLASHINFER_SAMPLER_COPIES",
    "HIDDEN_STATE_COPIES",
    "HUGE_GPU_BYTES",
    "LEVERS",
    "LARGE_GPU_BYTES",
    "NCCL_INIT_TPN",
    "NON_TORCH_PP",
    "NON_TORCH_TP1",
    "NON_TORCH_TPN",
    "NON_TORCH_TPN_0_11",
    "SAMPLER_LOGITS_COPIES",
    "SORT_SAMPLER_EXTRA_COPIES",
    "THIN_MARGIN",
    "V0_FORWARD_HIDDEN_COPIES",
    "V0_FORWARD_MLP_COPIES",
    "Behaviour",
    "SchedulerLimits",
    "activation_bytes",
    "behaviour",
    "behaviour_of",
    "context_refusal",
    "engine_refusal",
    "capture_sizes",
    "cuda_graph_estimate_bytes",
    "evaluate",
    "evaluate_nodes",
    "evaluate_pipeline",
    "effective_settings",
    "headroom_warning",
    "thin_margin_warning",
    "nvls",
    "non_torch_bytes",
    "scheduler_limits",
    "scheduler_note",
    "utilization",
]


def effective_settings(
    spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload
) -> dict[str, float | int | str]:
    beh = behaviour_of(work, spec)
    limits = scheduler_limits(gpu, work, beh, spec)
    graphs = (
        "off (--enforce-eager)"
        if work.engine.enforce_eager
        else ("inside the budget" if beh.graphs_in_budget else "outside the budget")
    )
    out: dict[str, float | int | str] = {
        "gpu_memory_utilization": utilization(work),
        "max_num_seqs": limits.max_num_seqs,
        "max_num_batched_tokens": limits.max_num_batched_tokens,
        "block_size": _block_size(spec, tp, work, beh),
        "cuda_graphs": graphs,
    }
    if not _at_least_0_11(work):  # a release with both engines says which one runs
        out["engine"] = "V1 (VLLM_USE_V1=1)" if beh.v1 else "V0 (VLLM_USE_V1=0)"
    if work.engine.enable_expert_parallel:
        out["enable_expert_parallel"] = "on"
    dp = dp_size(work)
    if dp > 1:  # the plan's tp is the server's GPUs: vLLM's own split, per rank
        out["data_parallel_size"] = dp
        out["tensor_parallel_size"] = rank_tp(tp, dp)
        out["kv_cache"] = f"one pool per rank ({dp}), the busiest holding ceil(batch / {dp}) requests"
    if work.engine.flashinfer_sampler:
        out["sampler"] = "FlashInfer"
    if beh.extensible_kv:
        out["kv_cache"] = EXTENSIBLE_NOTE
    return out


def launch_utilization(work: Workload) -> float | None:
    """The --gpu-memory-utilization the launch command passes: the one sized with, except 0.34.0's
    default with the extensible KV cache, left to vLLM (None): where the driver lacks virtual memory
    management it falls back to estimate-based sizing at 0.92 (vllm/config/cache.py
    resolved_gpu_memory_utilization), where a 1.0 on the command line would hold the whole device."""
    if work.engine.gpu_memory_utilization is None and behaviour_of(work).extensible_kv:
        return None
    return utilization(work)


#: How 0.34.0's extensible KV cache is sized (`extensible.py`), in the settings an answer states: the
#: release is modelled from its source, no published start-up log of it checks the figure yet.
EXTENSIBLE_NOTE = (
    "extensible (sized after warmup from the memory the device leaves, less max(1 GiB, 0.75 x the "
    "transient peak) and the peak itself, the activations and the CUDA-graph estimate; modelled from "
    "vLLM 0.34.0's source, not yet checked on a start-up log)"
)


#: How vLLM keeps a hybrid's recurrent state (core/engines/vllm/hybrid.py), in the model notes.
HYBRID_NOTE = (
    "recurrent layers keep their state in the KV pool: vLLM raises the attention block size until one "
    "block's page holds one layer's state, pads the state page to it and gives each running request "
    "{blocks} per state layer (the conv state in the model dtype, the recurrent state in the dtype the "
    "model fixes); {prefix}"
)
#: HYBRID_NOTE's last clause, up to 0.27.1 and from hybrid.ALIGN_MODE_SINCE.
HYBRID_PREFIX_OFF = "prefix caching stays off for hybrids by default"
HYBRID_PREFIX_ALIGN = (
    "prefix caching is on for hybrids by default (mamba_cache_mode align: a request keeps its running "
    "state and the last block-aligned one)"
)


#: Kimi-K3 (attention residuals, latent MoE, gated MLA and KDA): sized from vLLM's vllm/models/kimi_k3
#: (nvidia/model.py, mla.py, kda.py, kda_metadata.py, common/*, and transformers_utils/configs/
#: kimi_k3.py), read in every release from 0.27.0 (the first that registers
#: KimiK3ForConditionalGeneration, family_support) to 0.33.0; the figures per release and what
#: changed between them: tests/core/test_kimi_k3_releases.py.
KIMI_K3_NOTE = (
    "Kimi-K3: sized as vLLM {version}'s vllm/models/kimi_k3 allocates it (the MLA latent per token, the "
    "KDA state per sequence, the attention-residual block stack in the activations); vLLM serves it from "
    "0.27.0"
)


def _block_size(spec: ModelSpec, tp: int, work: Workload, beh: Behaviour) -> int:
    """The attention block size vLLM runs with: the release's default (16; 64 from 0.34.0), 64 for MLA, raised
    for a hybrid (hybrid.py)."""
    layout = kvcache.kv_layout(spec, work.kv_bytes, tp, beh.hybrid_group_ratio, beh.default_block_size)
    layout = with_state_pages(spec, layout, work, tp, beh.hybrid_group_ratio)
    if layout is None:
        return kvcache.block_size(spec, beh.default_block_size)
    return layout.block_size


def _at_least_0_11(work: Workload) -> bool:
    first_without_v0 = parse_version("0.11.0")
    assert first_without_v0 is not None
    return work.release.version >= first_without_v0


def model_notes(spec: ModelSpec, work: Workload) -> tuple[str, ...]:
    """What vLLM does with this model that the answer depends on."""
    notes = []
    windows = any(layer.window for layer, _ in spec.attention_layer_counts)  # each distinct layer once
    beh = behaviour_of(work, spec)
    if windows and not beh.hybrid_kv:
        notes.append(
            f"vLLM {work.release.version} on {'V1' if beh.v1 else 'V0'} has no hybrid KV allocator: "
            "sliding-window layers keep the whole context, as the full layers do"
        )
    elif windows:
        notes.append(
            "sliding-window layers reserve min(window - 1 + max_num_batched_tokens, context) tokens per "
            "request, as vLLM's hybrid KV allocator does"
        )
    if spec.attention_layers and any(
        mixer_kind(spec, layer).state_elements(spec, layer) for layer, _ in spec.layer_counts
    ):
        held = state_blocks(spec, work, None)
        notes.append(
            HYBRID_NOTE.format(
                blocks="one block" if held == 1 else f"{held} blocks",
                prefix=HYBRID_PREFIX_OFF if held == 1 else HYBRID_PREFIX_ALIGN,
            )
        )
    if spec.mla is not None and spec.mla.indexer is not None:
        notes.append(
            f"DeepSeek sparse attention: every layer caches the MLA latent (vLLM's fp8_ds_mla format, "
            f"{latent_bytes(spec, 1):,} B, when the KV dtype is fp8: the default in 0.11.0, --kv-cache-dtype "
            f"fp8 in later releases) and the indexer's fp8 key ({indexer_key_bytes(spec.mla.indexer)} B), "
            "whole on every TP rank"
        )
    if spec.compressed is not None:
        notes.append(
            "DeepSeek-V4: KV per token is an estimate from vLLM's code (each layer's compressed entry, "
            "584 B in fp8_ds_mla, over its compress ratio, + the ratio-4 layers' indexer keys); the "
            "sliding window and compressor state are a per-sequence reserve; auto KV is fp8 (FlashMLA, "
            "Hopper): Blackwell's FlashInfer path keeps bf16 rows (--kv-dtype bf16)"
        )
    if spec.attn_res_block_size:
        notes.append(KIMI_K3_NOTE.format(version=work.release.version))
    if work.engine.cpu_offload_gb:
        notes.append(OFFLOAD_NOTE)
    drafted = draft_kv_bytes_per_token(spec, work, 1)
    if drafted:
        notes.append(
            f"speculative decoding: the draft's attention layers add {drafted:,} B per token to every KV "
            "block (vLLM keeps them in the target's blocks): the KV cache and pool count them, the per-token "
            "figure is the target's"
        )
    lora = lora_note(work)
    return (*notes, lora) if lora else tuple(notes)


ENGINE = EngineModel(
    name="vllm",
    version=f"vLLM {VLLM.default_version}",
    note="vLLM: gpu_memory_utilization x CUDA-visible total holds weights + activation peak + non-torch "
    "memory (+ the CUDA-graph estimate from 0.20) + paged KV (16-token blocks, hybrid groups); the CUDA "
    "context outside it",
    evaluate=evaluate,
    effective_settings=effective_settings,
    releases=VLLM,
    refuses_context=lambda spec, work: (
        engine_refusal(work)
        or quantization_refusal(spec, work)
        or context_refusal(spec, work.context_tokens, behaviour(work.release.version))
    ),
    model_kv_default=kv_default,
    levers=LEVERS,
    budget=lambda spec, gpu, tp, work: launch_utilization(work),
    max_sequences=lambda gpu, work: scheduler_limits(gpu, work).max_num_seqs,
    prefill_budget=lambda gpu, work: scheduler_limits(gpu, work).max_num_batched_tokens,
    pages_kv=True,
    serves=True,
    quantizes_on_load=True,
    nodes=lambda spec, gpu, nodes, work, per_node: evaluate_nodes(spec, gpu, nodes, work, per_node),
    notes=model_notes,
    host_weights=offloaded_bytes,
    # benchmarks/datasets.py RandomDataset: lengths drawn from [len x (1 - r), len x (1 + r)],
    # --random-range-ratio r defaulting to 0.0, so one length unless asked otherwise
    fixed_length_benchmark="vllm bench serve --dataset-name random",
    overlaps_host_work=overlaps_host_work,
    attention_dp=attention_dp,
    with_attention_dp=with_data_parallel,
    launch_tp=launch_tp,
    host_sequences=host_sequences,
    # --pipeline-parallel-size (engine/arg_utils.py, every release gpusize models); data parallel with
    # expert parallel over servers from 0.9.0 (serving.nodes.MULTINODE_SINCE): one engine per server,
    # the first with the address, the others --headless (docs/serving/data_parallel_deployment.md);
    # TP x PP and TP over every GPU on a Ray cluster of the servers (docs/serving/distributed_serving.md)
    across_servers=AcrossServers(
        pipeline_flag="--pipeline-parallel-size",
        expert_flags=("--data-parallel-size", "{ep}", "--enable-expert-parallel"),
        expert_servers="on each of {n} servers, the command above with --data-parallel-size-local {local} "
        "--data-parallel-address <first server's IP> --data-parallel-start-rank <{local} x server index>, "
        "and --headless on every server but the first (vLLM docs/serving/data_parallel_deployment.md)",
        spanning_servers="one engine over {n} servers: the command above, started on a Ray cluster of the "
        "servers",
    ),
    prefix_cache="vLLM's automatic prefix caching (on by default in V1, the default engine from 0.8.0: "
    "tests/engine/test_arg_utils.py test_prefix_caching_from_cli, 'V1 turns on prefix caching by "
    "default'; --no-enable-prefix-caching turns it off; V0, VLLM_USE_V1=0, needs --enable-prefix-caching: "
    "engine/arg_utils.py leaves enable_prefix_caching off there)",
)
