"""Options declared once and shared by every command (typer `Annotated` aliases).

Names follow the engines' own flags where one exists (`--max-model-len`, `--tensor-parallel-size`,
`--kv-cache-dtype`, `--gpu-memory-utilization`, `--max-num-seqs`, `--mem-fraction-static`,
`--context-length`, `--n-gpu-layers`), so a user can paste their launch flags.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from gpusize.cli.declare import Argument, Option
from gpusize.core.releases import SGLANG, VLLM
from gpusize.core.settings import ENGINE_LABELS, EngineName, EngineSettings, Setting, declared
from gpusize.core.workload import DTYPES, KV_DTYPES
from gpusize.errors import GpusizeError
from gpusize.serving.targets import READING_TOKENS_PER_S
from gpusize.sources.catalog import Catalogs

__all__ = [
    "AcceptanceRate",
    "Batch",
    "BestEffort",
    "CatalogCtx",
    "Ctx",
    "DEFAULT_CONTEXT",
    "DEFAULT_CONTEXT_TOKENS",
    "Disaggregate",
    "Dtype",
    "Format",
    "GpuCount",
    "GpuName",
    "GpusFile",
    "Json",
    "MaxTtft",
    "MinTokensPerUser",
    "KvDtype",
    "Model",
    "ModelsFile",
    "Mtp",
    "NodeBandwidth",
    "Nodes",
    "NodeInterconnect",
    "PrefixHitRate",
    "Quantization",
    "Quiet",
    "ReservedMib",
    "Revision",
    "RopeScaling",
    "SheetFormat",
    "ShowAll",
    "EngineValues",
    "complete_gpu",
    "complete_model",
    "engine_options",
]

#: Most candidates one completion offers (the shell lists them all).
MAX_COMPLETIONS = 200


def _complete(names: list[tuple[str, ...]], incomplete: str) -> list[str]:
    """Per entry, the first of its names (name, then Hub id or aliases) that starts with what was typed,
    case-insensitively, completed after the user's own prefix (shells and typer keep only candidates
    that start with it; the catalog lookup ignores case)."""
    wanted = incomplete.lower()
    out = []
    for keys in names:
        hit = next((k for k in keys if k.lower().startswith(wanted)), None)
        if hit is not None:
            out.append(incomplete + hit[len(incomplete) :])
    return out[:MAX_COMPLETIONS]


def complete_model(incomplete: str) -> list[str]:
    """Shell completion of MODEL from the model catalogs (bundled + GPUSIZE_MODELS); a catalog that
    cannot be read completes nothing rather than failing in the shell."""
    try:
        models = Catalogs.with_env().models()
    except GpusizeError:
        return []
    return _complete([(m.name, m.hf_id, *m.aliases) for m in models], incomplete)


def complete_gpu(incomplete: str) -> list[str]:
    """Shell completion of --gpu from the GPU catalogs (bundled + GPUSIZE_GPUS), and `local`."""
    try:
        gpus = Catalogs.with_env().gpus()
    except GpusizeError:
        return []
    return _complete([("local",)] + [(g.name, *g.aliases) for g in gpus], incomplete)


Model = Annotated[
    str,
    Argument(
        help="A catalog name or alias (gpusize models), any Hugging Face Hub id (org/name), a local "
        "config.json or model folder, or a .gguf file. Example: Qwen3-32B",
        metavar="MODEL",
        show_default=False,
        autocompletion=complete_model,
    ),
]
#: The context a model is sized at when --ctx is not given (fit, serve, quote): this, or the model's
#: max_position_embeddings where that is shorter (an engine refuses a context past it: vLLM's
#: "User-specified max_model_len ... is greater than the derived max_model_len").
DEFAULT_CONTEXT_TOKENS = 8192
#: The same, as --ctx spells it (`which`'s default and the help).
DEFAULT_CONTEXT = f"{DEFAULT_CONTEXT_TOKENS // 1024}k"
#: The context option's names (vLLM's and Ollama's spellings beside gpusize's own).
CTX_FLAGS = ("--ctx", "--max-model-len", "--context-length")
CTX_HELP = "Context length per sequence: 8192, 32k, 128k, 1m (k = 1024)"
Ctx = Annotated[
    str | None,
    Option(
        *CTX_FLAGS,
        help=f"{CTX_HELP}; default {DEFAULT_CONTEXT}, or the model's max_position_embeddings where that "
        "is shorter.",
        show_default=False,
    ),
]
#: `which`'s context: one for every model of the catalog (a model whose positions stop short of it
#: does not fit, and says so).
CatalogCtx = Annotated[str, Option(*CTX_FLAGS, help=f"{CTX_HELP}.")]
Batch = Annotated[int, Option("--batch", help="Concurrent sequences at full context.")]
Dtype = Annotated[
    str,
    Option(
        "--dtype",
        help=f"Weights: {', '.join(DTYPES)} (auto = the checkpoint's own), bpwN for exactly N bits "
        "per weight (EXL2: bpw2.5), or a GGUF type with llama-quantize's mixture (Q4_K_M, Q8_0, "
        "IQ4_XS, MXFP4).",
    ),
]
KvDtype = Annotated[
    str,
    Option(
        "--kv-dtype",
        "--kv-cache-dtype",
        help=f"KV cache: {', '.join(KV_DTYPES)}; with --engine llamacpp also its own cache types "
        "(f16, q8_0, q4_0, ...).",
    ),
]
GpuName = Annotated[
    str | None,
    Option(
        "--gpu",
        help="A GPU type (gpusize gpus), or 'local' for this machine's GPUs.",
        autocompletion=complete_gpu,
    ),
]
GpuCount = Annotated[
    int | None,
    Option(
        "--gpus",
        "--tp",
        "--tensor-parallel-size",
        help="GPUs in one server: 1, 2, 4 or 8 (with --nodes, in each server).",
    ),
]
Quantization = Annotated[
    str | None,
    Option(
        "--quantization",
        help="As the engines take it: fp8 (on-the-fly FP8), bitsandbytes (in-flight 4-bit), or the "
        "checkpoint's own method (awq, gptq, compressed-tensors, mxfp4).",
    ),
]
RopeScaling = Annotated[
    str | None,
    Option(
        "--rope-scaling",
        help="Size with a rope scaling the config lacks: yarn:FACTOR[:ORIGINAL] (Qwen3 at 128k, as its model "
        "card says: yarn:4:32768); ORIGINAL defaults to the config's max_position_embeddings.",
    ),
]
ReservedMib = Annotated[
    int,
    Option(
        "--reserved-mib", help="Memory other processes hold on each GPU (a desktop, another server), MiB."
    ),
]
PrefixHitRate = Annotated[
    float,
    Option(
        "--prefix-hit-rate",
        help="Fraction of each prompt's tokens the engine's prefix cache serves (0-1; a workload "
        "input: shared system prompts, multi-turn chats). Prefill computes the rest; memory unchanged.",
    ),
]
PromptTokens = Annotated[
    str, Option("--prompt-tokens", help="Prompt tokens per request: its prefill and TTFT (default 1k).")
]
OutputTokens = Annotated[
    str, Option("--output-tokens", help="Output tokens per request: its turn of decode (default 256).")
]
MinTokensPerUser = Annotated[
    float,
    Option(
        "--min-tokens-per-s-per-user",
        help="Each user's decode speed floor, tok/s; layouts and options meeting it come first (default "
        f"{READING_TOKENS_PER_S:g}: about twice reading speed).",
    ),
]
MaxTtft = Annotated[
    float | None,
    Option("--max-ttft-s", help="Longest time to first token, s; layouts and options meeting it come first."),
]
AcceptanceRate = Annotated[
    float | None,
    Option(
        "--acceptance-rate",
        help="Speculative decoding: the chance each proposed token is accepted (0-1, a stated input; "
        "e.g. 0.7 for an EAGLE-3 head on chat): speed estimates take (1 - a^(k+1)) / (1 - a) tokens "
        "per step.",
    ),
]
Mtp = Annotated[bool, Option("--mtp", help="Load the checkpoint's MTP layers (speculative decoding).")]
BestEffort = Annotated[
    bool,
    Option("--best-effort", help="Size an unsupported architecture as a Llama-style decoder (flagged)."),
]
Disaggregate = Annotated[
    bool,
    Option(
        "--disaggregate",
        help="Also plan disaggregated prefill/decode: a prefill and a decode pool of their own TP and "
        "count, the KV transfer per request, compared with the aggregated layout (an estimate).",
    ),
]
Nodes = Annotated[
    int | None,
    Option(
        "--nodes",
        help="Plan N servers (2-64) of --gpus GPUs each (default 8) and the traffic between them (an "
        "estimate): fit and curve take TP=G x PP=N when one server is not enough; serve and quote compare "
        "replicas, TP x PP, TP "
        "over all and, for MoE, DP attention x EP; train shards or replicates the job over every GPU.",
    ),
]
NodeInterconnect = Annotated[
    str | None,
    Option(
        "--interconnect",
        help="With --nodes: the link between servers, ib, roce or ethernet (default ib at the GPU's DGX "
        "rate, 400 Gb/s per GPU on H100/H200/B200; else one shared 100 GbE NIC).",
    ),
]
NodeBandwidth = Annotated[
    float | None,
    Option(
        "--node-bandwidth",
        help="With --nodes: GB/s per GPU between servers, one direction (400 Gb/s NDR = 50).",
    ),
]
Revision = Annotated[
    str | None,
    Option("--revision", help="Hub branch, tag or commit (default main); skips the catalog."),
]
ModelsFile = Annotated[
    list[str] | None,
    Option("--models-file", help="Extra model catalog YAML (repeat; or GPUSIZE_MODELS)."),
]
GpusFile = Annotated[
    list[str] | None, Option("--gpus-file", help="Extra GPU catalog YAML (or GPUSIZE_GPUS).")
]
Quiet = Annotated[bool, Option("--quiet", "-q", help="Print nothing; the exit code is the answer.")]
Json = Annotated[bool, Option("--json", help="Print one JSON object (sizes in integer bytes).")]
ShowAll = Annotated[
    bool, Option("--all", help="Every row: each GPU type (fit, train), or every model (which).")
]
Format = Annotated[
    str | None, Option("--format", help="Output: table (the default) or json (the same as --json).")
]
SheetFormat = Annotated[
    str | None,
    Option("--format", help="Output: table (the default), json (the same as --json), markdown or csv."),
]


#: The engine options of one command line as typed, by EngineSettings field name (None: not given);
#: `core.settings.settings_from` checks them against their declarations.
EngineValues = dict[str, Any]

_Command = TypeVar("_Command", bound=Callable[..., None])

#: The parameter a command declares to receive its engine options (see engine_options).
ENGINE_VALUES = "engine_values"


#: What --engine says of an engine beside its name.
_ENGINE_DEFAULTS = {"vllm": " (default)", "llamacpp": " (default for .gguf files)"}


def _help(name: str, setting: Setting, engines: tuple[EngineName, ...]) -> str:
    if name == "name":
        return ", ".join(e + _ENGINE_DEFAULTS.get(e, "") for e in engines) + "."
    if name == "version":
        return (
            f"Engine release to model: vLLM {VLLM.span} (default {VLLM.default_version}), SGLang "
            f"{SGLANG.span} (default the newest)."
        )
    return f"{' and '.join(ENGINE_LABELS[e] for e in setting.engines)}: {setting.help}"


def _option(name: str, setting: Setting, field_type: Any, default: Any, help_text: str) -> inspect.Parameter:
    """The typer option of one declared setting: its own flag (booleans as --x/--no-x), its help."""
    if field_type is bool:  # a switch; a None default leaves it to the engine's own default
        option = Option(f"{setting.flag}/--no-{setting.flag[2:]}", help=help_text, show_default=False)
        annotation: Any = Annotated[bool if default is False else bool | None, option]
    else:
        option = Option(setting.flag, *setting.aliases, help=help_text)
        base = str if name == "name" else field_type
        annotation = Annotated[base | None, option]
        default = None
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _declared_options(engines: tuple[EngineName, ...]) -> list[inspect.Parameter]:
    hints = {f.name: f for f in EngineSettings.__dataclass_fields__.values()}
    out = []
    for name, setting in declared():
        if set(setting.engines) & set(engines):
            f = hints[name]
            kind = _value_type(f.type)
            out.append(_option(name, setting, kind, f.default, _help(name, setting, engines)))
    return out


def _value_type(annotation: Any) -> type:
    """bool, int, float or str from a field's annotation text ('float | None')."""
    text = str(annotation)
    for kind in (bool, int, float):
        if text.startswith(kind.__name__):
            return kind
    return str


def engine_options(*engines: EngineName) -> Callable[[_Command], _Command]:
    """Give a command one option per engine setting that any of `engines` reads, derived from the
    setting's declaration (core/settings/: flag, help, engines), in place of its `engine_values`
    parameter, which receives them together (EngineValues). A new engine flag is then a field there,
    and every command that serves its engine takes it."""

    def decorate(command: _Command) -> _Command:
        signature = inspect.signature(command, eval_str=True)
        added = _declared_options(engines)
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name == ENGINE_VALUES:
                params += added
            else:
                params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        names = [p.name for p in added]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            values = {name: kwargs.pop(name) for name in names}
            command(**kwargs, **{ENGINE_VALUES: values})

        del wrapper.__wrapped__  # typer reads the signature below, not the command's own
        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper  # type: ignore[return-value]

    return decorate
