"""gpusize: how much GPU memory does this model need, and what is the smallest set of GPUs that runs it?

Layers, each importing only the ones below it: `core` (pure values and arithmetic, `core.engines`),
`sources` (the only I/O), `serving` and `training` (pure plans), `reports` (one result per command),
`render` (text and exports), `cli` (the command line).

Library use::

    from gpusize import find_model, find_gpu, parse_config, fit
    spec = parse_config(find_model("Qwen3-32B").config)
    best = fit(spec, find_gpu("H100"), context_tokens=32768, batch=4)[-1]
    assert best.fits and best.num_gpus == 2  # vLLM, newest modelled release

Every command is a function returning the report behind its `--json` (see `gpusize.api`)::

    report = gpusize.fit("Qwen3-32B", ctx="32k", gpu="H100")
    assert report.fits and report.plan.num_gpus == 1
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

#: Public names, imported on first use so that `import gpusize` stays fast.
_LAZY = {
    "ModelSpec": "gpusize.core.spec",
    "ParamCounts": "gpusize.core.spec",
    "parse_config": "gpusize.core.parse",
    "GpuSpec": "gpusize.core.gpu",
    "Candidate": "gpusize.core.plan",
    "Request": "gpusize.core.workload",
    "Workload": "gpusize.core.workload",
    "EngineSettings": "gpusize.core.workload",
    "resolve": "gpusize.core.workload",
    "fit": "gpusize.api",
    "plan": "gpusize.api",
    "run": "gpusize.api",
    "serve": "gpusize.api",
    "quote": "gpusize.api",
    "train": "gpusize.api",
    "curve": "gpusize.api",
    "which": "gpusize.api",
    "batch": "gpusize.api",
    "Catalogs": "gpusize.sources.catalog",
    "find_gpu": "gpusize.sources.catalog",
    "find_model": "gpusize.sources.catalog",
    "load_gpus": "gpusize.sources.catalog",
    "load_models": "gpusize.sources.catalog",
    "resolve_model": "gpusize.sources.resolve",
    "GpusizeError": "gpusize.errors",
    "ConfigError": "gpusize.errors",
    "CatalogError": "gpusize.errors",
    "InputError": "gpusize.errors",
    "UnknownNameError": "gpusize.errors",
    "UsageError": "gpusize.errors",
    "HubError": "gpusize.errors",
    "OutputError": "gpusize.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'gpusize' has no attribute '{name}'")
    return getattr(importlib.import_module(_LAZY[name]), name)
