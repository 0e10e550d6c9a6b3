"""The command line: a thin layer that parses options into core values, calls the core and the
reports, renders, and turns the verdict into the exit code. `gpusize.cli:main` is the entry point.

Commands live one per module and are registered by importing their module; `main` imports only the
module of the command being run (all of them for --help and completion), because a cold start of
`gpusize fit` should not pay for importing `train` or `quote`.
"""

from __future__ import annotations

import importlib
import sys

from gpusize.cli.app import main as run

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
    args = sys.argv[1:] if argv is None else argv
    register(args)
    run(args)
