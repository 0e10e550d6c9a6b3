"""The workload: what the user asked for, resolved once against the model (pure).

A `Request` holds the raw choices (dtype names, engine settings under the engines' own flag names);
`resolve` turns it into a `Workload` whose weight format, KV element size and engine settings every
engine and report reads as they are, so no two places resolve "dtype auto" differently. An engine
rejects a setting it does not use (InputError, exit 2) instead of echoing it.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import field, fields

from gpusize.core.gguf_quant import ftype_name
from gpusize.core.releases import Release, Releases
from gpusize.core.settings import (
    ATTN_IMPLEMENTATIONS,
    ENGINE_NAMES,
    SETTING_FLAGS,
    SPLIT_MODES,
    TRANSFORMERS_VERSIONS,
    EngineName,
    EngineSettings,
    taken_by,
)
from gpusize.core.spec import ModelSpec
from gpusize.core.speculative import DraftModel, speculation
from gpusize.core.weights import (
    StoredLayers,
    WeightFormat,
    activation_dtype,
    bits_per_weight,
    checkpoint_agreement,
    weight_format,
)
from gpusize.dataclass import dataclass, kept_hash, replace
from gpusize.errors import InputError
from gpusize.units import DTYPE_BYTES, canonical_dtype

__all__ = [
    "DTYPES",
    "weight_dtype",
    "ENGINE_NAMES",
    "KV_DTYPES",
    "SPLIT_MODES",
    "ATTN_IMPLEMENTATIONS",
    "TRANSFORMERS_VERSIONS",
    "EngineName",
    "EngineSettings",
    "Request",
    "StoredLayers",
    "Workload",
    "refuse_foreign_settings",
    "kv_dtype_for",
    "resolve",
]

DTYPES = ("auto", "fp32", "bf16", "fp16", "fp8", "int8", "int4")
KV_DTYPES = ("auto", "fp32", "bf16", "fp16", "fp8")


@dataclass(frozen=True, kw_only=True)
class Request:
    """What the user asked for, before it is resolved against the model."""

    context_tokens: int
    batch: int = 1
    dtype: str = "auto"  # one of DTYPES
    kv_dtype: str = "auto"  # one of KV_DTYPES
    include_mtp: bool = False
    engine: EngineSettings = EngineSettings()
    #: Exact bytes of the stored tensors (safetensors headers / GGUF), when the source told us.
    checkpoint_bytes: int | None = None
    stored_layers: StoredLayers | None = None
    #: Memory other processes hold on each GPU (a desktop, another server), in bytes.
    reserved_bytes: int = 0
    #: The method the engine quantizes a 16-bit checkpoint with while loading (`--quantization
    #: bitsandbytes`: 4-bit), when that is how the weight dtype is reached; None otherwise.
    load_quantization: str | None = None
    #: The draft model speculative decoding names (vLLM --speculative-config "model", SGLang
    #: --speculative-draft-model-path), parsed by the command line; None without one.
    draft: DraftModel | None = None
    #: Speculative decoding's stated acceptance rate (--acceptance-rate): the chance each proposed
    #: token is accepted, which the speed estimates take; None: the speed-up is not estimated.
    acceptance_rate: float | None = None


@dataclass(frozen=True, kw_only=True)
class Workload:
    """A request resolved against one model: every engine and report reads these values as they are."""

    context_tokens: int
    batch: int
    #: auto (the checkpoint's own storage) or the dtype the user forced.
    requested_dtype: str
    weights: WeightFormat = field(metadata={"json": False})
    kv_cache_dtype: str
    kv_bytes: float = field(metadata={"json": False})
    include_mtp: bool
    #: The --kv-dtype asked (`auto` or a dtype): where an engine's `auto` depends on the GPU (SGLang's
    #: fp8 for DeepSeek Sparse Attention on Blackwell), `core.engines.on_gpu` resolves it per GPU.
    requested_kv_dtype: str = field(default="auto", metadata={"json": False})
    engine: EngineSettings
    #: The engine release modelled (a version the user named, or the newest gpusize models).
    release: Release = field(metadata={"json": False})
    #: Memory other processes hold on each GPU (--reserved-mib), in bytes.
    reserved_bytes: int = 0
    #: Stored bytes / config arithmetic, when the checkpoint disagreed by more than 1% (else None).
    checkpoint_warning: str | None = field(default=None, metadata={"json": False})
    stored_layers: StoredLayers | None = field(default=None, metadata={"json": False})
    #: As in Request: the engine quantizes while loading with this method (bitsandbytes), or None.
    load_quantization: str | None = field(default=None, metadata={"json": False})
    #: As in Request: the draft model of speculative decoding, or None.
    draft: DraftModel | None = field(default=None, metadata={"json": False})
    #: As in Request: the stated acceptance rate of speculative decoding, or None.
    acceptance_rate: float | None = None

    __json_properties__ = ("weight_dtype", "engine_version")

    @property
    def weight_dtype(self) -> str:
        return self.weights.name

    @property
    def engine_version(self) -> str | None:
        """The release modelled, e.g. "0.19.1"; None for an engine whose releases are not told apart."""
        return str(self.release.version) if self.release.engine else None

    @property
    def uses_checkpoint_blocks(self) -> bool:
        """True when the weights are the checkpoint's own (dtype auto), so its FP8 blocks constrain TP."""
        return self.requested_dtype == "auto"

    def __hash__(self) -> int:
        """The hash of the fields (the dataclass's own), computed once per workload (kept in its
        __dict__, as ModelSpec keeps its hash): each engine's evaluation cache hashes the workload of
        every plan a fit tries (bench/RESULTS.md, batch). Equal workloads hash equal."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _WORKLOAD_VALUES) if known is None else known

    def with_context(self, context_tokens: int, batch: int | None = None) -> Workload:
        """The same workload at another context (and batch): what a curve or a search varies."""
        return replace(self, context_tokens=context_tokens, batch=self.batch if batch is None else batch)


_WORKLOAD_FIELDS = tuple(f.name for f in fields(Workload))
_WORKLOAD_VALUES = operator.attrgetter(*_WORKLOAD_FIELDS)


def kv_dtype_for(spec: ModelSpec, requested: str, weight_dtype: str) -> str:
    """The KV cache dtype: `auto` follows the activation dtype, as vLLM and SGLang do (fp32 weights
    served in fp32 keep an fp32 cache; quantized weights compute, and cache, in bf16)."""
    if requested != "auto":
        return requested
    if weight_dtype in ("fp32", "bf16", "fp16"):
        return weight_dtype
    return activation_dtype(spec)


def refuse_foreign_settings(settings: EngineSettings, uses: frozenset[str]) -> None:
    """Refuse (InputError) the first setting given that the engine, which reads `uses`, does not:
    another engine's flag is never taken as if used."""
    unused = [s for s in settings.given() if s not in uses]
    if unused:
        flag, owner = SETTING_FLAGS[unused[0]]
        raise InputError(
            f"{flag} is a setting of --engine {owner} and does not apply to --engine {settings.name}: "
            f"pass --engine {owner}, or remove it"
        )


def resolve(
    spec: ModelSpec,
    request: Request,
    uses: frozenset[str],
    releases: Releases,
    own_kv: Mapping[str, float] | None = None,
    kv_default: str | None = None,
) -> Workload:
    """Resolve `request` for `spec` under an engine that reads the settings named in `uses` and whose
    modelled releases are `releases`; `own_kv` are the engine's own KV cache type names (llama.cpp's
    q8_0, q4_0, ...) with their bytes per element, `kv_default` the type it uses when none is asked."""
    own = own_kv or {}
    refuse_foreign_settings(request.engine, uses)
    if request.dtype not in DTYPES and not _is_bpw(request.dtype) and ftype_name(request.dtype) is None:
        raise InputError(_unknown_dtype(request.dtype))
    if request.kv_dtype not in KV_DTYPES and request.kv_dtype not in own:
        names = ", ".join((*KV_DTYPES, *(k for k in own if k not in KV_DTYPES)))
        raise InputError(f"unknown --kv-dtype '{request.kv_dtype[:40]}'; use one of {names}")
    release = releases.resolve(request.engine.version)
    missing = [s for s in request.engine.given() if not taken_by(s, release.version)]
    if missing:
        flag, _ = SETTING_FLAGS[missing[0]]
        raise InputError(f"{flag} does not exist in {release.label}: pass a later --engine-version")
    drafting = speculation(request.engine, spec)  # InputError on a value the engine refuses
    if drafting is not None and drafting.needs_draft and request.draft is None:
        raise InputError(f"{drafting.flag}: the draft model {drafting.draft!r} was not read")
    if request.acceptance_rate is not None and drafting is None:
        raise InputError(
            "--acceptance-rate needs speculative decoding (--speculative-config or --speculative-algorithm)"
        )
    fmt, warning = _weights(spec, request)
    asked = kv_default if request.kv_dtype == "auto" and kv_default else request.kv_dtype
    kv_dtype = asked if asked in own else kv_dtype_for(spec, asked, request.dtype)
    return Workload(
        context_tokens=request.context_tokens,
        batch=request.batch,
        requested_dtype=request.dtype,
        weights=fmt,
        kv_cache_dtype=kv_dtype,
        kv_bytes=own[kv_dtype] if kv_dtype in own else DTYPE_BYTES[kv_dtype],
        include_mtp=request.include_mtp,
        requested_kv_dtype=request.kv_dtype,
        engine=request.engine,
        release=release,
        reserved_bytes=request.reserved_bytes,
        checkpoint_warning=warning,
        stored_layers=request.stored_layers,
        load_quantization=request.load_quantization,
        draft=request.draft,
        acceptance_rate=request.acceptance_rate,
    )


def weight_dtype(text: str) -> str:
    """A `--dtype` as gpusize names it: one of DTYPES (any spelling units.DTYPE_ALIASES knows), bpwN,
    or a GGUF file type ('q4_k_m' -> 'Q4_K_M', core/gguf_quant.FTYPES). Raises InputError naming
    the choices."""
    key = text.strip()
    ftype = ftype_name(key)
    if ftype is not None:
        return ftype
    if key.lower().startswith("bpw"):
        _is_bpw(key.lower())
        return key.lower()
    if key.lower() == "auto":
        return "auto"
    try:
        name = canonical_dtype(key)
    except InputError:
        raise InputError(_unknown_dtype(key)) from None
    if name not in DTYPES:
        raise InputError(_unknown_dtype(key))
    return name


def _unknown_dtype(text: str) -> str:
    shown = ascii(text[:40])[1:-1]
    return (
        f"unknown --dtype '{shown}'; use one of {', '.join(DTYPES)}, bpwN (e.g. bpw2.5) or a GGUF type "
        "(Q4_K_M, Q8_0, Q6_K, Q5_K_M, IQ4_XS, MXFP4, ...)"
    )


def _is_bpw(dtype: str) -> bool:
    try:
        return bits_per_weight(dtype) is not None
    except ValueError as exc:
        raise InputError(f"invalid --dtype '{dtype[:40]}': {exc}") from None


def _weights(spec: ModelSpec, request: Request) -> tuple[WeightFormat, str | None]:
    """The weight format, corrected by the checkpoint's stored bytes when dtype is auto."""
    fmt = weight_format(spec, request.dtype)
    if not request.checkpoint_bytes or request.dtype != "auto":
        return fmt, None
    scale, warning = checkpoint_agreement(spec, fmt, request.checkpoint_bytes)
    if request.stored_layers is not None:
        # A GGUF file's tensors ARE the weights (Q4_K_M stores about 0.3x the bf16 arithmetic): no
        # disagreement to warn about; a note ("weights are the file's tensor bytes") says where they
        # come from.
        warning = None
    return replace(fmt, checkpoint_scale=scale), warning
