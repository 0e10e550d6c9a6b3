"""A stand-in for the Hugging Face Hub on 127.0.0.1, serving real files that the tests write.

It answers what huggingface_hub 2.x asks when it fetches a config.json and safetensors headers
(file_download.py `get_hf_file_metadata` / `http_get`, hf_api.py `get_safetensors_metadata` /
`parse_safetensors_file_metadata` / `model_info`), with the headers and error codes of the real Hub
(`utils/_http.py hf_raise_for_status` turns them into typed errors):

- `HEAD|GET /{repo}/resolve/{revision}/{path}`: `X-Repo-Commit`, `ETag`, `Content-Length`,
  `Accept-Ranges`; a `Range: bytes=a-b` GET gets `206` and `Content-Range`.
- `GET /api/models/{repo}` and `/api/models/{repo}/revision/{revision}`: `{"id", "sha", "siblings", ...}`
  (public for gated repos too, as on the Hub: only their files are gated).
- `401 + X-Error-Code: GatedRepo` for a gated repo's file without `Authorization: Bearer <token>`;
  `404 + X-Error-Code: RepoNotFound | RevisionNotFound | EntryNotFound`; a repo can be set to answer
  every request with one status (429 rate limited, 503 down).

Every request is logged (method, path, headers) so a test can check what was asked, and how much.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

#: Bytes per element of the dtypes the tests write (safetensors src/tensor.rs `Dtype::bitsize` / 8).
DTYPE_BYTES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F16": 2,
    "BF16": 2,
    "F32": 4,
    "I64": 8,
}


def safetensors_bytes(
    tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None
) -> bytes:
    """A real safetensors file: u64-le header length, JSON header padded to 8 bytes, zeroed data."""
    header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw + bytes(offset)


def commit_sha(seed: str) -> str:
    return hashlib.sha1(seed.encode()).hexdigest()


@dataclass
class FakeRepo:
    files: dict[str, bytes]
    #: branch or tag -> commit sha; every commit holds the same files.
    refs: dict[str, str]
    #: Gated: files need `Authorization: Bearer <gated_token>`.
    gated_token: str | None = None
    #: Answer every request with this status (429, 503) while set.
    status: int | None = None
    #: A misbehaving server: called as behaviour(handler, filename, body, commit) for every file
    #: request of the repo; it writes whatever it likes to the socket and returns True when it has
    #: answered (False: answer normally).
    behaviour: Callable[[Any, str, bool, str], bool] | None = None

    def commit(self, revision: str) -> str | None:
        if revision in self.refs:
            return self.refs[revision]
        return revision if revision in self.refs.values() else None


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)


class HubServer:
    """`with HubServer() as hub: hub.add_repo(...); env HF_ENDPOINT=hub.url`."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.hub = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes],
        *,
        refs: dict[str, str] | None = None,
        gated_token: str | None = None,
        status: int | None = None,
        behaviour: Callable[[Any, str, bool, str], bool] | None = None,
    ) -> FakeRepo:
        repo = FakeRepo(dict(files), refs or {"main": commit_sha(repo_id)}, gated_token, status, behaviour)
        self.repos[repo_id] = repo
        return repo

    def log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    @property
    def hub(self) -> HubServer:
        hub: HubServer = self.server.hub  # type: ignore[attr-defined]
        return hub

    def _serve(self, body: bool) -> None:
        path = urlsplit(self.path).path
        self.hub.log(Request(self.command, path, {k.lower(): v for k, v in self.headers.items()}))
        if path.startswith("/api/models/"):
            self._model_info(path.removeprefix("/api/models/"), body)
            return
        repo_id, resolve, rest = path.lstrip("/").partition("/resolve/")
        revision, _, filename = rest.partition("/")
        if not resolve or not filename:
            self._error(404, None, "Not Found", body)
            return
        repo = self._repo(unquote(repo_id), body, gated=True)
        if repo is None:
            return
        commit = repo.commit(unquote(revision))
        if commit is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {unquote(revision)}", body)
            return
        if repo.behaviour is not None and repo.behaviour(self, unquote(filename), body, commit):
            self.close_connection = True
            return
        data = repo.files.get(unquote(filename))
        if data is None:
            message = f"{unquote(filename)} does not exist on {unquote(revision)!r}"
            self._error(404, "EntryNotFound", message, body, {"X-Repo-Commit": commit})
            return
        self._file(data, commit, body)

    def _repo(self, repo_id: str, body: bool, gated: bool) -> FakeRepo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found", body)
        elif repo.status is not None:
            self._error(repo.status, None, f"status {repo.status} set by the test", body)
        elif gated and repo.gated_token and self.headers.get("Authorization") != f"Bearer {repo.gated_token}":
            message = (
                f"Access to model {repo_id} is restricted. You must have access to it and be authenticated."
            )
            self._error(401, "GatedRepo", message, body)
        else:
            return repo
        return None

    def _file(self, data: bytes, commit: str, body: bool) -> None:
        start, end, status = 0, len(data) - 1, 200
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", "").strip())
        if match:
            start, status = int(match[1]), 206
            end = min(int(match[2]) if match[2] else end, end)
            if start > end:
                self._error(
                    416, None, "Range Not Satisfiable", body, {"Content-Range": f"bytes */{len(data)}"}
                )
                return
        headers = {
            "X-Repo-Commit": commit,
            "ETag": f'"{hashlib.sha256(data).hexdigest()}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if status == 206:
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        self._send(status, data[start : end + 1], headers, body)

    def _model_info(self, rest: str, body: bool) -> None:
        repo_id, has_revision, revision = rest.partition("/revision/")
        repo = self._repo(unquote(repo_id), body, gated=False)
        if repo is None:
            return
        commit = repo.commit(unquote(revision) if has_revision else "main")
        if commit is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {unquote(revision)}", body)
            return
        info = {
            "_id": commit[:24],
            "id": repo_id,
            "modelId": repo_id,
            "author": repo_id.partition("/")[0],
            "sha": commit,
            "private": False,
            "disabled": False,
            "gated": "manual" if repo.gated_token else False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "library_name": "transformers",
            "lastModified": "2025-01-01T00:00:00.000Z",
            "createdAt": "2025-01-01T00:00:00.000Z",
            "siblings": [{"rfilename": name} for name in sorted(repo.files)],
        }
        self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, body)

    def _error(
        self, status: int, code: str | None, message: str, body: bool, extra: dict[str, str] | None = None
    ) -> None:
        headers = {"Content-Type": "application/json", "X-Error-Message": message, **(extra or {})}
        if code:
            headers["X-Error-Code"] = code
        self._send(status, json.dumps({"error": message}).encode(), headers, body)

    def _send(self, status: int, payload: bytes, headers: dict[str, str], body: bool) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)


def closed_port_url() -> str:
    """An endpoint where nothing listens: connections are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@contextmanager
def silent_server() -> Iterator[str]:
    """An endpoint that accepts TCP connections (in the kernel backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def static_server(root: Path) -> Iterator[str]:
    """A plain file server without the Hub's headers (no X-Repo-Commit, no ETag): what a wrong
    HF_ENDPOINT, or a proxy's error page, looks like to huggingface_hub."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietFiles, directory=str(root)))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
