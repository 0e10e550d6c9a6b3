"""Writing answers: stdout that a closed pipe cannot turn into another verdict, stderr that a closed
stream cannot crash, and files written atomically (temp file + rename) with failures named."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from gpusize.errors import OutputError
from gpusize.render.text import safe

__all__ = ["silence_stdout", "warn", "write_file", "write_stdout"]


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def write_stdout(text: str) -> None:
    """Write the answer; a reader that went away (`| head -1`) is not an error and changes nothing."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except (OSError, ValueError) as exc:  # a full disk, a closed stdout
        if getattr(exc, "errno", None) == 32:
            silence_stdout()
            return
        raise OutputError(
            f"cannot write to standard output ({getattr(exc, 'strerror', None) or exc})"
        ) from None


def warn(message: str) -> None:
    """One line on stderr; a closed stderr only loses the line."""
    try:
        sys.stderr.write(f"gpusize: warning: {safe(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def write_file(path: str, text: str) -> None:
    """Write `text` to `path` atomically; never leaves a half-written file, never writes into a folder."""
    target = Path(path)
    shown = safe(str(path), limit=200)
    if target.is_dir():
        raise OutputError(f"{shown}: is a folder; give a file name")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{shown}: the folder {safe(str(folder), limit=200)} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name[:50]}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write here ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OutputError(f"{shown}: cannot write ({exc.strerror or exc})") from None
