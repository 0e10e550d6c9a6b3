"""Settings of the engines people run on their own machine: llama.cpp, Ollama and transformers (pure)."""

from __future__ import annotations

from gpusize.core.settings.declaration import setting, settings_part

__all__ = [
    "ATTN_IMPLEMENTATIONS",
    "LLAMACPP_BACKENDS",
    "SPLIT_MODES",
    "TRANSFORMERS_VERSIONS",
    "LocalSettings",
]

#: llama.cpp's ways to spread one model over several GPUs (`-sm`): whole layers per GPU, run one GPU
#: after another for each token (the default), or every matrix split by rows across the GPUs.
SPLIT_MODES = ("layer", "row")
#: llama.cpp's GPU backends, as llama-bench's "backend" column names them: a build choice (CMake
#: GGML_CUDA, GGML_HIP, GGML_VULKAN, GGML_METAL; the images server-cuda, server-rocm, server-vulkan of
#: ghcr.io/ggml-org/llama.cpp, docs/docker.md), not a llama-server flag. Which GPUs each runs on is
#: the engine's rule (`core.engines.llamacpp.BACKENDS`).
LLAMACPP_BACKENDS = ("cuda", "rocm", "vulkan", "metal")
#: transformers attention implementations (`--attn-implementation`).
ATTN_IMPLEMENTATIONS = ("sdpa", "flash_attention_2", "eager")
#: "5": transformers 5.x (and 4.56-4.57): DynamicSlidingWindowLayer, boolean SDPA masks.
#: "4": 4.53-4.55: masks as in 5, but sliding-window layers cache every token (no sliding layer).
TRANSFORMERS_VERSIONS = ("5", "4")


@settings_part
class LocalSettings:
    """llama.cpp, Ollama and transformers settings (fields of `EngineSettings`)."""

    n_gpu_layers: int | None = setting(
        default=None,
        flag="--n-gpu-layers",
        aliases=("-ngl",),
        engines=("llamacpp",),
        help="layers on the GPU (default all).",
        low=0,
        high=100_000,
    )
    #: llama.cpp flash attention (`-fa on|off`); None: the release's default (auto), see
    #: `engines.llamacpp.flash_attention`.
    flash_attn: bool | None = setting(
        default=None,
        flag="--flash-attn",
        engines=("llamacpp", "ollama"),
        help="flash attention on or off (llama.cpp -fa on|off, default auto: on for CUDA; Ollama "
        "OLLAMA_FLASH_ATTENTION, default off but for gpt-oss).",
    )
    #: llama.cpp `--split-mode` (one of SPLIT_MODES); None means its default, layer.
    split_mode: str | None = setting(
        default=None,
        flag="--split-mode",
        aliases=("-sm",),
        engines=("llamacpp",),
        help="spread the model over GPUs by layer (default) or row.",
        choices=SPLIT_MODES,
    )
    #: llama.cpp's build (one of LLAMACPP_BACKENDS); None: the GPU vendor's own (CUDA on NVIDIA, ROCm
    #: on AMD, Metal on Apple; `core.engines.llamacpp.backend`). Not printed as a flag: llama-server
    #: has none; the launch note names the build.
    backend: str | None = setting(
        default=None,
        flag="--backend",
        engines=("llamacpp",),
        help="llama.cpp build: cuda, rocm, vulkan or metal (default the GPU vendor's: CUDA on NVIDIA, "
        "ROCm on AMD, Metal on Apple).",
        choices=LLAMACPP_BACKENDS,
    )
    #: Ollama (core/engines/ollama.py), under its own names: Modelfile num_gpu, OLLAMA_NUM_PARALLEL,
    #: OLLAMA_GPU_OVERHEAD (bytes); the launch lines print them as env vars / PARAMETER lines.
    num_gpu: int | None = setting(
        default=None,
        flag="--num-gpu",
        engines=("ollama",),
        help="layers on the GPUs (default as many as fit).",
        low=0,
        high=100_000,
    )
    num_parallel: int | None = setting(
        default=None,
        flag="--num-parallel",
        engines=("ollama",),
        help="OLLAMA_NUM_PARALLEL (default --batch).",
        low=1,
        high=1024,
    )
    gpu_overhead: int | None = setting(
        default=None,
        flag="--gpu-overhead",
        engines=("ollama",),
        help="OLLAMA_GPU_OVERHEAD: bytes kept free per GPU.",
        low=0,
        high=1 << 40,
    )
    #: transformers: attention implementation (sdpa, flash_attention_2, eager), the release whose
    #: cache and masks are followed ("5", "4"), PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
    attn_implementation: str | None = setting(
        default=None,
        flag="--attn-implementation",
        engines=("transformers",),
        help="sdpa (default; eager for gpt-oss), flash_attention_2 or eager.",
        choices=ATTN_IMPLEMENTATIONS,
    )
    transformers_version: str | None = setting(
        default=None,
        flag="--transformers-version",
        engines=("transformers",),
        help="5 (5.x and 4.56+, default) or 4 (4.53-4.55: sliding layers cache every token).",
        choices=TRANSFORMERS_VERSIONS,
    )
    expandable_segments: bool = setting(
        default=False,
        flag="--expandable-segments",
        engines=("transformers",),
        help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation).",
    )
