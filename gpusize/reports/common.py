"""What every report carries (pure): the model's facts and the price note built from the GPUs' own
price dates."""

from __future__ import annotations

from collections.abc import Iterable

from gpusize.core.gpu import GpuSpec
from gpusize.core.model import ResolvedModel
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings
from gpusize.dataclass import dataclass

__all__ = [
    "NOT_IN_SHEETS",
    "GpuFile",
    "ModelFacts",
    "device_notes",
    "speed_note",
    "gpu_file_notes",
    "gpu_files",
    "model_facts",
    "price_note",
]


@dataclass(frozen=True, kw_only=True)
class ModelFacts:
    """The model as a report shows it: where it came from and the architecture facts that decide sizing."""

    id: str
    name: str
    source: str  # catalog | local | hub | gguf
    revision: str | None
    checkpoint_bytes: int | None
    checkpoint_dtypes: dict[str, int] | None
    architecture: str
    model_type: str
    params_total: int
    params_active: int
    params_vision: int
    params_mtp: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    attention_layers: int
    sliding_window_layers: int
    vocab_size: int
    max_position_embeddings: int | None
    max_context_tokens: int | None

    #: One value per model and spec (`model_facts`): JSON Lines write its text once
    #: (`reports.serialize.json_lines`).
    __json_shared__ = True


#: Facts already made, by the identity of the model and spec they were made from (both kept, so the
#: ids stay theirs): every row of a batch over one model reads the same loaded values.
_FACTS: dict[tuple[int, int], tuple[ResolvedModel, ModelSpec, ModelFacts]] = {}
#: Facts kept at most (a batch names a few models; `which` a catalog's).
FACTS_KEPT = 256


def model_facts(resolved: ResolvedModel, spec: ModelSpec) -> ModelFacts:
    """The report's facts of the model: one value for the same loaded model and spec."""
    key = (id(resolved), id(spec))
    found = _FACTS.get(key)
    if found is not None and found[0] is resolved and found[1] is spec:
        return found[2]
    if len(_FACTS) >= FACTS_KEPT:
        _FACTS.clear()
    facts = _facts(resolved, spec)
    _FACTS[key] = (resolved, spec, facts)
    return facts


def _facts(resolved: ResolvedModel, spec: ModelSpec) -> ModelFacts:
    counts = spec.params
    return ModelFacts(
        id=resolved.id,
        name=resolved.catalog_name or resolved.id.rstrip("/").split("/")[-1],
        source=resolved.source,
        revision=resolved.revision,
        checkpoint_bytes=resolved.checkpoint_bytes,
        checkpoint_dtypes=resolved.checkpoint_dtypes,
        architecture=spec.architecture,
        model_type=spec.model_type,
        params_total=counts.total,
        params_active=counts.active,
        params_vision=counts.vision,
        params_mtp=counts.mtp,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        attention_layers=len(spec.attention_layers),
        # each distinct layer once, times its count (the layer walk was a hundredth of a batch row)
        sliding_window_layers=sum(n for layer, n in spec.attention_layer_counts if layer.window),
        vocab_size=spec.vocab_size,
        max_position_embeddings=spec.max_position_embeddings,
        max_context_tokens=spec.max_context,
    )


def price_note(gpus: Iterable[GpuSpec]) -> str:
    """Indicative prices, with the date(s) of the catalog entries actually shown."""
    dates = sorted({g.price_date for g in gpus if g.price_usd_per_hour and g.price_date})
    when = f"dated {', '.join(dates)}" if dates else "undated"
    return f"indicative cloud USD per GPU-hour ({when}); not a quote"


#: Field metadata of an assumption the Markdown/CSV/HTML sheets leave out (a note says it in words).
NOT_IN_SHEETS = {"sheet": False}


@dataclass(frozen=True)
class GpuFile:
    """A GPU of the answer that comes from a user catalog file (a bundled name may be shadowed)."""

    gpu: str
    file: str


def gpu_files(gpus: Iterable[GpuSpec]) -> tuple[GpuFile, ...]:
    """The GPUs shown that come from a user catalog file, each once, with the file as given."""
    seen: dict[str, GpuFile] = {}
    for g in gpus:
        if g.catalog_file is not None and g.name not in seen:
            seen[g.name] = GpuFile(g.name, g.catalog_file)
    return tuple(seen.values())


#: GPU names a note lists per user catalog file before "and N more" (a file may hold thousands).
_NAMES_PER_NOTE = 6


def device_notes(gpus: Iterable[GpuSpec], settings: EngineSettings | None = None) -> list[str]:
    """What a device says for itself: how much of a unified memory the GPU may use (and how to raise
    it), and, where speed is shown for an engine run with `settings`, what its speed figures stand on
    there (`speed_note`)."""
    notes = []
    for gpu in gpus:
        caveat = speed_note(gpu, settings) if settings is not None else None
        notes += [n for n in (gpu.memory_note, caveat) if n and n not in notes]
    return notes


def speed_note(gpu: GpuSpec, settings: EngineSettings) -> str | None:
    """What the speed figures of an engine run with `settings` stand on for `gpu`, where that is not
    the NVIDIA discrete GPUs' own fit (None there): a build's constants fitted on its own records
    (llama.cpp's Metal, Vulkan and ROCm builds), said only for a memory class none of them was
    measured on; the NVIDIA fit with ROCm's kernel floors on an AMD Instinct GPU, naming the GPUs
    those floors were fitted on; else the device's own caveat (`GpuSpec.speed_caveat`)."""
    if gpu.speed_caveat is None:
        return None
    # the speed model is imported only for a GPU with a caveat (AMD, Apple, unified memory)
    from gpusize.serving import calibrated  # noqa: PLC0415 - start-up: not on an NVIDIA card's path
    from gpusize.serving.throughput import build_of, memory_class  # noqa: PLC0415 - start-up: as above

    speed = calibrated.engine_speed(settings.name, build_of(settings, gpu))
    memory = memory_class(gpu)
    if speed.build is not None:  # the build's own constants (the CUDA build's are NVIDIA's fit)
        if speed.calibrated_for(memory):
            return None
        return (
            f"speed figures for {gpu.full_name} are uncalibrated: the constants of this build were "
            f"fitted on {speed.fitted_on}, none on {memory.upper()} memory"
        )
    if gpu.vendor == "AMD" and not gpu.unified_memory:
        fitted = ", ".join(calibrated.ROCM_FITTED_ON)
        none_here = "" if gpu.name in calibrated.ROCM_FITTED_ON else f", none on {gpu.name}"
        return (
            f"speed figures for {gpu.full_name}: the NVIDIA fit with ROCm's kernel floors "
            f"({calibrated.ROCM_KERNEL_FLOOR_FACTOR}x the per-layer and MoE-kernel costs), fitted on "
            f"{fitted} records{none_here}"
        )
    return gpu.speed_caveat


def gpu_file_notes(gpus: Iterable[GpuSpec]) -> list[str]:
    """One note per user catalog file the GPUs shown come from: "MyCard from ./my-gpus.yaml (user
    catalog)"; the JSON's `gpu_files` lists every GPU."""
    by_file: dict[str, list[str]] = {}
    for f in gpu_files(gpus):
        by_file.setdefault(f.file, []).append(f.gpu)
    notes = []
    for file, names in by_file.items():
        shown = ", ".join(names[:_NAMES_PER_NOTE])
        more = f" and {len(names) - _NAMES_PER_NOTE:,} more" if len(names) > _NAMES_PER_NOTE else ""
        notes.append(f"{shown}{more} from {file} (user catalog)")
    return notes
