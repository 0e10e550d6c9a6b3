"""Fuzzing the inputs a user hands gpusize: one-field edits of catalog configs, GGUF headers (edited
metadata, odd tensors, truncation, flipped bytes), safetensors headers and user catalogs. Whatever the
input, the command line answers 0 (fits), 1 (does not fit) or 2 (one line on stderr), never 3; no
byte count in the JSON is negative; and it answers within a time bound.

The CLI runs in this process (tests.helpers.run_in_process) under a hard per-example alarm. The default
run is small and derandomized (a few seconds); GPUSIZE_FUZZ_EXAMPLES=N runs N random examples per
input kind (the issue's acceptance run used a few thousand).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import random
import signal
import struct
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusize.sources.catalog import find_model
from tests.gguf_files import TINY_META, tiny_tensors, write_tiny
from tests.helpers import CliResult, negative_numbers, run_in_process

LARGE = int(os.environ.get("GPUSIZE_FUZZ_EXAMPLES", "0"))
#: Seconds one example may take before it counts as a hang (the slowest real case takes well under 1 s).
DEADLINE_S = 20
FUZZ = settings(
    max_examples=LARGE or 25,
    deadline=None,
    derandomize=not LARGE,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

#: Catalog models covering every parser path: dense, sliding, MoE, MLA + FP8, hybrid linear attention,
#: Mamba hybrid, NAS blocks, multimodal, chunked attention, MXFP4, GPTQ, compressed-tensors.
BASES = [
    "Qwen3-8B",
    "Mistral-7B-v0.1",
    "gemma-3-1b-it",
    "gemma-3-4b-it",
    "Qwen3-30B-A3B",
    "DeepSeek-V3",
    "Qwen3-Next-80B-A3B-Instruct",
    "Nemotron-H-56B-Base-8K",
    "Llama-3_3-Nemotron-Super-49B-v1",
    "Llama-4-Scout-17B-16E-Instruct",
    "gpt-oss-20b",
    "Meta-Llama-3.1-8B-Instruct-quantized.w4a16",
    "Llama-3.3-70B-Instruct-FP8-dynamic",
    "gpt_bigcode-santacoder",
    "pythia-6.9b-deduped",
]
#: Values nobody should put in a config, of every JSON type.
HOSTILE = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -1,
            1,
            2,
            3,
            7,
            8.7,
            -0.0,
            0.5,
            256.7,
            -14336,
            10**9,
            2**31,
            2**63,
            10**20,
            10**300,
            1e300,
            -1e300,
            math.nan,
            math.inf,
            -math.inf,
            "",
            "4",
            "nan",
            "two",
            "yarn",
            "fp8",
            "\x1b]0;pwned\x07\x1b[2J",
            "x" * 5000,
            [],
            [1],
            [0, 128],
            [-1, 4],
            ["a"],
            [[1]],
            {},
            {"type": "yarn"},
            {"factor": math.inf},
            {"weights": {"num_bits": "8"}},
        ]
    ),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.integers(min_value=-(2**40), max_value=2**40), max_size=5),
)


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail the example (instead of hanging the suite) when it runs past `seconds`."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"no answer within {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check(r: CliResult) -> None:
    """The contract of every answer."""
    assert r.code in (0, 1, 2), (r.code, r.stderr[:800])
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[:800]
    assert "\x1b" not in r.stdout + r.stderr
    if r.code == 2:
        assert r.stdout == "" and r.stderr.count("\n") == 1 and len(r.stderr) < 1500, r.stderr[:1500]
    elif r.stdout.startswith("{"):
        data = json.loads(r.stdout)
        assert negative_numbers(data) == [], negative_numbers(data)[:5]


#: (input kind, exit code) -> examples, and the slowest answer: reported at the end of a run.
OUTCOMES: Counter[tuple[str, int]] = Counter()
SLOWEST: list[float] = [0.0]


def cli(*args: str) -> CliResult:
    started = time.monotonic()
    with deadline(DEADLINE_S):
        r = run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "120"})
    seconds = time.monotonic() - started
    OUTCOMES[(os.environ.get("PYTEST_CURRENT_TEST", "?").split("::")[-1].split(" ")[0], r.code)] += 1
    SLOWEST[0] = max(SLOWEST[0], seconds)
    check(r)
    assert seconds < DEADLINE_S
    return r


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a config (nested objects and list items included), the root excluded."""
    out: list[tuple[Any, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        out.append((*prefix, key))
        if isinstance(value, (dict, list)) and len(out) < 5000:
            out.extend(_paths(value, (*prefix, key))[:2000])
    return out


#: Keys a config may lack that gpusize reads: an edit may add one.
EXTRA_KEYS = [
    "head_dim",
    "num_key_value_heads",
    "sliding_window",
    "rope_scaling",
    "quantization_config",
    "num_experts",
    "num_experts_per_tok",
    "kv_lora_rank",
    "block_configs",
    "hybrid_override_pattern",
    "layer_types",
    "vision_config",
    "text_config",
    "linear_num_value_heads",
    "mamba_num_heads",
    "full_attention_interval",
    "num_nextn_predict_layers",
    "attention_chunk_size",
    "max_position_embeddings",
    "tie_word_embeddings",
    "multi_query",
    "torch_dtype",
]


@st.composite
def edited_configs(draw: st.DrawFn) -> dict[str, Any]:
    config = copy.deepcopy(find_model(draw(st.sampled_from(BASES))).config)
    action = draw(st.sampled_from(["set", "set", "set", "drop", "add"]))
    if action == "add":
        target = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
        target[draw(st.sampled_from(EXTRA_KEYS))] = draw(HOSTILE)
        return config
    path = draw(st.sampled_from(_paths(config)))
    parent = config
    for key in path[:-1]:
        parent = parent[key]
    if action == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(HOSTILE)
    return config


COMMANDS = st.sampled_from(
    [
        ["fit", "{m}", "--gpu", "H100", "--ctx", "2k", "--json"],
        ["fit", "{m}", "--gpu", "L4", "--mtp", "--json"],
        ["fit", "{m}", "--engine", "sglang", "--gpu", "H200", "--ctx", "2k", "--json"],
        ["fit", "{m}", "--engine", "llamacpp", "--gpu", "RTX4090", "--ctx", "2k"],
        ["serve", "{m}", "--users", "16", "--gpu", "H100", "--ctx", "2k", "--json"],
        ["train", "{m}", "--method", "qlora", "--gpu", "A100-80GB", "--json"],
        ["curve", "{m}", "--gpu", "H100"],
        ["quote", "{m}", "--gpu", "H100", "--ctx", "2k", "--format", "markdown"],
    ]
)


@FUZZ
@given(config=edited_configs(), command=COMMANDS)
def test_fuzzed_configs(config: dict[str, Any], command: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(config))
        cli(*[str(path) if a == "{m}" else a for a in command])


# --------------------------------------------------------------------------- GGUF


def _gguf_type(value: Any) -> V:
    if isinstance(value, bool):
        return V.BOOL
    if isinstance(value, int):
        return V.INT64 if value < 0 else V.UINT64
    if isinstance(value, float):
        return V.FLOAT64
    if isinstance(value, str):
        return V.STRING
    return V.ARRAY


GGUF_VALUES = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "two", "llama", "\x1b[2J", "x" * 300, True, False]),
    st.lists(st.integers(min_value=0, max_value=2**32 - 1), min_size=1, max_size=4),
    st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=3),
)
GGUF_KEYS = [
    *TINY_META,
    "general.architecture",
    "llama.expert_count",
    "llama.expert_used_count",
    "llama.attention.key_length",
    "llama.attention.sliding_window",
    "llama.attention.kv_lora_rank",
    "general.alignment",
]


@st.composite
def gguf_files(
    draw: st.DrawFn,
) -> tuple[dict[str, tuple[object, V]], tuple[str, ...], list[Any], int, list[int]]:
    meta: dict[str, tuple[object, V]] = {}
    drop: tuple[str, ...] = ()
    tensors: list[Any] = tiny_tensors()
    kind = draw(st.sampled_from(["meta", "meta", "drop", "tensor", "truncate", "flip", "flip"]))
    if kind == "meta":
        value = draw(GGUF_VALUES)
        meta[draw(st.sampled_from(GGUF_KEYS))] = (value, _gguf_type(value))
    elif kind == "drop":
        drop = (draw(st.sampled_from(list(TINY_META))),)
    elif kind == "tensor":
        name = draw(st.sampled_from(["blk.{n}.attn_q.weight", "token_embd.weight", "output.weight", "x{n}"]))
        shape = draw(st.lists(st.sampled_from([1, 32, 64, 256, 2**20, 2**31]), min_size=1, max_size=4))
        qtype = draw(st.sampled_from([T.F16, T.F32, T.Q4_K, T.Q8_0]))
        tensors = [*tensors, (name.format(n=draw(st.integers(0, 2**40))), shape, qtype)]
    cut = draw(st.integers(0, 4000)) if kind == "truncate" else -1
    flips = draw(st.lists(st.integers(0, 3000), min_size=1, max_size=8)) if kind == "flip" else []
    return meta, drop, tensors, cut, flips


@FUZZ
@given(spec=gguf_files(), seed=st.integers(0, 2**32))
def test_fuzzed_gguf_files(spec: tuple[Any, ...], seed: int) -> None:
    meta, drop, tensors, cut, flips = spec
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.gguf"
        try:
            write_tiny(path, meta, drop, tensors)
        except (ValueError, TypeError, OverflowError, KeyError, AssertionError, OSError, struct.error):
            return  # a value (or a size) the gguf writer itself cannot store: nothing to read
        if cut >= 0:
            os.truncate(path, min(cut, path.stat().st_size))
        rng = random.Random(seed)
        with path.open("r+b") as handle:  # edited in place: a sparse file may be terabytes long
            for offset in flips:
                if offset < path.stat().st_size:
                    handle.seek(offset)
                    handle.write(bytes([rng.randrange(256)]))
        cli("fit", str(path), "--gpu", "L4", "--ctx", "2k", "--json")


# --------------------------------------------------------------------------- safetensors headers

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
        st.text(max_size=12),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
TENSOR_ENTRIES = st.one_of(
    st.fixed_dictionaries(
        {
            "dtype": st.sampled_from(["BF16", "F8_E4M3", "F32", "I64", "U8", "Q4_K", "", "bf16"]),
            "shape": st.lists(st.integers(min_value=-(2**65), max_value=2**65), max_size=9),
            "data_offsets": st.lists(st.integers(min_value=-5, max_value=2**64), max_size=3),
        }
    ),
    JSON_VALUES,
)


@FUZZ
@given(
    header=st.dictionaries(st.text(max_size=30), TENSOR_ENTRIES, max_size=6),
    length_lie=st.one_of(st.none(), st.integers(min_value=0, max_value=2**64 - 1)),
)
def test_fuzzed_safetensors_headers(header: dict[str, Any], length_lie: int | None) -> None:
    raw = json.dumps(header).encode()
    length = len(raw) if length_lie is None else length_lie
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(json.dumps(find_model("Qwen3-0.6B").config))
        (Path(folder) / "model.safetensors").write_bytes(length.to_bytes(8, "little") + raw + bytes(64))
        cli("fit", folder, "--gpu", "L4", "--json")


# --------------------------------------------------------------------------- catalogs

GPU_ENTRY = {
    "name": "FUZZGPU",
    "full_name": "Fuzz GPU",
    "vendor": "NVIDIA",
    "segment": "datacenter",
    "architecture": "hopper",
    "memory_type": "HBM3",
    "marketing_memory_gb": 80,
    "memory_mib": 81559,
    "cuda_visible_gib": 79.2,
    "ecc": "on",
    "interconnect": "nvswitch",
    "bandwidth_gbps": 3350,
    "bf16_tflops": 989,
    "price_usd_per_hour": 2.5,
    "price_date": "2026-04-10",
    "tdp_w": 700,
    "source": "fuzz",
}


def test_fuzz_bases_are_valid(tmp_path: Path) -> None:
    """The unedited GPU entry and models entry answer (exit 0): every fuzzed failure is the edit's."""
    gpus = tmp_path / "gpus.yaml"
    gpus.write_text(json.dumps([GPU_ENTRY]))
    assert cli("fit", "Qwen3-0.6B", "--gpu", "FUZZGPU", "--gpus-file", str(gpus), "--json").code == 0
    for base in BASES:
        models = tmp_path / "models.yaml"
        entry = {
            "name": "Fuzz-Model",
            "hf_id": "fuzz/model",
            "source": "fuzz",
            "config": find_model(base).config,
        }
        models.write_text(json.dumps([entry]))
        assert (
            cli("fit", "Fuzz-Model", "--gpu", "H200", "--ctx", "2k", "--models-file", str(models)).code == 0
        ), base


@FUZZ
@given(
    key=st.sampled_from([*GPU_ENTRY, "aliases", "nvlink_gbps", "free_mib", "unknown_key"]),
    value=HOSTILE,
    drop=st.booleans(),
    yaml_junk=st.one_of(st.none(), st.text(max_size=200)),
)
def test_fuzzed_gpu_catalogs(key: str, value: Any, drop: bool, yaml_junk: str | None) -> None:
    entry = dict(GPU_ENTRY)
    if drop:
        entry.pop(key, None)
    else:
        entry[key] = value
    try:
        text = yaml_junk if yaml_junk is not None else json.dumps([entry])
    except ValueError:
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gpus.yaml"
        path.write_text(text)
        cli("fit", "Qwen3-0.6B", "--gpu", "FUZZGPU", "--gpus-file", str(path), "--json")


@FUZZ
@given(
    config=edited_configs(),
    field=st.sampled_from(["config", "name", "hf_id", "aliases", "source"]),
    value=HOSTILE,
)
def test_fuzzed_model_catalogs(config: dict[str, Any], field: str, value: Any) -> None:
    entry: dict[str, Any] = {"name": "Fuzz-Model", "hf_id": "fuzz/model", "source": "fuzz", "config": config}
    if field != "config":
        entry[field] = value
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "models.yaml"
        try:
            path.write_text(json.dumps([entry]))
        except ValueError:
            path.write_text(json.dumps([entry], allow_nan=True))
        cli("which", "--gpu", "H100", "--ctx", "2k", "--models-file", str(path), "--json")
        cli("fit", "Fuzz-Model", "--gpu", "H100", "--ctx", "2k", "--models-file", str(path), "--json")


def test_fuzz_run_is_reported() -> None:
    """Runs last: how many answers of each exit code each input kind gave (print with -s; written to
    $GPUSIZE_FUZZ_REPORT when set). A run exercises all kinds, or this is a collection problem."""
    assert FUZZ.max_examples == (LARGE or 25)
    lines = [f"{kind}: exit {code}: {n}" for (kind, code), n in sorted(OUTCOMES.items())]
    internal = sum(n for (_, code), n in OUTCOMES.items() if code not in (0, 1, 2))
    lines.append(f"answers: {sum(OUTCOMES.values())}, slowest {SLOWEST[0]:.2f} s, other exits: {internal}")
    print("\n".join(lines))
    if os.environ.get("GPUSIZE_FUZZ_REPORT"):
        Path(os.environ["GPUSIZE_FUZZ_REPORT"]).write_text("\n".join(lines) + "\n")
