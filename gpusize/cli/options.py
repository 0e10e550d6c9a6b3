"""Options declared once and shared by every command (typer `Annotated` aliases).

Names follow the engines' own flags where one exists (`--max-model-len`, `--tensor-parallel-size`,
`--kv-cache-dtype`, `--gpu-memory-utilization`, `--max-num-seqs`, `--mem-fraction-static`,
`--context-length`, `--n-gpu-layers`), so a user can paste their launch flags.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gpusize.core.workload import DTYPES, KV_DTYPES

__all__ = [
    "AttnImplementation",
    "Batch",
    "BestEffort",
    "Ctx",
    "Dtype",
    "Engine",
    "ExpandableSegments",
    "FlashAttn",
    "GpuCount",
    "GpuName",
    "GpusFile",
    "Json",
    "KvDtype",
    "MaxNumBatchedTokens",
    "MaxNumSeqs",
    "MemFraction",
    "Model",
    "ModelsFile",
    "Mtp",
    "NGpuLayers",
    "Quiet",
    "Revision",
    "TransformersVersion",
    "Utilization",
]

Model = Annotated[
    str,
    typer.Argument(
        help="A catalog name or alias (gpusize models), any Hugging Face Hub id (org/name), a local "
        "config.json or model folder, or a .gguf file. Example: Qwen3-32B",
        show_default=False,
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
    str, typer.Option("--dtype", help=f"Weights: {', '.join(DTYPES)} (auto = the checkpoint's own).")
]
KvDtype = Annotated[
    str, typer.Option("--kv-dtype", "--kv-cache-dtype", help=f"KV cache: {', '.join(KV_DTYPES)}.")
]
GpuName = Annotated[
    str | None, typer.Option("--gpu", help="A GPU type (gpusize gpus), or 'local' for this machine's GPUs.")
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
        "--gpu-memory-utilization", help="vLLM: fraction of each GPU the engine may use (default 0.9)."
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
FlashAttn = Annotated[bool, typer.Option("--flash-attn", help="llama.cpp: flash attention (smaller buffer).")]
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
