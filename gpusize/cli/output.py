"""Writing answers: stdout that a closed pipe cannot turn into another verdict, stderr that a closed
stream cannot crash, and files written atomically (temp file + rename) with failures named.

A closed pipe (`| head -c1`) loses the rest of the answer and keeps the exit code. A full disk or a
closed stdout (`>&-`) means the answer was not delivered: exit 2 with one line. Python sets
sys.stdout / sys.stderr to None when the process starts with that descriptor closed; every write here
expects that. A device or FIFO named by -o (`/dev/stdout`, `/dev/full`) is written in place, never
replaced by a rename. A file the user made read-only (no write bit, or no write access) is refused,
not replaced, even for root, whose rename could replace it. Two outputs of one command (-o and --svg)
may not name the same file, since the second would replace the first answer; only a character device
(a terminal, /dev/null) may be named twice, as it takes one answer after the other.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path

from gpusize.cli.capture import current
from gpusize.errors import OutputError
from gpusize.render.text import safe

__all__ = ["distinct_outputs", "silence_stdout", "warn", "write_file", "write_stderr", "write_stdout"]


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail on a closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def write_stdout(text: str) -> None:
    """Write the answer; a reader that went away (`| head -1`) is not an error and changes nothing."""
    stream = sys.stdout
    if stream is None:  # started with stdout closed (`>&-`)
        raise OutputError("cannot write to standard output (it is closed)")
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        silence_stdout()
    except (OSError, ValueError) as exc:  # a full disk, a closed stdout
        if getattr(exc, "errno", None) == errno.EPIPE:
            silence_stdout()
            return
        raise OutputError(
            f"cannot write to standard output ({getattr(exc, 'strerror', None) or exc})"
        ) from None


def write_stderr(line: str) -> None:
    """One line on stderr; a closed or broken stderr only loses the line."""
    stream = sys.stderr
    if stream is None:
        return
    with contextlib.suppress(Exception):  # noqa: BLE001 - nothing about stderr may change the verdict
        stream.write(line)
        stream.flush()


def warn(message: str) -> None:
    """One line on stderr; a closed stderr only loses the line. Under `capture()` (batch, the library
    API) the warning is kept with the answer instead."""
    captured = current()
    if captured is not None:
        captured.warnings.append(safe(message, limit=2000))
        return
    write_stderr(f"gpusize: warning: {safe(message, limit=2000)}\n")


def distinct_outputs(outputs: dict[str, str | None]) -> None:
    """Refuse two outputs (option -> path) that name one file, checked before anything is written."""
    named = [(option, path) for option, path in outputs.items() if path]
    for i, (first, a) in enumerate(named):
        for second, b in named[i + 1 :]:
            if _same_target(a, b):
                raise OutputError(
                    f"{safe(a, limit=200)}: named by both {first} and {second}; "
                    "the second would replace the first: give each its own file"
                )


def _same_target(a: str, b: str) -> bool:
    """Whether `a` and `b` are one file (through links and relative paths) that is not a character
    device; os.path.samefile when both exist, else the resolved absolute paths."""
    try:
        try:
            return os.path.samefile(a, b) and not stat.S_ISCHR(os.stat(a).st_mode)
        except FileNotFoundError:
            return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):  # unreadable or a NUL byte: write_file names the problem
        return False


def write_file(path: str, text: str) -> None:
    """Write `text` to `path` atomically (a temp file renamed over it, so a failure leaves the old file
    or nothing); a symlink is followed; a device or FIFO is written in place."""
    shown = safe(str(path), limit=200)
    try:
        mode = os.stat(path).st_mode  # through symlinks
    except FileNotFoundError:
        mode = None
    except (OSError, ValueError) as exc:
        raise OutputError(f"{shown}: cannot write ({getattr(exc, 'strerror', None) or exc})") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"{shown}: is a folder; give a file name")
    if mode is not None and not stat.S_ISREG(mode):  # /dev/stdout, /dev/full, a FIFO
        _write_in_place(Path(path), text, shown)
        return
    if mode is not None and (not mode & 0o222 or not os.access(path, os.W_OK)):  # root passes access()
        raise OutputError(
            f"{shown}: is read-only, so it is not replaced; make it writable or pick another file"
        )
    target = Path(os.path.realpath(path)) if mode is not None else Path(path)
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"{shown}: the folder {safe(str(parent), limit=200)} does not exist")
    import tempfile  # noqa: PLC0415 - start-up: only when a file is written

    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{target.name[:50]}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write here ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OutputError(f"{shown}: cannot write ({exc.strerror or exc})") from None


def _write_in_place(target: Path, text: str, shown: str) -> None:
    try:
        with target.open("w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write ({exc.strerror or exc})") from None


def _mode_for(target: Path) -> int:
    """The permissions of the file being replaced, else the usual 0o666 less the umask (mkstemp's
    temp files are 0o600)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
