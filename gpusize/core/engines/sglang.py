"""SGLang's memory model (pure), release by release over `core.releases.SGLANG` (`SGLANG.span`).

The KV pool has the same formula in every release (model_runner.py `profile_max_num_token`): free
memory after the weights minus free memory before them x (1 - mem_fraction_static), divided by one
token's cell (layers x 2 x kv_heads/tp x head_dim x bytes; MLA: the latent). "Before" is measured by
SGLang itself after its distributed init, so it lacks only the CUDA context, the distributed-init
memory and whatever other processes hold. What changes between releases is the default
mem_fraction_static (nine formulas in server_args.py) and the defaults behind it (chunked prefill,
CUDA-graph batch sizes), read from each release's source; and SGLang does not refuse a pool smaller
than the context: it starts and caps the request length.
"""

from __future__ import annotations

from gpusize.core import kvcache, runtime
from gpusize.core.engines.base import AcrossServers, EngineModel
from gpusize.core.engines.sglang_defaults import (
    DIST_INIT_TPN,
    default_running_requests,
    mem_fraction,
    prefill_budget,
    release_version,
    workload_defaults,
)
from gpusize.core.engines.sglang_dp import (
    attention_dp,
    attention_tp,
    dp_problem,
    dp_size,
    dp_weight_extra_bytes,
    with_dp_attention,
)
from gpusize.core.engines.sglang_kv import (
    dsa_forced_fp8,
    dsa_kv_default,
    dsa_kv_note,
    sglang_kv_bytes_per_token,
)
from gpusize.core.engines.sglang_lora import sglang_lora_host_bytes, sglang_lora_slots
from gpusize.core.engines.sglang_mamba import sglang_mamba_pool
from gpusize.core.engines.sglang_speculative import (
    algorithm_refusal,
    budgeted_cell,
    draft_notes,
    draft_reserves,
    draft_weights_in_budget,
)
from gpusize.core.engines.sglang_swa import swa_pool
from gpusize.core.engines.vllm.pool import OFFLOAD_NOTE, THIN_MARGIN, offloaded_bytes
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Levers
from gpusize.core.plan import (
    Candidate,
    PerGpu,
    refused,
    split_problem,
    thin_margin,
    yarn_caveat,
    yarn_flag,
)
from gpusize.core.releases import SGLANG, parse_version
from gpusize.core.reserves import ReserveTerm, outside_bytes, reserves_of, total_bytes
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import weights_bytes
from gpusize.core.workload import Workload
from gpusize.errors import InputError
from gpusize.units import GIB

__all__ = ["ENGINE", "LEVERS", "context_refusal", "evaluate"]


def context_refusal(spec: ModelSpec, work: Workload) -> str | None:
    """SGLang refuses --context-length above the derived length (max_position_embeddings x the rope
    factor, x1 when the config gives original_max_position_embeddings), except 0.4.4-0.4.10.post2 where
    the override defaulted on (a warning only)."""
    v = work.release.version
    if release_version("0.4.4") <= v <= release_version("0.4.10.post2") or not spec.max_position_embeddings:
        return None
    factor = 1.0
    if spec.rope_scaling and not spec.rope_scaling[2] and spec.rope_scaling[0] != "llama3":
        factor = spec.rope_scaling[1]
    derived = int(spec.max_position_embeddings * factor)
    if work.context_tokens <= derived:
        return None
    return (
        f"SGLang {v} refuses to start: User-specified context_length ({work.context_tokens}) is greater than "
        f"the derived context_length ({derived}). To allow overriding this maximum, set the env var "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        + (f"; or extend it with YaRN: {yarn}" if (yarn := yarn_flag(spec, work.context_tokens)) else "")
        + yarn_caveat(spec, work.context_tokens)
    )


#: What SGLang reserves under its own flags, one term each (core/reserves.py), taken from the static
#: pool before the KV cache. A new reserve: its function and one entry here.
SGLANG_RESERVES: tuple[ReserveTerm, ...] = (sglang_lora_slots, draft_weights_in_budget)


def sglang_offloaded_bytes(spec: ModelSpec, work: Workload, tp: int) -> int:
    """--cpu-offload-gb: SGLang's OffloaderV1 moves decoder-layer parameters as vLLM does
    (`offloaded_bytes`); its flag is an int (server_args.py `cpu_offload_gb: int`, argparse type=int),
    so a fraction is refused as SGLang's parser refuses it."""
    gib = work.engine.cpu_offload_gb
    if gib is not None and not float(gib).is_integer():
        raise InputError(f"invalid --cpu-offload-gb {gib}: SGLang takes a whole number of GiB")
    return offloaded_bytes(spec, work, tp)


#: The first SGLang release where --ep-size enables expert parallel by itself (0.4.10.post2's
#: server_args.py marks --enable-ep-moe "(Deprecated)"); gpusize refuses the setting before it.
EXPERT_PARALLEL_SINCE = "0.4.10.post2"
#: What keeps FP8-block experts whole under SGLang, beside its block refusal: its expert parallel.
WHOLE_EXPERTS = "--expert-parallel-size equal to the TP size (SGLang's --ep-size) keeps experts whole"


def expert_parallel(spec: ModelSpec, work: Workload, tp: int) -> tuple[bool, str | None]:
    """(whole experts, why not) for --expert-parallel-size on `tp` GPUs: SGLang's MoE layer deals
    num_experts / ep_size whole experts a GPU, each sliced by tp_size / ep_size (layers/moe/
    fused_moe_triton/layer.py: `assert num_experts % self.moe_ep_size == 0`, moe_tp_size = tp / ep);
    gpusize sizes ep_size 1 or equal to the TP size (then every GPU holds whole experts)."""
    ep = work.engine.expert_parallel_size or 1
    if ep <= 1 or spec.moe is None:
        return False, None
    since = parse_version(EXPERT_PARALLEL_SINCE)
    assert since is not None
    if work.release.version < since:
        raise InputError(
            f"--expert-parallel-size is modelled from SGLang {EXPERT_PARALLEL_SINCE} (before it "
            f"--enable-ep-moe, which gpusize does not model), not {work.release.version}"
        )
    if ep != tp:
        return (
            False,
            f"gpusize sizes --expert-parallel-size 1 or equal to the TP size, not {ep} on {tp} GPU(s)",
        )
    if spec.moe.num_experts % ep:
        return False, f"SGLang deals {spec.moe.num_experts} experts over --ep-size {ep}: they must divide"
    return True, None


def evaluate(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Candidate:
    dp = dp_size(work)
    # the checkpoint's FP8 blocks must not be cut: SGLang's Fp8MoEMethod refuses to load "The
    # output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n =
    # 128" (layers/quantization/fp8.py, from 0.4.1 to 0.5.23; `WHOLE_EXPERTS`)
    block = spec.quantization.block_size if (spec.quantization and work.uses_checkpoint_blocks) else None
    ep, ep_problem = expert_parallel(spec, work, tp)
    problem = ep_problem or split_problem(spec, tp, block, ep, WHOLE_EXPERTS)
    problem = problem or dp_problem(tp, dp) or dsa_forced_fp8(spec, gpu, work)
    if problem:
        return refused(gpu, tp, problem)
    attn_tp = attention_tp(tp, dp)
    fraction = mem_fraction(gpu, tp, work, spec)
    offloaded = sglang_offloaded_bytes(spec, work, tp)
    weights = weights_bytes(spec, work.weights, tp, work.include_mtp, ep) - offloaded
    weights += dp_weight_extra_bytes(spec, work.weights, tp, dp)
    cell = sglang_kv_bytes_per_token(spec, gpu, work, attn_tp)
    context = runtime.CUDA_CONTEXT_TP1 + (DIST_INIT_TPN if tp > 1 else 0)
    free_before = gpu.visible_bytes - context - work.reserved_bytes
    budget = int(free_before * fraction)
    held = reserves_of(SGLANG_RESERVES, spec, gpu, tp, work)
    held += sglang_mamba_pool(spec, attn_tp, budget - weights - total_bytes(held), work)  # before the KV
    drafted = budgeted_cell(spec, work, cell)  # from 0.5.14 the draft's KV shares each token's cell
    swa = swa_pool(spec, gpu, work, attn_tp) if drafted == cell else None  # the draft's SWA rows: one pool
    cell = drafted
    pool = budget - weights - total_bytes(held)
    per_group = -(-work.batch // dp)  # each attention group holds its own requests
    ctx = work.context_tokens
    if swa is None:
        capacity = max(pool, 0) // cell if cell else 0
        swa_tokens = None
        seqs = capacity * dp / ctx
        need = per_group * ctx * cell
        fits = pool > 0 and capacity >= per_group * ctx
        longest = capacity // max(per_group, 1)
    else:
        capacity, swa_tokens = swa.tokens(pool, work.release.version)
        seqs = swa.sequences(capacity, swa_tokens, ctx) * dp
        need = swa.bytes_for(per_group, ctx)
        fits = pool > 0 and capacity >= per_group * ctx and swa_tokens >= per_group * min(ctx, swa.window)
        longest = swa.longest_context(capacity, swa_tokens, max(per_group, 1))
    running = work.engine.max_running_requests or default_running_requests(gpu, work)
    held += draft_reserves(spec, tp, work, int(capacity), running)  # before 0.5.14: outside the budget
    total = weights + need + total_bytes(held)
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=need,
        activations_bytes=0,
        overhead_bytes=0,
        total_bytes=total,
        usable_bytes=budget,
        headroom_bytes=budget - total,
        outside_budget_bytes=context + outside_bytes(held),
        outside_budget_limit_bytes=gpu.visible_bytes - budget,
        visible_bytes=gpu.visible_bytes,
        reserves=held,
    )
    reason = _draft_misfit(per_gpu)
    fits = fits and reason is None
    if pool <= 0:
        reason = (
            f"SGLang refuses to start: the weights leave no memory for the KV cache under "
            f"--mem-fraction-static={fraction} ({pool / GIB:.1f} GiB)"
        )
    elif not fits and reason is None:
        capped = min(work.context_tokens, capacity) - 1
        groups = f" per attention group ({dp} groups)" if dp > 1 else ""
        sliding = "" if swa_tokens is None else f" (its sliding-window pool {swa_tokens:,})"
        reason = (
            f"SGLang starts, but its KV pool holds {capacity:,} tokens{sliding}{groups} ({fraction} of free "
            f"memory, {pool / GIB:.1f} GiB): requests are capped at {capped:,} tokens, {work.batch} x "
            f"{work.context_tokens:,} asked"
        )
    thin = fits and thin_margin(seqs, work.batch, THIN_MARGIN)
    return Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=tp,
        tensor_parallel=tp,
        fits=fits,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=int(capacity) * dp,  # the instance: one pool per attention group
        max_concurrency=round(seqs, 2),
        thin_margin=thin,
        warning=(
            f"holds {seqs:.2f} sequences of this context for {work.batch}, within gpusize's "
            f"{THIN_MARGIN:.0%} error on public start-up logs: the next size up is the safe choice, or "
            "lower --max-running-requests"
        )
        if thin
        else None,
        max_context_tokens=min(longest, spec.max_context or longest),
        kv_heads_per_gpu=kvcache.kv_heads_per_gpu(spec.num_key_value_heads, attn_tp),
        usd_per_hour=gpu.price_for(tp),
        host_bytes=(sglang_lora_host_bytes(spec, tp, work) + offloaded * tp) or None,
    )


def model_notes(spec: ModelSpec, work: Workload) -> tuple[str, ...]:
    """What SGLang does with this model that the answer depends on."""
    notes: tuple[str, ...] = (OFFLOAD_NOTE,) if work.engine.cpu_offload_gb else ()
    if work.engine.enable_dp_attention:
        notes += (
            "--enable-dp-attention: attention weights sharded over tp / dp GPUs and replicated across "
            "the dp groups, the input embedding whole on every GPU, MoE and MLP still over all tp; each "
            "group keeps its own KV pool for its own requests (KV capacity is the instance's, all "
            "groups); speed estimates treat the instance as tensor parallel",
        )
    pool = swa_pool(spec, None, work, 1)
    if pool is not None:
        notes += (
            f"SGLang's hybrid SWA pool: the {pool.n_full} full-attention layers keep every token, the "
            f"{pool.n_swa} sliding-window layers a second pool of --swa-full-tokens-ratio {pool.ratio:g} "
            f"as many tokens, of which a sequence holds its window ({pool.window:,}); KV capacity counts "
            "full-pool tokens",
        )
    dsa = dsa_kv_note(spec, work)
    return notes + ((dsa,) if dsa else ()) + draft_notes(spec, work)


def _draft_misfit(g: PerGpu) -> str | None:
    """The draft worker (sglang_speculative) allocates after the static pool: it runs out of memory
    at start-up when the memory outside the budget cannot hold it beside the CUDA context."""
    drafted = outside_bytes(g.reserves)
    if not drafted or g.outside_budget_bytes <= g.outside_budget_limit_bytes:
        return None
    return (
        f"SGLang runs out of memory loading the draft: its weights and KV pool ({drafted / GIB:.1f} GiB) "
        f"come after the static pool, and only {g.outside_budget_limit_bytes / GIB:.1f} GiB is left outside "
        "--mem-fraction-static beside the CUDA context; lower --mem-fraction-static"
    )


def effective_settings(
    spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload
) -> dict[str, float | int | str]:
    defaults = workload_defaults(gpu, tp, work, spec)
    out: dict[str, float | int | str] = {
        "mem_fraction_static": mem_fraction(gpu, tp, work, spec),
        "chunked_prefill_size": defaults.chunked_prefill,
        "cuda_graph_max_bs": defaults.cuda_graph_max_bs,
    }
    if work.engine.enable_dp_attention:
        dp = dp_size(work)
        out["dp_size"] = dp
        out["attn_tp_size"] = attention_tp(tp, dp)
    if expert_parallel(spec, work, tp)[0]:
        out["ep_size"] = tp
    return out


#: Fix-suggestion levers (core/levers.py): SGLang's flag names, FP8 weights quantized while loading, and
#: the paged pool's thin margin, vLLM's (the same model error on public start-up logs).
LEVERS = Levers(
    count_flag="--tensor-parallel-size",
    context_flag="--context-length",
    thin_margin=THIN_MARGIN,
)

ENGINE = EngineModel(
    name="sglang",
    version=f"SGLang {SGLANG.newest}",
    note="SGLang: KV pool = free memory after weights - free memory before weights x "
    "(1 - mem_fraction_static); default fraction from GPU size, TP and the release",
    evaluate=evaluate,
    effective_settings=effective_settings,
    releases=SGLANG,
    model_kv_default=dsa_kv_default,
    refuses_context=lambda spec, work: algorithm_refusal(work) or context_refusal(spec, work),
    levers=LEVERS,
    budget=lambda spec, gpu, tp, work: mem_fraction(gpu, tp, work, spec),
    max_sequences=lambda gpu, work: work.engine.max_running_requests or default_running_requests(gpu, work),
    prefill_budget=prefill_budget,
    pages_kv=True,
    serves=True,
    quantizes_on_load=True,
    notes=model_notes,
    host_weights=sglang_offloaded_bytes,
    attention_dp=attention_dp,
    with_attention_dp=with_dp_attention,
    # python/sglang/bench_serving.py sample_random_requests: lengths drawn from [len x r, len],
    # --random-range-ratio r defaulting to 0.0 (docs/developer_guide/bench_serving.md), so one
    # length only at 1
    fixed_length_benchmark="python -m sglang.bench_serving --dataset-name random --random-range-ratio 1",
    # --pp-size (server_args.py, from 0.4.8) and --nnodes / --node-rank / --dist-init-addr on each
    # server (docs/references/multi_node.md); its data-parallel attention takes --tp over the whole
    # group with --dp and --enable-dp-attention and sizes --mem-fraction-static for that --tp, not the
    # one-GPU budget gpusize sizes that layout with: not written
    across_servers=AcrossServers(
        pipeline_flag="--pp-size",
        expert_flags=None,
        expert_why="runs it with --tp over the whole group and sizes its memory for that --tp, not the "
        "budget this layout was sized with",
        expert_servers="SGLang runs it as --tp {ep} --dp {ep} --enable-dp-attention --nnodes {n} "
        "--node-rank <i> --dist-init-addr <first server's IP:port> on each server, with a memory fraction "
        "sized for that --tp (not written by gpusize)",
        spanning_servers="one engine over {n} servers: the command above on each server with --nnodes {n} "
        "--node-rank <i> --dist-init-addr <first server's IP:port>",
    ),
    prefix_cache="SGLang's radix cache (on by default; --disable-radix-cache turns it off)",
)
