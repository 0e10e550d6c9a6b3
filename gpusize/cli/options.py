"""Options declared once and shared by every command (typer `Annotated` aliases).

Names follow the engines' own flags where one exists (`--max-model-len`, `--tensor-parallel-size`,
`--kv-cache-dtype`, `--gpu-memory-utilization`, `--max-num-seqs`, `--mem-fraction-static`,
`--context-length`, `--n-gpu-layers`), so a user can paste their launch flags.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gpusize.core.workload import DTYPES, KV_DTYPES
from gpusize.errors import GpusizeError
from gpusize.sources.catalog import Catalogs

__all__ = [
    "AttnImplementation",
    "Batch",
    "BestEffort",
    "Ctx",
    "Dtype",
    "ChunkedPrefill",
    "EnforceEager",
    "Engine",
    "EngineVersion",
    "ExpertParallel",
    "ExpandableSegments",
    "Format",
    "FlashAttn",
    "FlashinferSampler",
    "GpuCount",
    "GpuName",
    "GpusFile",
    "Json",
    "KvDtype",
    "MaxNumBatchedTokens",
    "MaxNumSeqs",
    "MaxRunningRequests",
    "MemFraction",
    "Model",
    "ModelsFile",
    "Mtp",
    "NGpuLayers",
    "Quantization",
    "Quiet",
    "ReservedMib",
    "Revision",
    "RopeScaling",
    "TransformersVersion",
    "SheetFormat",
    "ShowAll",
    "Utilization",
    "complete_gpu",
    "complete_model",
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
    typer.Argument(
        help="A catalog name or alias (gpusize models), any Hugging Face Hub id (org/name), a local "
        "config.json or model folder, or a .gguf file. Example: Qwen3-32B",
        metavar="MODEL",
        show_default=False,
        autocompletion=complete_model,
    ),
]
Ctx = Annotated[
    str,
    typer.Option(
        "--ctx",
        "--max-model-len",
        "--context-length",
        help="Context length per sequence: 8192, 32k, 128k, 1m (k = 1024).",
    ),
]
Batch = Annotated[int, typer.Option("--batch", help="Concurrent sequences at full context.")]
Dtype = Annotated[
    str,
    typer.Option(
        "--dtype",
        help=f"Weights: {', '.join(DTYPES)} (auto = the checkpoint's own), or bpwN for exactly N bits "
        "per weight (EXL2 / GGUF IQ: bpw2.5).",
    ),
]
KvDtype = Annotated[
    str, typer.Option("--kv-dtype", "--kv-cache-dtype", help=f"KV cache: {', '.join(KV_DTYPES)}.")
]
GpuName = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        help="A GPU type (gpusize gpus), or 'local' for this machine's GPUs.",
        autocompletion=complete_gpu,
    ),
]
GpuCount = Annotated[
    int | None,
    typer.Option("--gpus", "--tp", "--tensor-parallel-size", help="GPUs in one server: 1, 2, 4 or 8."),
]
Engine = Annotated[
    str | None,
    typer.Option(
        "--engine", help="vllm (default), sglang, llamacpp (default for .gguf files), transformers."
    ),
]
Utilization = Annotated[
    float | None,
    typer.Option(
        "--gpu-memory-utilization",
        help="vLLM: fraction of each GPU the engine may use (default 0.9; 0.92 from 0.20).",
    ),
]
MaxNumSeqs = Annotated[int | None, typer.Option("--max-num-seqs", help="vLLM: most sequences per step.")]
MaxNumBatchedTokens = Annotated[
    int | None,
    typer.Option("--max-num-batched-tokens", help="vLLM: most tokens per step (chunked prefill size)."),
]
MemFraction = Annotated[
    float | None,
    typer.Option("--mem-fraction-static", help="SGLang: static memory fraction (default from GPU and TP)."),
]
NGpuLayers = Annotated[
    int | None, typer.Option("--n-gpu-layers", "-ngl", help="llama.cpp: layers on the GPU (default all).")
]
FlashinferSampler = Annotated[
    bool,
    typer.Option(
        "--flashinfer-sampler",
        help="vLLM: top-k/top-p sampled by FlashInfer (VLLM_USE_FLASHINFER_SAMPLER=1; up to 0.11.0 whenever "
        "FlashInfer is installed, as in the vllm/vllm-openai image): a smaller start-up peak before 0.17.",
    ),
]
FlashAttn = Annotated[
    bool | None,
    typer.Option(
        "--flash-attn/--no-flash-attn",
        help="llama.cpp: flash attention on or off (-fa on|off; default the release's auto: on for CUDA).",
    ),
]
EngineVersion = Annotated[
    str | None,
    typer.Option(
        "--engine-version",
        help="Engine release to model: vLLM 0.10.0-0.33.x, SGLang 0.4.0-0.5.23 (default the newest).",
    ),
]
EnforceEager = Annotated[bool, typer.Option("--enforce-eager", help="vLLM: no CUDA graphs.")]
ExpertParallel = Annotated[
    bool,
    typer.Option(
        "--enable-expert-parallel", help="vLLM: whole experts per GPU instead of slicing each by TP."
    ),
]
ChunkedPrefill = Annotated[
    int | None,
    typer.Option("--chunked-prefill-size", help="SGLang: tokens per prefill chunk (enters its reserve)."),
]
MaxRunningRequests = Annotated[
    int | None, typer.Option("--max-running-requests", help="SGLang: most requests running at once.")
]
Quantization = Annotated[
    str | None,
    typer.Option(
        "--quantization",
        help="As the engines take it: fp8 (on-the-fly FP8), bitsandbytes (in-flight 4-bit), or the "
        "checkpoint's own method (awq, gptq, compressed-tensors, mxfp4).",
    ),
]
RopeScaling = Annotated[
    str | None,
    typer.Option(
        "--rope-scaling",
        help="Size with a rope scaling the config lacks: yarn:FACTOR[:ORIGINAL] (Qwen3 at 128k, as its model "
        "card says: yarn:4:32768); ORIGINAL defaults to the config's max_position_embeddings.",
    ),
]
ReservedMib = Annotated[
    int,
    typer.Option(
        "--reserved-mib", help="Memory other processes hold on each GPU (a desktop, another server), MiB."
    ),
]
AttnImplementation = Annotated[
    str | None,
    typer.Option(
        "--attn-implementation",
        help="transformers: sdpa (default; eager for gpt-oss), flash_attention_2 or eager.",
    ),
]
TransformersVersion = Annotated[
    str | None,
    typer.Option(
        "--transformers-version",
        help="transformers: 5 (5.x and 4.56+, default) or 4 (4.53-4.55: sliding layers cache every token).",
    ),
]
ExpandableSegments = Annotated[
    bool,
    typer.Option(
        "--expandable-segments",
        help="transformers: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation).",
    ),
]
Mtp = Annotated[bool, typer.Option("--mtp", help="Load the checkpoint's MTP layers (speculative decoding).")]
BestEffort = Annotated[
    bool,
    typer.Option(
        "--best-effort", help="Size an unsupported architecture as a Llama-style decoder (flagged)."
    ),
]
Revision = Annotated[
    str | None,
    typer.Option("--revision", help="Hub branch, tag or commit (default main); skips the catalog."),
]
ModelsFile = Annotated[
    list[str] | None,
    typer.Option("--models-file", help="Extra model catalog YAML (repeat; or GPUSIZE_MODELS)."),
]
GpusFile = Annotated[
    list[str] | None, typer.Option("--gpus-file", help="Extra GPU catalog YAML (or GPUSIZE_GPUS).")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing; the exit code is the answer.")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object (sizes in integer bytes).")]
ShowAll = Annotated[
    bool, typer.Option("--all", help="Every row: each GPU type (fit, train), or every model (which).")
]
Format = Annotated[
    str | None, typer.Option("--format", help="Output: table (the default) or json (the same as --json).")
]
SheetFormat = Annotated[
    str | None,
    typer.Option("--format", help="Output: table (the default), json (the same as --json), markdown or csv."),
]
