"""A hostile or broken Hub (the local stand-in, tests/hub_server.py, told to misbehave): slowloris
headers and bodies, endless chunked answers, a connection dropped mid-body, a body far beyond the
config cap, an index of 200,000 shards, a redirect loop, a Content-Length lie, a path-like commit, a
300 MB cached config. Every case ends within the time budget (GPUSIZE_HUB_TIMEOUT, 3 s here) with
exit 0 or 2, one line on stderr, bounded memory, few requests and nothing large left in the cache."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gpusize.sources.catalog import find_model
from tests.conftest import ROOT
from tests.helpers import negative_numbers
from tests.hub_server import HubServer, commit_sha, safetensors_bytes

BUDGET_S = 3
CONFIG = json.dumps(find_model("Qwen3-0.6B").config).encode()
TENSORS = {"model.embed_tokens.weight": ("BF16", [1000, 64]), "model.norm.weight": ("F32", [64])}
ESC = "\x1b]0;pwned\x07\x1b[2J"

#: Runs the CLI and records the process's peak memory (KiB) in $RSS_FILE.
#: The command in a child process that writes its own peak RSS: VmHWM (KiB) of its memory map, not
#: ru_maxrss, which carries the parent's size across fork + exec (vfork: the test process's, which a
#: long test run makes large).
RUNNER = """
import os, sys
from gpusize.cli import main
try:
    main(sys.argv[1:])
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(os.environ["RSS_FILE"], "w") as f:
        f.write(peak)
"""


def _send_head(handler: Any, status: int, headers: dict[str, str]) -> None:
    handler.send_response(status)
    for name, value in {**headers, "Connection": "close"}.items():
        handler.send_header(name, value)
    handler.end_headers()


def _hub_headers(commit: str, data: bytes, **extra: str) -> dict[str, str]:
    return {"X-Repo-Commit": commit, "ETag": '"0123abcd"', "Content-Length": str(len(data)), **extra}


def _quietly(write: Callable[[], None]) -> None:
    with contextlib.suppress(OSError):  # the client went away: what a test expects
        write()


def slowloris_headers(handler: Any, filename: str, body: bool, commit: str) -> bool:
    def trickle() -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(600):
            handler.wfile.write(b"x")
            time.sleep(0.1)

    _quietly(trickle)
    return True


def slowloris_body(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if filename != "config.json" or not body:
        return False

    def trickle() -> None:
        _send_head(handler, 200, _hub_headers(commit, CONFIG))
        for i in range(600):
            handler.wfile.write(CONFIG[i : i + 1])
            time.sleep(0.1)

    _quietly(trickle)
    return True


def chunked_forever(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if filename != "config.json" or not body:
        return False

    def stream() -> None:
        _send_head(
            handler, 200, {"X-Repo-Commit": commit, "ETag": '"0123abcd"', "Transfer-Encoding": "chunked"}
        )
        chunk = b" " * 65536
        for _ in range(100_000):  # 6.5 GB if nobody stops reading
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    _quietly(stream)
    return True


def no_length_stream(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if filename != "config.json" or not body:
        return False

    def stream() -> None:
        _send_head(handler, 200, {"X-Repo-Commit": commit, "ETag": '"0123abcd"', "Connection": "close"})
        handler.wfile.write(CONFIG[:-1])
        for _ in range(32_768):  # 2 GB
            handler.wfile.write(b" " * 65536)

    _quietly(stream)
    return True


def dropped_mid_body(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if filename != "config.json" or not body:
        return False
    _send_head(handler, 200, _hub_headers(commit, CONFIG))
    _quietly(lambda: handler.wfile.write(CONFIG[:100]))
    handler.connection.shutdown(socket.SHUT_RDWR)
    return True


def short_content_length(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if filename != "config.json" or not body:
        return False
    _send_head(handler, 200, {**_hub_headers(commit, CONFIG), "Content-Length": "100"})
    _quietly(lambda: handler.wfile.write(CONFIG))
    return True


def redirect_loop(handler: Any, filename: str, body: bool, commit: str) -> bool:
    _send_head(handler, 302, {"Location": handler.path, "Content-Length": "0"})
    return True


def path_like_commit(handler: Any, filename: str, body: bool, commit: str) -> bool:
    _send_head(handler, 200, _hub_headers("../../../../escaped", CONFIG))
    if body:
        _quietly(lambda: handler.wfile.write(CONFIG))
    return True


def path_like_etag(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if filename != "config.json":
        return False
    _send_head(handler, 200, {**_hub_headers(commit, CONFIG), "ETag": '"../../../escaped"'})
    if body:
        _quietly(lambda: handler.wfile.write(CONFIG))
    return True


def slow_safetensors(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if not filename.endswith(".safetensors") or not body:
        return False
    return slowloris_headers(handler, filename, body, commit)


def range_ignored(handler: Any, filename: str, body: bool, commit: str) -> bool:
    if filename != "model.safetensors" or not body:
        return False
    data = safetensors_bytes(TENSORS)

    def stream() -> None:  # no Range honoured, no Content-Length, 2 GB after the real file
        _send_head(handler, 200, {"X-Repo-Commit": commit, "ETag": '"beef"', "Connection": "close"})
        handler.wfile.write(data)
        for _ in range(32_768):
            handler.wfile.write(bytes(65536))

    _quietly(stream)
    return True


def _raw_safetensors(header: dict[str, Any]) -> bytes:
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + bytes(64)


HUGE_INDEX = json.dumps(
    {"weight_map": {f"t{i}": f"model-{i + 1:06d}-of-200000.safetensors" for i in range(200_000)}}
).encode()

REPOS: dict[str, tuple[dict[str, bytes], Callable[[Any, str, bool, str], bool] | None]] = {
    "acme/ok": ({"config.json": CONFIG, "model.safetensors": safetensors_bytes(TENSORS)}, None),
    "acme/slow-headers": ({"config.json": CONFIG}, slowloris_headers),
    "acme/slow-body": ({"config.json": CONFIG}, slowloris_body),
    "acme/chunked-forever": ({"config.json": CONFIG}, chunked_forever),
    "acme/no-length": ({"config.json": CONFIG}, no_length_stream),
    "acme/dropped": ({"config.json": CONFIG}, dropped_mid_body),
    "acme/short-length": ({"config.json": CONFIG}, short_content_length),
    "acme/redirect-loop": ({"config.json": CONFIG}, redirect_loop),
    "acme/path-commit": ({"config.json": CONFIG}, path_like_commit),
    "acme/path-etag": ({"config.json": CONFIG}, path_like_etag),
    "acme/huge-index": ({"config.json": CONFIG, "model.safetensors.index.json": HUGE_INDEX}, None),
    "acme/slow-safetensors": (
        {"config.json": CONFIG, "model.safetensors": safetensors_bytes(TENSORS)},
        slow_safetensors,
    ),
    "acme/range-ignored": ({"config.json": CONFIG, "model.safetensors": b"unused"}, range_ignored),
    "acme/negative-shape": (
        {
            "config.json": CONFIG,
            "model.safetensors": _raw_safetensors(
                {"w": {"dtype": "BF16", "shape": [-(10**15), 10], "data_offsets": [0, 2]}}
            ),
        },
        None,
    ),
    "acme/huge-shape": (
        {
            "config.json": CONFIG,
            "model.safetensors": _raw_safetensors(
                {"w": {"dtype": "BF16", "shape": [1 << 62, 1 << 62], "data_offsets": [0, 2]}}
            ),
        },
        None,
    ),
    "acme/escape-config": ({"config.json": json.dumps({"model_type": f"x{ESC}"}).encode()}, None),
}


@pytest.fixture(scope="module")
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        for repo_id, (files, behaviour) in REPOS.items():
            server.add_repo(repo_id, files, behaviour=behaviour)
        yield server


def run(
    tmp_path: Path, hub_url: str, model: str, **extra: str
) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """`gpusize fit MODEL --json` with the stand-in as HF_ENDPOINT; (result, seconds, peak KiB)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    rss = tmp_path / "rss"
    env = {
        **clean,
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": hub_url,
        "GPUSIZE_HUB_TIMEOUT": str(BUDGET_S),
        "NO_COLOR": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "RSS_FILE": str(rss),
        **extra,
    }
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", RUNNER, "fit", model, "--gpu", "H100", "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r, time.monotonic() - started, int(rss.read_text())


def cache_bytes(tmp_path: Path) -> int:
    folder = tmp_path / "hf"
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def assert_one_line(r: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout[:300], r.stderr)
    assert r.stdout == "" and r.stderr.startswith("gpusize: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    for fragment in fragments:
        assert fragment in r.stderr, r.stderr


def requests_for(hub: HubServer, repo_id: str) -> int:
    return sum(1 for r in hub.requests if f"/{repo_id}/" in r.path)


#: Peak memory allowed for a run (KiB): Python, huggingface_hub and one capped 16 MiB body.
MAX_RSS_KIB = 400 * 1024


@pytest.mark.parametrize(
    "repo_id, fragments",
    [
        ("acme/slow-headers", ["no complete answer", f"within {BUDGET_S} s", "GPUSIZE_HUB_TIMEOUT"]),
        ("acme/slow-body", ["no complete answer", f"within {BUDGET_S} s"]),
        ("acme/chunked-forever", ["config.json", "too large"]),
        ("acme/no-length", ["config.json", "too large"]),
        ("acme/dropped", ["answered, but the answer broke off"]),
        ("acme/short-length", ["not valid JSON"]),
        ("acme/redirect-loop", ["redirected in a loop"]),
        ("acme/path-commit", ["not a 40-digit sha"]),
        ("acme/path-etag", ["ETag", "cannot name a file"]),
        ("acme/huge-index", ["200,000 shard files, more than 2,048"]),
        ("acme/negative-shape", ["model.safetensors", "tensor 'w'", "shape"]),
        ("acme/huge-shape", ["model.safetensors", "tensor 'w'"]),
        ("acme/escape-config", ["model_type"]),
    ],
)
def test_hostile_hub_gives_one_line_in_time(
    tmp_path: Path, hub: HubServer, repo_id: str, fragments: list[str]
) -> None:
    before = requests_for(hub, repo_id)
    r, seconds, rss = run(tmp_path, hub.url, repo_id)
    assert_one_line(r, *fragments)
    assert "\x1b" not in r.stderr and "cannot connect" not in r.stderr
    assert seconds < BUDGET_S + 8, seconds
    assert rss < MAX_RSS_KIB, rss
    # no retry loop, no request per shard (a redirect loop is followed 20 times, as browsers do); 5:
    # config.json HEAD + GET, the hf_quant_config.json HEAD, the safetensors HEAD and index GET
    assert requests_for(hub, repo_id) - before <= (21 if "redirect" in repo_id else 5)
    assert cache_bytes(tmp_path) < 1 << 20  # nothing large left in the Hub cache
    assert not list(tmp_path.rglob("escaped")) and not (tmp_path.parent / "escaped").exists()


@pytest.mark.parametrize(
    "repo_id, note", [("acme/slow-safetensors", "no answer within"), ("acme/range-ignored", None)]
)
def test_slow_or_endless_safetensors_cost_only_the_dtypes(
    tmp_path: Path, hub: HubServer, repo_id: str, note: str | None
) -> None:
    r, seconds, rss = run(tmp_path, hub.url, repo_id)
    assert r.returncode == 0, r.stderr
    assert "error" not in r.stderr  # (a warning: the tiny checkpoint is not the size of its config)
    data = json.loads(r.stdout)
    assert negative_numbers(data) == []
    assert seconds < BUDGET_S + 8 and rss < MAX_RSS_KIB, (seconds, rss)
    notes = data["assumptions"]["notes"]
    if note:
        assert data["model"]["checkpoint_bytes"] is None and any(note in n for n in notes), notes
    else:
        assert data["model"]["checkpoint_dtypes"] == {"BF16": 64_000, "F32": 64}


def test_well_behaved_repo_still_works(tmp_path: Path, hub: HubServer) -> None:
    r, _, _ = run(tmp_path, hub.url, "acme/ok")
    assert r.returncode == 0 and "error" not in r.stderr, r.stderr
    assert json.loads(r.stdout)["model"]["revision"] == commit_sha("acme/ok")
    offline, _, _ = run(tmp_path, hub.url, "acme/ok", HF_HUB_OFFLINE="1")
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["model"]["revision"] == commit_sha("acme/ok")


def test_offline_cached_config_of_300_mb_is_refused_unread(tmp_path: Path, hub: HubServer) -> None:
    sha = commit_sha("big")
    repo = tmp_path / "hf" / "hub" / "models--acme--big"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    snapshot = repo / "snapshots" / sha
    snapshot.mkdir(parents=True)
    with (snapshot / "config.json").open("wb") as handle:
        handle.truncate(300 * 1024 * 1024)  # sparse
    r, seconds, rss = run(tmp_path, hub.url, "acme/big", HF_HUB_OFFLINE="1")
    assert_one_line(r, "too large")
    assert seconds < 10 and rss < MAX_RSS_KIB, (seconds, rss)


@pytest.mark.parametrize("value", ["abc", "0", "-5", "nan", "inf", "1e9"])
def test_bad_budget_is_one_line(tmp_path: Path, hub: HubServer, value: str) -> None:
    r, _, _ = run(tmp_path, hub.url, "acme/ok", GPUSIZE_HUB_TIMEOUT=value)
    assert_one_line(r, "GPUSIZE_HUB_TIMEOUT")


# --------------------------------------------------------------------------- what already held, now tested


class _Cdn(BaseHTTPRequestHandler):
    """A second origin (another port): what a CDN behind a Hub redirect is. Logs every request."""

    seen: ClassVar[list[dict[str, str]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        _Cdn.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(200)
        self.send_header("Content-Length", str(len(CONFIG)))
        self.end_headers()
        self.wfile.write(CONFIG)


@contextlib.contextmanager
def cdn() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Cdn)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_token_is_not_sent_across_a_redirect(tmp_path: Path) -> None:
    with cdn() as cdn_url, HubServer() as server:

        def to_cdn(handler: Any, filename: str, body: bool, commit: str) -> bool:
            if filename != "config.json":
                return False
            headers = {
                "Location": f"{cdn_url}/blob/config.json",
                "X-Repo-Commit": commit,
                "X-Linked-Etag": '"0123abcd"',
                "X-Linked-Size": str(len(CONFIG)),
                "Content-Length": "0",
            }
            _send_head(handler, 302, headers)
            return True

        server.add_repo("acme/redirected", {"config.json": CONFIG}, behaviour=to_cdn)
        _Cdn.seen.clear()
        r, _, _ = run(tmp_path, server.url, "acme/redirected", HF_TOKEN="hf_secret_token")
        assert r.returncode == 0, r.stderr
        hub_asks = [q for q in server.requests if q.path.endswith("/config.json")]
        assert hub_asks and all(q.headers.get("authorization") == "Bearer hf_secret_token" for q in hub_asks)
        assert _Cdn.seen and all("authorization" not in headers for headers in _Cdn.seen)


def test_remote_code_is_never_fetched(tmp_path: Path, hub: HubServer) -> None:
    config = json.loads(CONFIG) | {"auto_map": {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}}
    hub.add_repo(
        "acme/auto-map",
        {
            "config.json": json.dumps(config).encode(),
            "modeling_evil.py": b"import os; os.system('touch PWNED')",
        },
    )
    r, _, _ = run(tmp_path, hub.url, "acme/auto-map")
    assert r.returncode == 0, r.stderr
    assert not any("modeling_evil" in q.path for q in hub.requests)


def test_twenty_parallel_runs_share_one_cache(tmp_path: Path, hub: HubServer) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    env = {**clean, "HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": hub.url, "NO_PROXY": "127.0.0.1"}
    args = [sys.executable, "-m", "gpusize", "fit", "acme/ok", "--gpu", "H100", "--json"]
    procs = [
        subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(20)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 20, [err for _, err in outs if err][:1]
    assert len({out for out, _ in outs}) == 1
    blobs = list((tmp_path / "hf" / "hub" / "models--acme--ok" / "blobs").iterdir())
    assert len(blobs) == 1  # one config.json, written atomically by whichever run came first
    assert not list((tmp_path / "hf").rglob("*.incomplete")) and not list(
        (tmp_path / "hf").rglob(".gpusize-*")
    )
    offline = subprocess.run(
        args, env={**env, "HF_HUB_OFFLINE": "1"}, cwd=ROOT, capture_output=True, text=True
    )
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["model"]["revision"] == json.loads(outs[0][0])["model"]["revision"]


def test_hub_model_with_stderr_closed(tmp_path: Path, hub: HubServer) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    env = {**clean, "HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": hub.url, "NO_PROXY": "127.0.0.1"}
    command = f"'{sys.executable}' -m gpusize fit acme/ok --gpu H100 --json 2>&-"
    r = subprocess.run(["sh", "-c", command], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["fits"] is True
