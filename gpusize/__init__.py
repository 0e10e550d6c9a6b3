"""gpusize: how much GPU memory does this model need, and what is the smallest set of GPUs that runs it?

The core (`model`, `memory`, `plan`) is pure: plain values in, plain values out. I/O lives in
`catalog` (YAML) and `source` (config files); `cli` parses, calls the core and renders.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
