"""What every engine memory model declares (pure): its name, the version it follows, the settings it
reads (any other is refused), and its fit test."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field

from gpusize.core.gpu import GpuSpec
from gpusize.core.levers import NO_LEVERS, Levers
from gpusize.core.plan import Candidate, Evaluator
from gpusize.core.releases import Releases, Version
from gpusize.core.settings import ENGINE_LABELS, EngineName, settings_of
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import EngineSettings, Workload
from gpusize.dataclass import dataclass

__all__ = [
    "Budget",
    "ContextRefusal",
    "EffectiveSettings",
    "EngineModel",
    "AttentionGroups",
    "WithAttentionDp",
    "HostSequences",
    "HostWeights",
    "LaunchTp",
    "ModelNotes",
    "NodesEvaluator",
    "SequenceCap",
    "UNVERSIONED",
]

#: The settings an engine runs with for one plan (the user's, else its defaults), under the engine's own
#: option names: what a person passes to reproduce the plan.
EffectiveSettings = Callable[[ModelSpec, GpuSpec, int, Workload], dict[str, float | int | str]]


#: The engine's refusal to start for a context above the model's maximum, or for settings it refuses
#: together (llama.cpp: a quantized V cache without flash attention), as its own message; or None.
ContextRefusal = Callable[[ModelSpec, Workload], str | None]

#: Why the engine's settings cannot run on this GPU (llama.cpp's CUDA build on an AMD GPU), or None.
DeviceRefusal = Callable[[GpuSpec, Workload], str | None]

#: The fraction of each GPU the engine budgets for a plan of `tp` GPUs (vLLM's gpu_memory_utilization,
#: SGLang's mem_fraction_static): what its launch command passes; None where the command leaves the
#: engine's own default (vLLM 0.34's extensible KV cache: `core/engines/vllm/extensible.py`).
Budget = Callable[[ModelSpec, GpuSpec, int, Workload], float | None]

#: The most sequences the engine's scheduler runs at once on `gpu` (its own cap, before the KV pool's).
SequenceCap = Callable[[GpuSpec, Workload], int]

#: A plan across `nodes` servers (the engine's multi-node layout), for --nodes.
#: (spec, GPU, servers, workload, GPUs in each server) -> the plan of one engine over those servers.
NodesEvaluator = Callable[[ModelSpec, GpuSpec, int, Workload, int], Candidate]

#: Notes the engine adds about how it holds this model (a rule the answer depends on).
ModelNotes = Callable[[ModelSpec, Workload], tuple[str, ...]]


#: Weight bytes per GPU the engine keeps in host memory for a plan of `tp` GPUs and copies to the GPU
#: every forward pass (vLLM's and SGLang's --cpu-offload-gb); 0 when it keeps none.
HostWeights = Callable[[ModelSpec, Workload, int], int]
#: Whether a decode step's per-sequence host work (scheduling, input preparation, output processing)
#: overlaps the GPU's step on this GPU (vLLM's async scheduling), not added to it.
OverlapsHostWork = Callable[[Workload, GpuSpec], bool]
#: Attention data parallel in a plan of `tp` GPUs (SGLang's --enable-dp-attention --dp-size,
#: TensorRT-LLM's enable_attention_dp): (groups, bytes): each of `groups` groups attends to its own
#: requests on tp / groups GPUs while the MoE and MLP layers stay on all tp, and each GPU reads
#: `bytes` of weights a step beyond its tensor-parallel slice (the attention projections, and what
#: else the engine replicates). (1, 0.0): plain tensor parallel.
AttentionGroups = Callable[[ModelSpec, Workload, int], tuple[int, float]]
#: The workload with data-parallel attention over a plan's `tp` GPUs and the flags that say it, where
#: the engine and its release have it and the user has not set it; None otherwise.
WithAttentionDp = Callable[[Workload, int], "tuple[Workload, str] | None"]

#: Sequences whose per-sequence host work (scheduling, input preparation, output processing) one
#: decode step of `sequences` waits on, the busiest attention group holding `local` of them: `local`
#: where every group has its own front end, all of them where one process serves every group.
HostSequences = Callable[[Workload, int, int], int]
#: The tensor-parallel size the engine's launch command gives a plan of `n` GPUs of one server: n,
#: or each data-parallel rank's where the engine counts ranks apart (vLLM's --data-parallel-size).
LaunchTp = Callable[[Workload, int], int]


def _one_group(spec: ModelSpec, work: Workload, tp: int) -> tuple[int, float]:
    return 1, 0.0


def _all_gpus(work: Workload, n: int) -> int:
    return n


def _busiest_group(work: Workload, sequences: int, local: int) -> int:
    return local


def _no_host_weights(spec: ModelSpec, work: Workload, tp: int) -> int:
    return 0


def _no_notes(spec: ModelSpec, work: Workload) -> tuple[str, ...]:
    return ()


def _none(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> dict[str, float | int | str]:
    return {}


def _accepts(spec: ModelSpec, work: Workload) -> str | None:
    return None


#: Engines whose releases gpusize does not tell apart have one "release", the one its model follows.
UNVERSIONED = Releases("", ("0.0.0",))


@dataclass(frozen=True)
class AcrossServers:
    """How an engine's launch command runs ONE engine over several servers (serve --nodes), as the
    engine's own docs start it; `{n}` servers, `{local}` GPUs each, `{ep}` the data-parallel x
    expert-parallel group in the templates.

    - `pipeline_flag`: the flag of its pipeline stages beside --tensor-parallel-size;
    - `expert_flags`: what its command adds for data-parallel attention with expert parallel, one
      rank a GPU; None: gpusize does not write that launch (`expert_why` says why);
    - `expert_servers`, `spanning_servers`: what each server adds to (or how it starts) the command,
      for the DP x EP layout and for TP x PP or TP over all."""

    pipeline_flag: str
    expert_flags: tuple[str, ...] | None
    expert_servers: str
    spanning_servers: str
    expert_why: str = ""


@dataclass(frozen=True, kw_only=True)
class EngineModel:
    """What an engine is, asked by name nowhere else: its memory model and what it can do."""

    name: EngineName
    #: The release whose behaviour the model follows, as printed in assumptions and JSON.
    version: str
    #: One line on how the engine budgets memory, for the assumptions.
    note: str
    evaluate: Evaluator
    effective_settings: EffectiveSettings = _none
    releases: Releases = UNVERSIONED
    refuses_context: ContextRefusal = _accepts
    #: Refuses a plan on a GPU its settings cannot run on, before any arithmetic (`core.engines.on_device`).
    refuses_device: DeviceRefusal | None = None
    #: The build a plan runs on a GPU, where the engine's speed depends on it (llama.cpp's backend:
    #: "cuda", "rocm", "vulkan", "metal"; serving/calibrated.py fits constants per build); None: one build.
    build: Callable[[EngineSettings, GpuSpec], str] | None = None
    #: The builds as text names them ("Metal").
    build_labels: Mapping[str, str] = field(default_factory=dict)
    #: The GPU vendor each build runs on (None: any GPU with a driver for it, llama.cpp's Vulkan), for
    #: the deployment manifests (serving/devices.py: a vendor's image runs its own build only).
    build_vendors: Mapping[str, str | None] = field(default_factory=dict)
    #: What a fix suggestion may change on this engine (core/levers.py), declared by its module.
    levers: Levers = NO_LEVERS
    #: KV cache types under the engine's own names (llama.cpp's f16, q8_0, q4_0, ...) -> bytes per
    #: element, accepted by --kv-dtype beside the shared names; empty: the shared names only.
    kv_cache_types: Mapping[str, float] = field(default_factory=dict)
    #: The KV cache type the engine uses when none is asked (llama.cpp: f16); None: the activation
    #: dtype, as vLLM and SGLang do.
    kv_default: str | None = None
    #: The KV cache type `auto` means for one model in one release on one GPU (None: before a GPU is
    #: chosen), where it is not `kv_default` (vLLM 0.11.0: fp8_ds_mla for DeepSeek-V3.2 on any GPU;
    #: SGLang: fp8_e4m3 for DeepSeek Sparse Attention on compute capability 10 and above); None:
    #: `kv_default` for every model. The one place an engine says what `auto` means (`core.engines`
    #: `prepare` asks it without a GPU, `on_gpu` with the GPU a plan runs on).
    model_kv_default: Callable[[ModelSpec, Version, GpuSpec | None], str | None] | None = None
    #: Its budget fraction of each GPU (None: it takes what the model needs, no fraction).
    budget: Budget | None = None
    #: Its scheduler's cap on sequences at once (None: the KV cache alone bounds them).
    max_sequences: SequenceCap | None = None
    #: Prompt tokens its scheduler prefills in one step (vLLM's max_num_batched_tokens, SGLang's
    #: chunked prefill, TensorRT-LLM's max_num_tokens): prompts that arrive together share the steps
    #: of this budget and get their first tokens at the end of the step that holds their last chunk
    #: (serving/load.py). None: one prompt a step, as llama.cpp's slots are scheduled.
    prefill_budget: SequenceCap | None = None
    #: A server that shares one paged KV pool among requests (vLLM, SGLang): what quote, curve and
    #: which compare.
    pages_kv: bool = False
    #: Serves requests over HTTP (serve compares its layouts).
    serves: bool = False
    #: Spreads a model over GPUs by whole layers, offloading the rest to system RAM (llama.cpp's
    #: -ngl/-sm), not by tensor parallel.
    splits_layers: bool = False
    #: Quantizes a 16-bit checkpoint while loading (--quantization fp8), so which offers FP8 builds.
    quantizes_on_load: bool = False
    #: Its plan across several servers (--nodes), None when gpusize models none for it.
    nodes: NodesEvaluator | None = None
    notes: ModelNotes = _no_notes
    #: How the engine reuses a cached prompt prefix, as the assumptions state it (None: it has no
    #: prefix cache, so a --prefix-hit-rate is refused).
    prefix_cache: str | None = None
    #: Weight bytes per GPU read from host memory over PCIe every step (the speed estimates add them).
    host_weights: HostWeights = _no_host_weights
    #: How its launch command runs one engine across servers (serve --nodes); None: not written.
    across_servers: AcrossServers | None = None
    #: The engine's own serving benchmark run whose prompts and replies all have one length, which
    #: keeps its clients in step (`serving.load.Arrivals.synchronized`), as its command line asks for
    #: it: what `serve` names beside the in-step time to first token. None: no such run is named.
    fixed_length_benchmark: str | None = None
    #: Whether a decode step's per-sequence host work overlaps the GPU's step (`serving.throughput.
    #: decode_step`: the step is the longer of the two, not their sum). None: it never does.
    overlaps_host_work: OverlapsHostWork | None = None
    #: Attention data-parallel groups of a plan (`serving.throughput.decode_step`: each group reads
    #: its own sequences' KV cache and the attention weights at its own slice).
    attention_dp: AttentionGroups = _one_group
    #: Data-parallel attention as an alternative to a tensor-parallel plan (`serve` states it for
    #: MLA MoE models); None: the engine has none gpusize models.
    with_attention_dp: WithAttentionDp | None = None
    #: Its launch command's tensor-parallel size for a plan of n GPUs (`serving.launch`).
    launch_tp: LaunchTp = _all_gpus
    #: The sequences a decode step's host work is paid for under attention groups (`serving.
    #: throughput.decode_step`): the busiest group's by default.
    host_sequences: HostSequences = _busiest_group

    @property
    def label(self) -> str:
        """The engine as text names it ('vLLM', 'llama.cpp')."""
        return ENGINE_LABELS[self.name]

    @property
    def settings(self) -> frozenset[str]:
        """EngineSettings fields this engine reads (their declarations name it); `core.workload.resolve`
        refuses the others."""
        return settings_of(self.name)
