"""Read single files out of released wheels on a package index, without downloading the wheels.

A wheel is a zip file, and a zip file keeps its table of contents (the central directory) at its end.
`RangeFile` is a seekable file over an HTTPS URL that fetches only the byte ranges `zipfile` asks
for (HTTP Range requests, which pypi.org's files.pythonhosted.org honours): the end record, the
central directory, then one member's local header and compressed bytes. Measured 2026-12-02:
`vllm/engine/arg_utils.py` out of the 336 MB vLLM 0.33.0 wheel transfers 0.92 MB in 0.3 s
(`sglang/srt/server_args.py` out of the 39 MB SGLang 0.5.23 wheel: 0.93 MB).

A dev tool for checking gpusize's release tables (tests/data/engine_flags.yaml, core/releases.py,
core/engines/family_support.py) against what each release shipped: never imported by gpusize or by
the tests, never run by the tests (it needs the network). Files read are kept under CACHE_DIR, so a
second check of the same release reads nothing over the network.

Run:
  python bench/release_sources.py versions sglang
  python bench/release_sources.py list sglang 0.5.3 sglang/srt/models/
  python bench/release_sources.py read vllm 0.8.2 vllm/engine/arg_utils.py
  python bench/release_sources.py grep vllm vllm/engine/arg_utils.py '"--speculative-config"' 0.8.1 0.8.2
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import urllib.request
import zipfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["RangeFile", "index_files", "names", "read", "release_versions", "wheel_url"]

#: The package index (PEP 503 / PEP 691 "simple" API): pypi.org. NVIDIA's own index
#: (https://pypi.nvidia.com) holds the real TensorRT-LLM wheels; pypi.org holds only stub sdists.
INDEX = "https://pypi.org/simple"
#: The JSON form of the simple API (PEP 691), which lists every file with its URL and size.
_ACCEPT = "application/vnd.pypi.simple.v1+json"
#: Seconds before one HTTP request is abandoned.
TIMEOUT_S = 120
#: Bytes `zipfile`'s small reads are rounded up to: a central directory of a few thousand entries
#: comes in a handful of requests instead of one per entry.
READ_BLOCK = 1 << 18
#: Where files read out of wheels are kept, as CACHE_DIR/<project>/<version>/<path>.
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpusize-release-sources"
#: A release number as indexes spell it in file names ('0.5.4.post1', '1.2.0rc6').
_VERSION = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?$")


def _open(request: urllib.request.Request) -> bytes:
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        data: bytes = response.read()
        return data


class RangeFile(io.RawIOBase):
    """A read-only, seekable file over `url`, read with HTTP Range requests."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.pos = 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=TIMEOUT_S) as r:
            if r.headers.get("Accept-Ranges") != "bytes":
                raise OSError(f"{url}: the server does not take Range requests")
            self.size = int(r.headers["Content-Length"])
        #: Bytes fetched: how much of the file this reader transferred.
        self.fetched = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), self.size - self.pos)
        if count <= 0:
            return 0
        headers = {"Range": f"bytes={self.pos}-{self.pos + count - 1}"}
        data = _open(urllib.request.Request(self.url, headers=headers))
        if len(data) != count:
            raise OSError(f"{self.url}: asked for {count} bytes at {self.pos}, got {len(data)}")
        buffer[:count] = data
        self.pos += count
        self.fetched += count
        return count


@cache
def index_files(project: str, index: str = INDEX) -> tuple[dict[str, Any], ...]:
    """Every file the index lists for `project` (PEP 691 JSON: filename, url, size, ...)."""
    request = urllib.request.Request(f"{index}/{project}/", headers={"Accept": _ACCEPT})
    files: list[dict[str, Any]] = json.loads(_open(request))["files"]
    return tuple(files)


def _wheel_version(filename: str) -> str:
    return filename.split("-")[1]


def release_versions(project: str, index: str = INDEX) -> list[str]:
    """The final releases of `project` that have a wheel, oldest first (no rc, dev or yanked files)."""
    from packaging.version import Version  # only this tool needs it; packaging ships with pip

    found = {
        _wheel_version(f["filename"])
        for f in index_files(project, index)
        if f["filename"].endswith(".whl") and not f.get("yanked")
    }
    finals = [v for v in found if _VERSION.match(v) and not re.search(r"(a|b|rc)\d", v)]
    return sorted(finals, key=Version)


def wheel_url(project: str, version: str, index: str = INDEX) -> str:
    """The URL of one wheel of `project` `version`: a pure-Python one when there is one, else the
    Linux x86-64 build (the Python sources inside are the same for every platform tag)."""
    wheels = [
        f
        for f in index_files(project, index)
        if f["filename"].endswith(".whl") and _wheel_version(f["filename"]) == version
    ]
    if not wheels:
        raise LookupError(f"{project} {version}: no wheel on {index}")

    def rank(entry: dict[str, Any]) -> int:
        name = entry["filename"]
        return 0 if name.endswith("-none-any.whl") else 1 if "x86_64" in name else 2

    url: str = min(wheels, key=rank)["url"]
    return url


@cache
def _archive(project: str, version: str) -> zipfile.ZipFile:
    raw = RangeFile(wheel_url(project, version))
    return zipfile.ZipFile(io.BufferedReader(raw, buffer_size=READ_BLOCK))


def _cached(project: str, version: str, name: str) -> Path:
    return CACHE_DIR / project / version / name


def names(project: str, version: str) -> list[str]:
    """Every file in the wheel of `project` `version` (from its central directory, kept on disk)."""
    path = _cached(project, version, ".names")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(_archive(project, version).namelist()))
    return path.read_text().splitlines()


def read(project: str, version: str, name: str) -> str | None:
    """The text of file `name` in the wheel of `project` `version`, or None when the wheel lacks it."""
    path = _cached(project, version, name)
    if path.exists():
        return path.read_text()
    if name not in names(project, version):
        return None
    text = _archive(project, version).read(name).decode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def _grep(project: str, name: str, needle: str, versions: Iterable[str]) -> None:
    for version in versions:
        text = read(project, version, name)
        state = "no file" if text is None else ("present" if needle in text else "absent")
        print(f"{project} {version}: {state}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("versions").add_argument("project")
    listing = sub.add_parser("list")
    listing.add_argument("project")
    listing.add_argument("version")
    listing.add_argument("prefix", nargs="?", default="")
    reading = sub.add_parser("read")
    reading.add_argument("project")
    reading.add_argument("version")
    reading.add_argument("path")
    grep = sub.add_parser("grep", help="is STRING in PATH of each release (all wheels: no versions)")
    grep.add_argument("project")
    grep.add_argument("path")
    grep.add_argument("string")
    grep.add_argument("versions", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "versions":
        print("\n".join(release_versions(args.project)))
    elif args.command == "list":
        print("\n".join(n for n in names(args.project, args.version) if n.startswith(args.prefix)))
    elif args.command == "read":
        text = read(args.project, args.version, args.path)
        if text is None:
            print(f"{args.project} {args.version}: no {args.path}", file=sys.stderr)
            return 1
        sys.stdout.write(text)
    else:
        _grep(args.project, args.path, args.string, args.versions or release_versions(args.project))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
