"""The typer app: every registered command (`cli.declare`) with typer's own options, for the lines
`cli.bind` leaves to typer (--help, completion, an unusual or a bad line). Imported only then."""

from __future__ import annotations

import typer

from gpusize import __version__
from gpusize.cli.declare import COMMANDS_DECLARED, Registered, on_late_command, typer_command
from gpusize.cli.output import write_stdout

__all__ = ["app"]

app = typer.Typer(
    add_completion=True,
    no_args_is_help=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="How much GPU memory does this LLM need, and which GPUs in one server run it?",
)


def _version(value: bool) -> None:
    if value:
        write_stdout(f"gpusize {__version__}\n")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """gpusize sizes LLM inference and training memory and picks the smallest set of GPUs in one server."""
    if ctx.invoked_subcommand is None:
        write_stdout(ctx.get_help() + "\n")
        raise typer.Exit(0)


def _add(registered: Registered) -> None:
    app.command(registered.name, **registered.typer_kwargs)(typer_command(registered.function))


for _registered in COMMANDS_DECLARED.values():
    _add(_registered)
on_late_command(_add)
