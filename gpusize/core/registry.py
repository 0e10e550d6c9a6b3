"""The engines gpusize models, one line each: the module of `core/engines/` that holds its
EngineModel and how text names it. Adding an engine is its module, its line here and its launch line
(serving/launch.py); everything else (the `--engine` choices, the settings each engine reads, help
text) derives from these names.

A leaf module (no imports of ours) so that settings, engines and the CLI can all read it.
"""

from __future__ import annotations

__all__ = ["ENGINE_LABELS", "ENGINE_MODULES", "ENGINE_NAMES", "ENGINES", "EngineName"]

#: An engine's name as `--engine` takes it: one of ENGINE_NAMES (checked where it is read).
EngineName = str

#: name -> (module under gpusize/core/engines, the name text uses). The first is the default engine.
ENGINES: dict[EngineName, tuple[str, str]] = {
    "vllm": ("vllm", "vLLM"),
    "sglang": ("sglang", "SGLang"),
    "llamacpp": ("llamacpp", "llama.cpp"),
    "transformers": ("hf", "transformers"),
    "ollama": ("ollama", "Ollama"),
    "trtllm": ("trtllm", "TensorRT-LLM"),
}
ENGINE_NAMES: tuple[EngineName, ...] = tuple(ENGINES)
ENGINE_MODULES: dict[EngineName, str] = {name: module for name, (module, _) in ENGINES.items()}
ENGINE_LABELS: dict[EngineName, str] = {name: label for name, (_, label) in ENGINES.items()}
