"""The command line: a thin layer that parses options into core values, calls the core and the
reports, renders, and turns the verdict into the exit code. `gpusize.cli:main` is the entry point.

Commands live one per module and are registered by importing their module; `main` imports only the
module of the command being run (all of them for --help and completion), because a cold start of
`gpusize fit` should not pay for importing `train` or `quote`.
"""

from __future__ import annotations

import gc
import importlib
import sys

__all__ = ["COMMANDS", "main"]

#: Command name -> the module that registers it.
COMMANDS = {
    "fit": "gpusize.cli.fit",
    "curve": "gpusize.cli.curve",
    "which": "gpusize.cli.which",
    "serve": "gpusize.cli.serve",
    "quote": "gpusize.cli.quote",
    "train": "gpusize.cli.train",
    "models": "gpusize.cli.catalogs",
    "gpus": "gpusize.cli.catalogs",
    "batch": "gpusize.cli.batch",
}


def register(argv: list[str]) -> None:
    """Import the module of the command in `argv` (every command module when there is none)."""
    name = next((a for a in argv if not a.startswith("-")), None)
    modules = [COMMANDS[name]] if name in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:  # in COMMANDS' order: the order `gpusize --help` lists them
        importlib.import_module(module)


def main(argv: list[str] | None = None) -> None:
    """Run the command in `argv` (default: this process's arguments). Called as the process's entry
    (no `argv`: `gpusize ...`, `python -m gpusize ...`), the command's modules are imported with the
    garbage collector paused and everything they made is then left out of later collections
    (`gc.freeze`, as sources.catalog does for a large catalog): it lives as long as the process, and
    the collections that the imports set off, and the full ones of the run that walked every module's
    objects again, found nothing (~30M of a ~490M-instruction `train` or `fit`, bench/RESULTS.md)."""
    args = sys.argv[1:] if argv is None else argv
    pause = argv is None and gc.isenabled()
    if pause:
        gc.disable()
    try:
        from gpusize.cli.app import main as run  # start-up: imported with the collector paused

        register(args)
    finally:
        if pause:
            gc.freeze()
            gc.enable()
    run(args)
