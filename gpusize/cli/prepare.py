"""Turning command-line values into core values: catalogs, the model, the request, the GPUs.

Every check of a user's number (ranges, combinations) lives here, before any arithmetic, and fails
with a one-line InputError (exit 2).
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar, cast

from gpusize.cli.options import DEFAULT_CONTEXT_TOKENS, EngineValues
from gpusize.cli.output import warn, write_stderr
from gpusize.core.engines import engine, runs_on
from gpusize.core.engines import prepare as prepare_workload
from gpusize.core.gpu import GpuSpec
from gpusize.core.model import ResolvedModel
from gpusize.core.network import GPUS_PER_NODE, KINDS, MAX_NODES, LinkKind, NodePlan, node_link
from gpusize.core.plan import TP_SIZES
from gpusize.core.settings import EngineName, EngineSettings, settings_from
from gpusize.core.spec import ModelSpec
from gpusize.core.speculative import DraftModel, draft_reference
from gpusize.core.workload import DTYPES, Request, Workload, weight_dtype
from gpusize.errors import CatalogError, GpusizeError, InputError, UnknownNameError, UsageError
from gpusize.render.text import safe
from gpusize.serving.targets import Targets as UserTargets
from gpusize.sources.catalog import Catalogs
from gpusize.units import parse_count, parse_tokens

_T = TypeVar("_T")

__all__ = [
    "Targets",
    "catalogs",
    "choice",
    "draft_model",
    "engine_settings",
    "find_gpu",
    "gpu_count",
    "load_model",
    "number",
    "progress",
    "quantized_dtype",
    "request",
    "reserved_bytes",
    "reuse",
    "rope_scaled",
    "speed_targets",
    "targets",
    "workload",
]


def choice(value: str, allowed: tuple[str, ...], flag: str) -> str:
    key = value.strip().lower()
    if key not in allowed:
        raise UsageError(f"unknown {flag} '{safe(value[:40])}'; use one of {', '.join(allowed)}")
    return key


def number(value: float | None, flag: str, low: float, high: float, low_open: bool = True) -> float | None:
    """A finite float in (low, high] (or [low, high] when not low_open)."""
    if value is None:
        return None
    inside = (value > low if low_open else value >= low) and value <= high
    if not math.isfinite(value) or not inside:
        bracket = "(" if low_open else "["
        raise UsageError(f"invalid {flag} {value}: must be in {bracket}{low:g}, {high:g}]")
    return value


def speed_targets(min_speed: float, max_ttft_s: float | None) -> UserTargets:
    """--min-tokens-per-s-per-user (0 = no floor) and --max-ttft-s, checked."""
    floor = number(min_speed, "--min-tokens-per-s-per-user", 0, 1e6, low_open=False) or 0.0
    return UserTargets(min_tokens_per_s_per_user=floor, max_ttft_s=number(max_ttft_s, "--max-ttft-s", 0, 1e6))


def hit_rate(value: float) -> float:
    """--prefix-hit-rate: a fraction in [0, 1]."""
    checked = number(value, "--prefix-hit-rate", 0, 1, low_open=False)
    return checked or 0.0


def prefix_cache(engine_name: str, rate: float) -> None:
    """A prefix hit rate needs an engine with a prefix cache."""
    if rate and engine(engine_name).prefix_cache is None:
        raise UsageError(f"--prefix-hit-rate: --engine {engine_name} has no prefix cache")


def node_plan(
    nodes: int | None, kind: str | None, gbytes_per_s: float | None, gpu: GpuSpec, gpus: int | None
) -> NodePlan | None:
    """--nodes N, --interconnect, --node-bandwidth: the servers of a multi-node plan and the link
    between them (None without --nodes; the link options alone are refused)."""
    if nodes is None:
        if kind is not None or gbytes_per_s is not None:
            raise UsageError("--interconnect and --node-bandwidth describe the link of --nodes N")
        return None
    if not 2 <= nodes <= MAX_NODES:
        raise UsageError(f"invalid --nodes {nodes}: use 2 to {MAX_NODES} servers")
    per_node = gpus or GPUS_PER_NODE  # --gpus with --nodes: the GPUs of each server
    if gpu.one_device:
        raise UsageError(f"--nodes: {gpu.name} is one device, not a server of {per_node} GPUs")
    link_kind = cast("LinkKind", choice(kind, KINDS, "--interconnect")) if kind is not None else None
    rate = number(gbytes_per_s, "--node-bandwidth", 0, 10_000)
    return NodePlan(
        nodes=nodes,
        gpus_per_node=per_node,
        link=node_link(gpu, link_kind, rate, per_node),
        asked_kind=link_kind,
        asked_gbytes_per_s=rate,
    )


def gpu_count(value: int | None) -> int | None:
    if value is not None and value not in TP_SIZES:
        raise UsageError(f"invalid --gpus {value}: one server runs 1, 2, 4 or 8 GPUs")
    return value


#: Catalogs and parsed models kept for the rows of one batch (`reuse()`); None outside a batch.
_REUSED: ContextVar[dict[tuple[object, ...], Any] | None] = ContextVar("gpusize_reused", default=None)


@contextlib.contextmanager
def reuse() -> Iterator[None]:
    """Within the block, each catalog set is read and each model resolved and parsed once: a batch of
    10,000 rows over a few models pays for the few (the values are frozen, so sharing is safe)."""
    token = _REUSED.set({})
    try:
        yield
    finally:
        _REUSED.reset(token)


def _reused(key: tuple[object, ...], make: Callable[[], _T]) -> _T:
    memo = _REUSED.get()
    if memo is None:
        return make()
    if key not in memo:
        memo[key] = make()
    value: _T = memo[key]
    return value


def find_gpu(cats: Catalogs, name: str) -> GpuSpec:
    """`cats.find_gpu(name)`, looked up once per batch (a row names its GPU twice: the engine's
    device check and the targets); a name not found is refused again on every row."""
    return _reused(("gpu", id(cats), name), lambda: cats.find_gpu(name))


def known_gpus(cats: Catalogs, names: Iterable[str]) -> None:
    """Within `reuse()`, the names a user catalog holds looked up together (`Catalogs.found_gpus`),
    kept for `find_gpu`: 1,000 --gpu names read the catalogs once."""
    memo = _REUSED.get()
    if memo is None:
        return
    wanted = list(dict.fromkeys(names))
    for name, gpu in zip(wanted, cats.found_gpus(wanted), strict=True):
        if gpu is not None:
            memo.setdefault(("gpu", id(cats), name), gpu)


def all_gpus(cats: Catalogs) -> tuple[GpuSpec, ...]:
    """`cats.gpus()`, read once per batch (each read checks the catalog files' identities: three
    `stat` calls a row of a batch)."""
    return _reused(("gpus", id(cats)), cats.gpus)


def catalogs(models_files: list[str] | None, gpus_files: list[str] | None) -> Catalogs:
    key = ("catalogs", tuple(models_files or ()), tuple(gpus_files or ()))
    return _reused(key, lambda: _read_catalogs(models_files, gpus_files))


def _read_catalogs(models_files: list[str] | None, gpus_files: list[str] | None) -> Catalogs:
    for path in [*(models_files or []), *(gpus_files or [])]:
        if not Path(path).is_file():
            raise CatalogError(f"{safe(path[:200])}: no such catalog file")
    cats = Catalogs.with_env([Path(p) for p in models_files or []], [Path(p) for p in gpus_files or []])
    for shadow in cats.shadows():
        warn(shadow.message)
    return cats


@contextlib.contextmanager
def progress(message: str) -> Iterator[None]:
    """One status line on stderr while the network is used, cleared after; silent off a terminal."""
    stream = sys.stderr  # None when the process started with stderr closed
    shown = stream is not None and stream.isatty()
    if shown:
        write_stderr(f"{safe(message)}...")
    try:
        yield
    finally:
        if shown:
            write_stderr("\r\x1b[K")


def load_model(
    reference: str, revision: str | None, best_effort: bool, cats: Catalogs, rope_scaling: str | None = None
) -> tuple[ResolvedModel, ModelSpec]:
    key = ("model", reference, revision, best_effort, id(cats), rope_scaling)
    return _reused(key, lambda: _load_model(reference, revision, best_effort, cats, rope_scaling))


def _load_model(
    reference: str, revision: str | None, best_effort: bool, cats: Catalogs, rope_scaling: str | None
) -> tuple[ResolvedModel, ModelSpec]:
    # `which` plans the catalog's stored specs and reads no model (bench/RESULTS.md, issue 24):
    # start-up: the parser and the resolver are imported where a command reads one
    from gpusize.core.parse import parse_config
    from gpusize.sources.resolve import resolve_model

    resolved = resolve_model(reference, revision, cats, progress)
    where = "config.json" if resolved.source != "gguf" else "GGUF metadata"
    spec = parse_config(resolved.config, best_effort=best_effort, where=where)
    return resolved, rope_scaled(spec, rope_scaling)


def engine_settings(values: EngineValues, default: EngineName = "vllm") -> EngineSettings:
    """The engine settings a command line gives, each checked against its declaration; `default` is
    the engine when --engine is not given. Within a batch, equal values give the one settings value
    (its hash, kept on it, is then computed once for every row that shares it, not once a row)."""
    try:
        # with each value's type: 1, 1.0 and True are equal keys, not equal command lines; in the
        # values' order (a batch's rows give them in one order: built without a sort, a tenth of
        # binding a row)
        key = ("settings", default, tuple(values.items()), tuple(map(type, values.values())))
        hash(key)
    except TypeError:  # a value that is not hashable: read afresh
        return settings_from(values, default)
    return _reused(key, lambda: settings_from(values, default))


def quantized_dtype(spec: ModelSpec, quantization: str | None, dtype: str) -> str:
    """The weight dtype a `--quantization` value means (vLLM/SGLang names): fp8 quantizes on the fly,
    bitsandbytes quantizes to 4 bits while loading; a checkpoint method must be the checkpoint's own."""
    if quantization is None:
        return dtype
    method = quantization.strip().lower()
    if method in ("none", ""):
        return dtype
    if dtype != "auto":
        raise UsageError("give --quantization or --dtype, not both")
    if method == "fp8":
        return "auto" if spec.quantization and spec.quantization.method == "fp8" else "fp8"
    if method == "bitsandbytes":
        return "auto" if spec.quantization and spec.quantization.method == "bitsandbytes" else "int4"
    own = spec.quantization.method if spec.quantization else None
    if method.split("_")[0] == own:
        return "auto"
    has = f"a {own} checkpoint" if own else "an unquantized checkpoint"
    raise UsageError(
        f"--quantization {safe(method[:30])} needs a checkpoint stored that way; this is {has}: "
        "pass its pre-quantized variant, or --quantization fp8 / bitsandbytes to quantize while loading"
    )


def rope_scaled(spec: ModelSpec, rope: str | None) -> ModelSpec:
    """The spec with `--rope-scaling yarn:FACTOR[:ORIGINAL]` applied."""
    if rope is None:
        return spec
    parts = rope.strip().lower().split(":")
    try:
        if len(parts) > 3:
            raise ValueError("an extra field")
        kind, factor = parts[0], float(parts[1])
        original = int(parts[2]) if len(parts) > 2 else None
    except (IndexError, ValueError):
        raise UsageError(
            f"invalid --rope-scaling {safe(rope[:40])!r}: use yarn:FACTOR[:ORIGINAL], e.g. yarn:4"
        ) from None
    if (
        kind not in ("yarn", "dynamic", "linear")
        or not 1 < factor <= 64
        or (original is not None and original <= 0)
    ):
        raise UsageError(
            f"invalid --rope-scaling {safe(rope[:40])!r}: yarn, dynamic or linear, factor in (1, 64]"
        )
    from gpusize.core.parse import with_rope_scaling  # start-up: only with --rope-scaling

    return with_rope_scaling(spec, kind, factor, original)


def request(
    resolved: ResolvedModel,
    spec: ModelSpec,
    ctx: str | None,
    engine_values: EngineValues,
    *,
    batch: int = 1,
    dtype: str = "auto",
    kv_dtype: str = "auto",
    mtp: bool = False,
    quantization: str | None = None,
    reserved_mib: int = 0,
    cats: Catalogs | None = None,
    acceptance_rate: float | None = None,
    gpus: Sequence[str | None] = (),
    turn: int | None = None,
) -> Request:
    """The request of a command's flags; `turn`: one request's prompt + output tokens where the
    command serves a load (serve, quote), which the context must hold (`context_tokens`)."""
    weight = weight_dtype(dtype)
    if weight == "auto" and resolved.ollama_tag and resolved.file_type:
        weight = weight_dtype(resolved.file_type)  # the quantization the Ollama tag ships
    if weight in DTYPES:
        weight = quantized_dtype(spec, quantization, weight)
    devices = _devices(gpus, cats)
    plain = "ollama" if resolved.ollama_tag else "llamacpp" if resolved.source == "gguf" else "vllm"
    default = device_engine(plain, devices)
    settings = engine_settings(engine_values, default)
    engine_on_devices(settings.name, devices)
    return Request(
        context_tokens=context_tokens(ctx, spec, turn),
        batch=parse_count(batch, "--batch", 1 << 16),
        dtype=weight,
        kv_dtype=kv_dtype.strip().lower(),  # the engine checks it (llama.cpp has its own names)
        include_mtp=mtp,
        engine=settings,
        draft=draft_model(settings, cats),
        acceptance_rate=number(acceptance_rate, "--acceptance-rate", 0, 1, low_open=False),
        checkpoint_bytes=resolved.checkpoint_bytes,
        stored_layers=resolved.stored_layers,
        reserved_bytes=reserved_bytes(reserved_mib),
        load_quantization=load_quantization(spec, quantization, weight),
    )


def context_tokens(ctx: str | None, spec: ModelSpec, turn: int | None = None) -> int:
    """--ctx in tokens; not given, DEFAULT_CONTEXT_TOKENS, or the model's max_position_embeddings
    where that is shorter (said on stderr): the default is gpusize's, and sizing it past the model
    would only repeat the engine's refusal of a context the user never asked for.

    `turn` (one request's prompt + output, serve and quote): a context that cannot hold it is
    refused when --ctx gives it (vLLM and SGLang reject a request whose prompt plus max_tokens passes
    max_model_len / context_length), and the default grows to hold it (said on stderr): the plan's KV
    per sequence and its speed are then sized for the requests asked about, not silently for shorter
    ones."""
    request = f"a request of {turn:,} tokens (--prompt-tokens + --output-tokens)" if turn else ""
    if ctx is not None:
        tokens = parse_tokens(ctx)
        if turn is not None and turn > tokens:
            raise UsageError(
                f"{request} does not fit the {tokens:,}-token context (--ctx): the engine refuses it; "
                "raise --ctx or shorten the request"
            )
        return tokens
    longest = spec.max_position_embeddings
    if turn is not None and longest and turn > longest:
        raise UsageError(
            f"{request} is longer than the model's {longest:,}-token max_position_embeddings: the engine "
            "refuses it"
        )
    if turn is not None and turn > DEFAULT_CONTEXT_TOKENS:
        warn(
            f"--ctx not given: sized at {turn:,} tokens, one request's prompt + output "
            f"(the default, {DEFAULT_CONTEXT_TOKENS:,}, cannot hold it); pass --ctx to choose"
        )
        return turn
    if longest and longest < DEFAULT_CONTEXT_TOKENS:
        warn(
            f"--ctx not given: sized at {longest:,} tokens, the model's max_position_embeddings "
            f"(the default, {DEFAULT_CONTEXT_TOKENS:,}, is past it); pass --ctx to choose"
        )
        return longest
    return DEFAULT_CONTEXT_TOKENS


def _devices(names: Sequence[str | None], cats: Catalogs | None) -> list[GpuSpec]:
    """The catalog GPUs named by --gpu (not 'local'; an unknown name is left to `targets` to refuse)."""
    found = []
    for name in names:
        if name and name.strip().lower() != "local":
            try:
                found.append(find_gpu(cats or Catalogs.with_env(), name))
            except GpusizeError:
                continue
    return found


def engine_on_devices(name: EngineName, devices: Sequence[GpuSpec]) -> None:
    """Refuse (exit 2) an engine that does not run on a named device, naming what does."""
    for gpu in devices:
        if gpu.engines and name not in gpu.engines:
            refusal = f"{engine(name).label} does not run on {gpu.full_name}; {runs_on(gpu)}"
            raise UsageError(f"--engine {name}: {refusal}")


def device_engine(default: EngineName, devices: Sequence[GpuSpec]) -> EngineName:
    """The engine when --engine is not given: `default`, unless a named device runs only other engines
    (Apple M-series: llama.cpp), then the first engine every such device runs."""
    limited = [g for g in devices if g.engines]
    if not limited or all(default in g.engines for g in limited):
        return default
    shared = [e for e in limited[0].engines if all(e in g.engines for g in limited)]
    return shared[0] if shared else default


def draft_model(settings: EngineSettings, cats: Catalogs | None) -> DraftModel | None:
    """The draft model speculative decoding names (vLLM --speculative-config "model", SGLang
    --speculative-draft-model-path), read as any model is (a folder, a catalog name, a Hub id); its
    lm_head has EAGLE-3's draft_vocab_size rows where the config gives one."""
    reference = draft_reference(settings)
    if reference is None:
        return None
    if cats is None:
        raise UsageError("this command does not read a draft model")
    try:
        resolved, spec = load_model(reference, None, False, cats)
    except UnknownNameError as exc:
        raise InputError(f"draft model: {exc}") from None
    rows = resolved.config.get("draft_vocab_size") if isinstance(resolved.config, dict) else None
    return DraftModel(reference, spec, rows if isinstance(rows, int) and rows > 0 else spec.vocab_size)


def load_quantization(spec: ModelSpec, quantization: str | None, weight: str) -> str | None:
    """ "bitsandbytes" when --quantization bitsandbytes asks the engine to quantize a 16-bit checkpoint
    while loading (the weight dtype it means is then int4), else None."""
    method = (quantization or "").strip().lower()
    return "bitsandbytes" if method == "bitsandbytes" and weight == "int4" else None


def reserved_bytes(mib: int) -> int:
    """--reserved-mib in bytes (memory a desktop or other processes hold on each GPU)."""
    if not 0 <= mib <= 1 << 24:
        raise UsageError(f"invalid --reserved-mib {mib}: MiB from 0")
    return mib * (1 << 20)


def workload(spec: ModelSpec, req: Request) -> Workload:
    work = prepare_workload(spec, req)
    if work.checkpoint_warning:
        warn(work.checkpoint_warning)
    return work


class Targets:
    """The GPU types to plan over and the most GPUs one server of them may hold."""

    def __init__(self, gpus: list[GpuSpec], max_count: int, local_count: int | None) -> None:
        self.gpus, self.max_count, self.local_count = gpus, max_count, local_count


def targets(name: str | None, cats: Catalogs, wanted: int | None = None) -> Targets:
    """A catalog GPU, every catalog GPU (None), or `local`: this machine's GPUs, whose count bounds
    --gpus (asking for 8 on a machine with one is an error, not a plan)."""
    if not name:
        return Targets(list(all_gpus(cats)), 8, None)
    if name.strip().lower() != "local":
        gpu = find_gpu(cats, name)
        # a MIG slice: as many as one GPU holds, as replicas; a unified-memory machine: one
        return Targets([gpu], (gpu.mig_per_gpu or 1) if gpu.one_device else 8, None)
    # start-up: runs nvidia-smi (subprocess, shutil: 4 ms of start-up), so loaded only for --gpu local
    from gpusize.sources import local_gpu

    spec, count = local_gpu.local_spec(local_gpu.detect(), cats)
    if wanted is not None and wanted > count:
        raise InputError(
            f"--gpu local: this machine has {count} {safe(spec.full_name)} GPU(s); --gpus {wanted} asks "
            "for more"
        )
    return Targets([spec], max(n for n in TP_SIZES if n <= count), count)


def disaggregation(engine_name: str, most_gpus: int) -> None:
    """Refuse --disaggregate where it has nothing to split: an engine without tensor-parallel pools
    (llama.cpp's layer split, Ollama), or fewer than 2 GPUs (one prefill and one decode pool)."""
    model = engine(engine_name)
    if model.splits_layers or model.budget is None:
        raise UsageError(
            f"--disaggregate splits tensor-parallel engines into pools; --engine {engine_name} has none"
        )
    if most_gpus < 2:
        raise UsageError("--disaggregate needs at least 2 GPUs: one prefill and one decode pool")
