"""Engine memory models, one module each: vLLM (the default), SGLang, llama.cpp and transformers.

Each module states the releases it follows and exposes `ENGINE`, an EngineModel whose `evaluate`
returns a `core.plan.Candidate`, so plans and reports treat engines alike.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable

from gpusize.core.engines.base import UNVERSIONED, EngineModel, NodesEvaluator
from gpusize.core.engines.family_support import family_refusal
from gpusize.core.gpu import GpuSpec
from gpusize.core.plan import Candidate, Evaluator, refused
from gpusize.core.registry import ENGINE_MODULES
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import KV_DTYPES, EngineSettings, Request, Workload, resolve
from gpusize.dataclass import replace
from gpusize.errors import InputError
from gpusize.units import DTYPE_BYTES

__all__ = ["engines_that", "ENGINE_MODULES", "EngineModel", "engine", "engine_label", "on_gpu", "prepare"]

# Each engine's module (core/registry.py) is imported on first use: a vLLM answer then never loads the
# transformers engine's allocator replay or llama.cpp's GGUF placement (start-up, bench/bench_cli.py).


@functools.cache
def engine(name: str) -> EngineModel:
    """The engine's model, its fit test guarded by the device rules every engine obeys (`on_device`)."""
    model: EngineModel = importlib.import_module(f"{__name__}.{ENGINE_MODULES[name]}").ENGINE
    nodes = model.nodes
    return replace(
        model,
        evaluate=on_device(model, _kv_on_gpu(model.evaluate)),
        nodes=None if nodes is None else _across_servers(model, nodes),
    )


def _across_servers(model: EngineModel, nodes: NodesEvaluator) -> NodesEvaluator:
    """The engine's plan over servers, guarded and kept as `on_device` keeps its fit test: one kept
    test per server size (GPUs in each server)."""
    by_size: dict[int, Evaluator] = {}

    def across(spec: ModelSpec, gpu: GpuSpec, servers: int, work: Workload, per_node: int) -> Candidate:
        guarded = by_size.get(per_node)
        if guarded is None:
            sized = functools.partial(_of_size, nodes, per_node)
            guarded = by_size[per_node] = on_device(model, _kv_on_gpu(sized))
        return guarded(spec, gpu, servers, work)

    return across


def _of_size(
    nodes: NodesEvaluator, per_node: int, spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload
) -> Candidate:
    """`nodes` over `n` servers of `per_node` GPUs, as an engine's fit test takes its arguments."""
    return nodes(spec, gpu, n, work, per_node)


def on_gpu(spec: ModelSpec, gpu: GpuSpec, work: Workload) -> Workload:
    """The workload as its engine runs it on `gpu`: a KV dtype asked as `auto` resolved by the
    engine's `model_kv_default` for that GPU (SGLang: fp8_e4m3 for DeepSeek Sparse Attention on
    compute capability 10 and above), where it differs from the one resolved without a GPU. Every plan
    is evaluated on it, and the reports show it for the GPU of their plan."""
    model = engine(work.engine.name)
    if model.model_kv_default is None or work.requested_kv_dtype != "auto":
        return work
    kind = model.model_kv_default(spec, work.release.version, gpu)
    if kind is None or kind == work.kv_cache_dtype or kind not in DTYPE_BYTES:
        return work
    return replace(work, kv_cache_dtype=kind, kv_bytes=DTYPE_BYTES[kind])


def _kv_on_gpu(evaluate: Evaluator) -> Evaluator:
    """`evaluate` on the workload as the engine runs it on each GPU (`on_gpu`)."""

    def resolved(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
        return evaluate(spec, gpu, n, on_gpu(spec, gpu, work))

    return resolved


def device_problem(engine_name: str, label: str, gpu: GpuSpec, count: int) -> str | None:
    """Why `engine_name` cannot run one instance on `count` of `gpu`: it does not run on that device
    (GpuSpec.engines), or the device is one of a kind (a MIG slice, a unified-memory machine) and one
    instance may not span two (GpuSpec.one_device). None when it may."""
    if gpu.engines and engine_name not in gpu.engines:
        return f"{label} does not run on {gpu.full_name}; {runs_on(gpu)}"
    if count > 1 and gpu.one_device:
        return gpu.one_device
    return None


def runs_on(gpu: GpuSpec) -> str:
    """'what runs there: --engine llamacpp' for a device that runs only some engines."""
    return "what runs there: " + " or ".join(f"--engine {e}" for e in gpu.engines)


#: Evaluations one engine's fit test keeps (each a few kB): a fit evaluates the same configuration
#: several times (the split search, the whole-model figures, the fix and one-card searches over the
#: catalog), and a batch again on every row that shares a model, GPU and settings (bench/RESULTS.md,
#: issue 22). The test is a pure function of its arguments, so a kept answer is the answer.
EVALUATIONS_KEPT = 4096


def on_device(model: EngineModel, evaluate: Evaluator) -> Evaluator:
    """`evaluate`, refusing a plan the device rules forbid before any arithmetic (so no search, in any
    command, tries tensor parallel on a MIG slice), and one the engine refuses on that GPU
    (`EngineModel.refuses_device`: llama.cpp's CUDA build on an AMD GPU); each answer kept for the
    same arguments (equal model, GPU, count and workload), up to EVALUATIONS_KEPT. The GPU's free
    memory is part of the key: GpuSpec's equality leaves it out (a `--gpu local` measurement, not a
    fact of the type), and the vLLM pool subtracts what other processes hold."""
    kept: dict[tuple[ModelSpec, GpuSpec, int | None, int, Workload], Candidate] = {}

    def checked(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
        problem = device_problem(model.name, model.label, gpu, n)
        if problem is None and model.refuses_device is not None:
            problem = model.refuses_device(gpu, work)
        return refused(gpu, n, problem) if problem else evaluate(spec, gpu, n, work)

    def guarded(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
        key = (spec, gpu, gpu.free_mib, n, work)
        try:
            found = kept.get(key)
        except TypeError:  # a value that cannot be hashed (a GpuSpec built by a caller): not kept
            return checked(spec, gpu, n, work)
        if found is None:
            if len(kept) >= EVALUATIONS_KEPT:
                kept.clear()
            found = kept[key] = checked(spec, gpu, n, work)
        return found

    return guarded


def prepare(spec: ModelSpec, request: Request) -> Workload:
    """The request resolved for its engine (settings, release), refused (InputError) where the engine
    itself would refuse to start: a context above the model's maximum for vLLM and SGLang."""
    model = engine(request.engine.name)
    _refuse_foreign_kv(request, model)
    kv_default = model.kv_default
    if model.model_kv_default is not None and request.kv_dtype == "auto":
        release = model.releases.resolve(request.engine.version).version
        kv_default = model.model_kv_default(spec, release, None) or kv_default
    work = resolve(spec, request, model.settings, model.releases, model.kv_cache_types, kv_default)
    refusal = family_refusal(model.name, model.label, spec, work) or model.refuses_context(spec, work)
    if refusal:
        raise InputError(refusal)
    return work


def _refuse_foreign_kv(request: Request, model: EngineModel) -> None:
    """A KV cache type that is another engine's own name (llama.cpp's q8_0 under vLLM): one line that
    names the engine that has it."""
    kind = request.kv_dtype
    if kind in KV_DTYPES or kind in model.kv_cache_types:
        return
    for name in ENGINE_MODULES:
        if name != model.name and kind in engine(name).kv_cache_types:
            raise InputError(
                f"--kv-dtype {kind} is a KV cache type of --engine {name}, not of --engine "
                f"{model.name}: pass --engine {name}, or use one of {', '.join(KV_DTYPES)}"
            )


def engine_label(settings: EngineSettings) -> str:
    """The engine and release a plan follows, as printed ('vLLM 0.19.0')."""
    model = engine(settings.name)
    return model.version if model.releases is UNVERSIONED else model.releases.resolve(settings.version).label


def engines_that(can: Callable[[EngineModel], bool]) -> str:
    """The engines with a capability, as a message names them ('vLLM, SGLang or llama.cpp'); loads
    every engine, so for messages (a refusal), not the sizing path."""
    labels = [m.label for m in map(engine, ENGINE_MODULES) if can(m)]
    return " or ".join(labels) if len(labels) < 3 else f"{', '.join(labels[:-1])} or {labels[-1]}"
