"""gpusize: how much GPU memory does this model need, and what is the smallest set of GPUs that runs it?

The core (`model`, `params`, `memory`, `kvcache`, `plan`, `engines`, `serving`, `training`) is pure:
plain values in, plain values out. I/O lives in `catalog` (YAML), `source` / `hub` /
`safetensors_local` / `gguf_file` (models) and `local_gpu`; `cli` parses, calls the core and renders.

Library use::

    from gpusize import find_gpu, find_model, parse_config, count_params, plan
    spec = parse_config(find_model("Qwen3-32B").config)
    work = plan.Workload(32768, 1, "auto", "auto")
    best = plan.smallest_fit(spec, count_params(spec), find_gpu("H100"), work)[-1]
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: Public names, imported on first use so that `import gpusize` (and the CLI) stays fast.
_LAZY = {
    "ModelSpec": "gpusize.model",
    "parse_config": "gpusize.model",
    "ParamCounts": "gpusize.params",
    "count_params": "gpusize.params",
    "GpuSpec": "gpusize.catalog",
    "find_gpu": "gpusize.catalog",
    "find_model": "gpusize.catalog",
    "load_gpus": "gpusize.catalog",
    "load_models": "gpusize.catalog",
    "resolve_model": "gpusize.source",
    "GpusizeError": "gpusize.errors",
    "ConfigError": "gpusize.errors",
    "CatalogError": "gpusize.errors",
    "UnknownNameError": "gpusize.errors",
    "UsageError": "gpusize.errors",
    "HubError": "gpusize.errors",
    "plan": "gpusize.plan",
    "memory": "gpusize.memory",
    "engines": "gpusize.engines",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'gpusize' has no attribute '{name}'")
    import importlib

    module = importlib.import_module(_LAZY[name])
    return module if module.__name__.endswith(f".{name}") else getattr(module, name)
