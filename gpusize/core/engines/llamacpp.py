"""llama.cpp's memory model (pure), for ggml-org/llama.cpp build b11312 (0c1e57098, 2026-10-01).

The input embedding stays on the CPU; layers are offloaded from the end, the output head counting as
a layer and going first; with several GPUs the offloaded layers are split across them (`-sm layer`),
each GPU holding its layers' weights, KV and recurrent state. KV = each stream's cells (n_ctx padded
to 256, per slot when not unified) x each layer's K + V elements x type size, sliding-window layers
holding min(n_ctx_seq, window + n_ubatch) cells, plus the recurrent layers' f32 state per sequence;
what each layer holds, per family, is `llamacpp_families`. The compute buffer holds the KQ scores
(without flash attention) or the logits of one micro-batch, whichever is larger. Weights come from
the GGUF file tensor by tensor when there is one, else from config arithmetic.

Build b11312 is commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f of 2026-10-01. Its source is read
as vendored in llama-cpp-python 0.3.36 (PyPI sdist llama_cpp_python-0.3.36.tar.gz, uploaded
2026-10-01; CHANGELOG: "update llama.cpp to ggml-org/llama.cpp@0c1e57098"), at these lines:
- context padded to 256: src/llama-context.cpp:290, per sequence :292-306;
- llama-server defaults: cache_type_k/v F16 (common/common.h:589-590), n_ubatch 512 (:454),
  flash_attn_type AUTO (:501), kv_unified false (:575; tools/server/server.cpp:156-160 turns it on
  only for -np auto); auto flash attention resolved by probing the device
  (src/llama-context.cpp:557-560); a quantized V cache with -fa off refused
  (src/llama-context.cpp:3840-3848 "quantized V cache requires flash_attn to be enabled");
- layer split: src/llama-model.cpp:1560-1597; the input layer on the CPU (:1602-1605); llama-server's
  -fit (on by default, common/common.h:478) changes nothing once -ngl is given, as gpusize's launch
  line does (common/fit.cpp:463-464 "n_gpu_layers already set by user");
- K/V and state per layer and the cache classes: `llamacpp_families`.
The compute buffer is not llama.cpp's graph reserve but Ollama's estimate of it (GraphSize), checked
against logged llama.cpp buffers (tests/core/test_engines.py).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
from collections.abc import Sequence
from typing import NamedTuple

from gpusize.core import runtime
from gpusize.core.engines.base import EngineModel
from gpusize.core.engines.llamacpp_families import (
    LLAMACPP_CTX_PAD,
    LLAMACPP_KV_BYTES,
    LLAMACPP_UBATCH,
    family_refusal,
    layer_cache_bytes,
    layer_devices,
    llamacpp_kv_bytes,
    llamacpp_state_bytes,
)
from gpusize.core.engines.llamacpp_families import pad as _pad
from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import Levers, Variant, one
from gpusize.core.plan import Candidate, Evaluator, PerGpu, context_problem
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import estimated_layers
from gpusize.core.workload import EngineSettings, Workload
from gpusize.dataclass import dataclass, replace
from gpusize.units import GIB

__all__ = [
    "BACKENDS",
    "BACKEND_LABELS",
    "Backend",
    "ENGINE",
    "LLAMACPP_CTX_PAD",
    "LLAMACPP_KV_BYTES",
    "LEVERS",
    "LLAMACPP_UBATCH",
    "LlamaCppSplit",
    "backend",
    "backend_problem",
    "cache_type",
    "evaluate",
    "flash_attention",
    "layer_cache_bytes",
    "llamacpp_compute_bytes",
    "llamacpp_kv_bytes",
    "llamacpp_split",
    "llamacpp_state_bytes",
    "most_layers",
    "most_layers_on_one",
    "offload_variant",
    "refusal",
]

VERSION = "0c1e57098 (b11312, 2026-10-01)"
#: llama-server's cache type when -ctk/-ctv are not given (common/common.h:589-590 cache_type_k/v = F16).
LLAMACPP_KV_DEFAULT = "f16"
#: Flash attention when the user sets neither --flash-attn nor --no-flash-attn: the modelled release
#: defaults `-fa` to auto (common/common.h:501 `flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO`, since
#: ggml-org/llama.cpp#15434, Aug 2025), which llama_context turns on when the device runs the flash
#: attention op (src/llama-context.cpp:557-560 probe), as CUDA does on every NVIDIA GPU gpusize lists.
LLAMACPP_FLASH_ATTN_DEFAULT = True
#: KV cache types that are quantized: llama.cpp refuses such a V cache without flash attention
#: (src/llama-context.cpp:3846 "quantized V cache requires flash_attn to be enabled").
LLAMACPP_QUANTIZED_KV = frozenset(k for k in LLAMACPP_KV_BYTES if k not in ("f32", "f16", "bf16"))


def llamacpp_compute_bytes(
    spec: ModelSpec,
    n_ctx: int,
    flash_attention: bool = False,
    n_ubatch: int = LLAMACPP_UBATCH,
    output_on_gpu: bool = True,
) -> int:
    """Compute buffer of the worst-case micro-batch on the GPU: without flash attention the f32 KQ
    scores (n_ctx x n_ubatch x heads x 4 B) with one f32 FFN activation, or the f32 logits of the
    micro-batch, whichever is larger (Ollama v0.12.3 GraphSize, fullOffload; 560 MiB for
    Llama-3.1-8B at 8192 cells, as logged)."""
    ub = min(n_ubatch, n_ctx)
    h = spec.hidden_size
    attention = 4 * ub * (1 + 4 * h + (0 if flash_attention else n_ctx * (1 + spec.num_attention_heads)))
    logits = 4 * ub * (h + spec.vocab_size) if output_on_gpu else 4 * ub * h
    return int(max(attention, logits))


@dataclass(frozen=True)
class LlamaCppSplit:
    """Where a llama.cpp plan keeps things under `-ngl`: weights, KV and state on the GPUs and in system
    RAM, the compute buffer, and each GPU's share under `-sm layer`."""

    gpu_layers: int
    gpu_weight_bytes: int
    cpu_weight_bytes: int
    gpu_kv_bytes: int
    cpu_kv_bytes: int
    compute_bytes: int
    #: (weight bytes, KV + state bytes) on each GPU, in device order (-sm layer).
    per_gpu: tuple[tuple[int, int], ...] = ()


def llamacpp_split(
    spec: ModelSpec,
    layer_bytes: Sequence[int],
    embd_bytes: int,
    output_bytes: int,
    n_gpu_layers: int,
    n_ctx: int,
    kv_type: str,
    flash_attention: bool,
    n_seq: int = 1,
    num_gpus: int = 1,
) -> LlamaCppSplit:
    """Where weights and KV live with `-ngl n_gpu_layers` over `num_gpus` equal GPUs (the output head
    counts as one layer, offloaded first; the input embedding never leaves the CPU; each layer's
    weights, KV and state sit on its layer's device, `llamacpp_families.layer_devices`)."""
    n_layer = len(layer_bytes)
    ngl = max(0, min(n_gpu_layers, n_layer + 1))
    devices = layer_devices(n_layer, ngl, num_gpus)
    cache = _layer_totals(spec, n_ctx, kv_type, n_seq, flash_attention, n_layer)
    weight_sums, cache_sums = _running_sums(tuple(layer_bytes)), _running_sums(cache)
    weights, kv = [0] * num_gpus, [0] * num_gpus
    for device, first, end in _device_runs(n_layer, ngl, num_gpus):  # each GPU's layers, by sums
        weights[device] += weight_sums[end] - weight_sums[first]
        kv[device] += cache_sums[end] - cache_sums[first]
    output_device = devices[n_layer]
    if output_device is not None:
        weights[output_device] += output_bytes
    kv_total = cache_sums[-1]
    compute = (
        llamacpp_compute_bytes(
            spec, _pad(n_ctx, LLAMACPP_CTX_PAD), flash_attention, output_on_gpu=output_device is not None
        )
        if ngl
        else 0
    )
    cpu_weights = weight_sums[-1] + embd_bytes + output_bytes - sum(weights)
    per_gpu = tuple(zip(weights, kv, strict=True))
    return LlamaCppSplit(ngl, sum(weights), cpu_weights, sum(kv), kv_total - sum(kv), compute, per_gpu)


#: Cached (three small integers): the offload search tries a dozen -ngl on every row of a batch.
@functools.lru_cache(maxsize=1024)
def _device_runs(n_layer: int, n_gpu_layers: int, num_gpus: int) -> tuple[tuple[int, int, int], ...]:
    """(GPU, first layer, end) of each run of consecutive decoder layers on one GPU (`layer_devices`;
    the output head, il = n_layer, not among them)."""
    runs: list[tuple[int, int, int]] = []
    for il, device in enumerate(layer_devices(n_layer, n_gpu_layers, num_gpus)[:n_layer]):
        if device is None:
            continue
        if runs and runs[-1][0] == device and runs[-1][2] == il:
            runs[-1] = (device, runs[-1][1], il + 1)
        else:
            runs.append((device, il, il + 1))
    return tuple(runs)


#: Cached (a few models' layer bytes and caches at a few hundred contexts): read for every -ngl tried.
@functools.lru_cache(maxsize=512)
def _running_sums(values: tuple[int, ...]) -> tuple[int, ...]:
    """0 and the running sums of `values` (so a run's bytes are a difference)."""
    return (0, *itertools.accumulate(values))


#: Cached: the same for every -ngl the offload search tries (offload_variant), and for every GPU type
#: and count a fit tries at one context; a few hundred contexts of a few models at a time.
@functools.lru_cache(maxsize=256)
def _layer_totals(
    spec: ModelSpec, n_ctx: int, kv_type: str, n_seq: int, flash_attention: bool, n_layer: int
) -> tuple[int, ...]:
    """KV + state bytes of each of the `n_layer` blocks (`layer_cache_bytes`; spread evenly when the
    GGUF's block count differs from the config's layers)."""
    caches = layer_cache_bytes(spec, n_ctx, kv_type, n_seq, flash_attention=flash_attention)
    if len(caches) != n_layer:
        return tuple(_spread(caches, n_layer))
    return tuple(kv + state for kv, state in caches)


def _spread(caches: tuple[tuple[int, int], ...], n_layer: int) -> list[int]:
    """A GGUF whose block count differs from the config's layers (MTP blocks kept): the cache spread
    evenly over its blocks."""
    total = sum(kv + state for kv, state in caches)
    return [total // n_layer + (1 if il < total % n_layer else 0) for il in range(n_layer)]


def flash_attention(work: Workload) -> bool:
    """Whether llama.cpp runs flash attention: the user's -fa on|off, else the release's default.
    Every llama.cpp answer (sizing, settings, launch command) reads this one decision."""
    return LLAMACPP_FLASH_ATTN_DEFAULT if work.engine.flash_attn is None else work.engine.flash_attn


class Backend(NamedTuple):
    """One of llama.cpp's GPU backends (`core.settings.local.LLAMACPP_BACKENDS`): its name as llama-bench's
    "backend" column and the build docs write it, the GPU vendor it runs on (None: any GPU with a
    Vulkan driver) and how the build is made (ggml-org/llama.cpp docs/build.md CMake options,
    docs/docker.md images)."""

    label: str
    vendor: str | None
    made: str


#: ggml-cuda needs an NVIDIA GPU, ggml-hip AMD's ROCm, ggml-metal Apple silicon; a GPU's default is
#: its vendor's own backend, any other vendor's GPU runs the Vulkan build.
_IMAGE = "ghcr.io/ggml-org/llama.cpp:server-"
BACKENDS = {
    "cuda": Backend("CUDA", "NVIDIA", f"cmake -DGGML_CUDA=ON, or the image {_IMAGE}cuda"),
    "rocm": Backend("ROCm", "AMD", f"cmake -DGGML_HIP=ON, or the image {_IMAGE}rocm"),
    "vulkan": Backend("Vulkan", None, f"cmake -DGGML_VULKAN=ON, or the image {_IMAGE}vulkan"),
    "metal": Backend("Metal", "Apple", "Metal is on by default in a macOS build (GGML_METAL)"),
}
#: The backends as text names them ("Metal"), for `EngineModel.build_labels`.
BACKEND_LABELS = {name: b.label for name, b in BACKENDS.items()}
#: The vendor of each backend, for `EngineModel.build_vendors`.
BACKEND_VENDORS = {name: b.vendor for name, b in BACKENDS.items()}


def backend(settings: EngineSettings, gpu: GpuSpec) -> str:
    """The llama.cpp build a plan on `gpu` runs: the user's --backend, else the one made for the GPU's
    vendor (BACKENDS), else Vulkan. The speed model and the launch note read this one decision."""
    if settings.backend is not None:
        return settings.backend
    return _own_backend(gpu) or "vulkan"


def _own_backend(gpu: GpuSpec) -> str | None:
    """The backend made for the GPU's vendor (BACKENDS), None for a vendor without one."""
    return next((name for name, b in BACKENDS.items() if b.vendor == gpu.vendor), None)


def backend_problem(gpu: GpuSpec, work: Workload) -> str | None:
    """Why the --backend asked cannot run on `gpu` (a CUDA build on an AMD GPU); None when it can."""
    asked = BACKENDS.get(work.engine.backend or "")
    if asked is None or asked.vendor is None or asked.vendor == gpu.vendor:
        return None
    own = _own_backend(gpu)
    builds = f"--backend {own} or vulkan" if own else "--backend vulkan"
    where = f"runs on {asked.vendor} GPUs, not on {gpu.full_name}"
    return f"llama.cpp's {asked.label} build {where}: give {builds}"


def refusal(work: Workload) -> str | None:
    """llama.cpp's refusal to start with these settings (a quantized V cache without flash
    attention), as a message saying what to change; None when it starts."""
    kind = cache_type(work)
    if kind in LLAMACPP_QUANTIZED_KV and not flash_attention(work):
        return (
            f"--kv-dtype {work.kv_cache_dtype} is a {kind} cache in llama.cpp, and llama.cpp refuses a "
            "quantized V cache without flash attention: drop --no-flash-attn or the --kv-dtype"
            if kind != work.kv_cache_dtype
            else f"--kv-dtype {kind} is a quantized cache, and llama.cpp refuses a quantized V cache "
            "without flash attention: drop --no-flash-attn or the --kv-dtype"
        )
    return None


def cache_type(work: Workload) -> str:
    """llama.cpp's cache type: its own name as asked, else the nearest it has (fp8 -> q8_0)."""
    if work.kv_cache_dtype in LLAMACPP_KV_BYTES:
        return work.kv_cache_dtype
    return {"fp8": "q8_0", "fp32": "f32"}.get(work.kv_cache_dtype, LLAMACPP_KV_DEFAULT)


def evaluate(spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload) -> Candidate:
    """llama.cpp on `num_gpus` GPUs (layers split across them, -sm layer): fits when every GPU holds
    its share of offloaded weights + KV + one compute buffer within its total memory."""
    return split_candidate(spec, gpu, num_gpus, work)[0]


def split_candidate(
    spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload
) -> tuple[Candidate, LlamaCppSplit]:
    split = _split(spec, num_gpus, work, work.engine.n_gpu_layers)
    context = runtime.CUDA_CONTEXT_TP1
    capacity = gpu.visible_bytes - context
    weights, kv = max(split.per_gpu, key=sum)  # the fullest GPU decides the fit
    total = weights + kv + split.compute_bytes
    per_gpu = PerGpu(
        weights_bytes=weights,
        kv_cache_bytes=kv,
        activations_bytes=split.compute_bytes,
        overhead_bytes=0,
        total_bytes=total,
        usable_bytes=capacity,
        headroom_bytes=capacity - total,
        outside_budget_bytes=context,
        outside_budget_limit_bytes=context,
        visible_bytes=gpu.visible_bytes,
    )
    reason = context_problem(spec, work.context_tokens)
    if reason is None and total > capacity:
        reason = (
            f"{split.gpu_layers} layers in GPU memory (offloaded) need {total / GIB:.1f} GiB per GPU, "
            f"{capacity / GIB:.1f} GiB available; lower --n-gpu-layers (rest in system RAM) or the context"
        )
    candidate = Candidate(
        gpu=gpu.name,
        gpu_full_name=gpu.full_name,
        num_gpus=num_gpus,
        tensor_parallel=1,
        fits=reason is None,
        reason=reason,
        per_gpu=per_gpu,
        kv_cache_capacity_tokens=work.context_tokens * work.batch,
        max_concurrency=float(work.batch),
        max_context_tokens=work.context_tokens,
        host_bytes=split.cpu_weight_bytes + split.cpu_kv_bytes,
        usd_per_hour=gpu.price_for(num_gpus),
    )
    return candidate, split


def _split(spec: ModelSpec, num_gpus: int, work: Workload, n_gpu_layers: int | None) -> LlamaCppSplit:
    """The workload's split with -ngl `n_gpu_layers` (None: every layer and the output head)."""
    stored = work.stored_layers or estimated_layers(spec, work.weights)
    ngl = len(stored.layer_bytes) + 1 if n_gpu_layers is None else n_gpu_layers
    return llamacpp_split(
        spec,
        stored.layer_bytes,
        stored.token_embd_bytes,
        stored.output_bytes or stored.token_embd_bytes,
        ngl,
        work.context_tokens * work.batch,
        cache_type(work),
        flash_attention(work),
        work.batch,
        num_gpus,
    )


def _fits(spec: ModelSpec, gpu: GpuSpec, num_gpus: int, work: Workload, n_gpu_layers: int) -> bool:
    """`split_candidate(...).fits` with -ngl `n_gpu_layers`, without building the candidate (the
    offload search asks it for every count it tries)."""
    split = _split(spec, num_gpus, work, n_gpu_layers)
    total = max(sum(g) for g in split.per_gpu) + split.compute_bytes  # the fullest GPU, as there
    return (
        context_problem(spec, work.context_tokens) is None
        and total <= gpu.visible_bytes - runtime.CUDA_CONTEXT_TP1
    )


def effective_settings(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> dict[str, float | int | str]:
    stored = work.stored_layers or estimated_layers(spec, work.weights)
    ngl = len(stored.layer_bytes) + 1 if work.engine.n_gpu_layers is None else work.engine.n_gpu_layers
    return {
        "n_gpu_layers": ngl,
        "flash_attn": "on" if flash_attention(work) else "off",
        "cache_type": cache_type(work),
        "ubatch_size": LLAMACPP_UBATCH,
        "split_mode": work.engine.split_mode or "layer",
    }


def most_layers(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload, top: int) -> int:
    """The largest -ngl in 1..`top` whose split fits `n` GPUs (`_fits`, which rises with the count),
    by bisection; 0 when not one fits."""
    lo, hi = 0, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if _fits(spec, gpu, n, work, mid) else (lo, mid - 1)
    return lo


def most_layers_on_one(spec: ModelSpec, gpu: GpuSpec, work: Workload, top: int) -> int:
    """`most_layers` on one GPU, in one step: there -ngl k puts the output head, the last k - 1 decoder
    layers' weights and caches and one compute buffer on the GPU (`llamacpp_split`), so the largest k
    that fits is one bisect on the running sums of the layers' bytes (the bisection asked `_fits`
    some seven times, each building the split: a tenth of a several-GPU row of a batch,
    bench/RESULTS.md). tests/core/test_suggest_bounded.py holds it to `most_layers`."""
    if top < 1 or context_problem(spec, work.context_tokens) is not None:
        return 0
    stored = work.stored_layers or estimated_layers(spec, work.weights)
    n_layer, n_ctx, fa = len(stored.layer_bytes), work.context_tokens * work.batch, flash_attention(work)
    caches = _layer_totals(spec, n_ctx, cache_type(work), work.batch, fa, n_layer)
    sums = list(itertools.accumulate(map(operator.add, stored.layer_bytes, caches), initial=0))
    head = (stored.output_bytes or stored.token_embd_bytes) + llamacpp_compute_bytes(
        spec, _pad(n_ctx, LLAMACPP_CTX_PAD), fa, output_on_gpu=True
    )
    room = gpu.visible_bytes - runtime.CUDA_CONTEXT_TP1 - head  # for the layers from `start` on
    start = bisect.bisect_left(sums, sums[-1] - room)  # the first layer on the GPU, n_layer + 1: none
    if start == 0:  # every layer: so every count up to `top` (a count past them all puts them all)
        return top
    return min(n_layer + 1 - start, top)


def offload_variant(
    spec: ModelSpec, work: Workload, gpu: GpuSpec, n: int, judge: Evaluator = evaluate
) -> Variant | None:
    """The most layers on the GPUs (-ngl) that fit; the rest run from system RAM, their bytes from
    `judge` (the engine's kept evaluations, where a search passes them). None when not one layer fits."""
    layers = spec.num_hidden_layers + 1  # the output head counts as one layer
    top = min(work.engine.n_gpu_layers or layers, layers) - 1
    lo = most_layers_on_one(spec, gpu, work, top) if n == 1 else most_layers(spec, gpu, n, work, top)
    if lo < 1:
        return None
    fewer = replace(work, engine=replace(work.engine, n_gpu_layers=lo))
    host = judge(spec, gpu, n, fewer).host_bytes or 0
    note = (
        f"the other layers run from system RAM ({host / GIB:.1f} GiB), at the host's bandwidth: much slower"
    )
    return one("offload", "--n-gpu-layers", str(lo), f"{lo} of {layers} layers", note, fewer)


#: Fix-suggestion levers (core/levers.py): layers left in system RAM; a q8_0 or q4_0 KV cache.
LEVERS = Levers(
    kv_types=("q8_0", "q4_0"),
    kv_note="llama-server -ctk {kind} -ctv {kind} (a quantized V cache needs flash attention, on by default)",
    offload=offload_variant,
)

ENGINE = EngineModel(
    name="llamacpp",
    version=f"llama.cpp {VERSION}",
    note="llama.cpp: layers offloaded from the end (output head first), input embedding on the CPU; KV "
    "padded to 256 cells; compute buffer of one 512-token micro-batch",
    evaluate=evaluate,
    effective_settings=effective_settings,
    levers=LEVERS,
    kv_cache_types=LLAMACPP_KV_BYTES,
    kv_default=LLAMACPP_KV_DEFAULT,
    serves=True,
    splits_layers=True,
    refuses_context=lambda spec, work: family_refusal(spec) or refusal(work),
    refuses_device=backend_problem,
    build=backend,
    build_labels=BACKEND_LABELS,
    build_vendors=BACKEND_VENDORS,
    prefix_cache="llama-server's per-slot prompt cache (cache_prompt, on by default: a request reuses "
    "the prefix it shares with the slot's previous prompt)",
)
