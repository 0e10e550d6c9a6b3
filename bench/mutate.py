"""Mutation run over the rules of core/kvcache.py, core/plan.py, core/weights/ and the layer kinds
(core/kinds/).

Each mutant is a hand-written edit (file, original snippet, replacement, what it breaks), applied one
at a time to a copy of the repository in a temporary directory (the worktree is never edited); the
core tests run against the copy and the mutant is *killed* when they fail, *survives* when they pass.
Mutants marked equivalent (no input a caller can pass tells them apart) are run but not counted.

Usage:
  python bench/mutate.py              run every mutant, write bench/results/mutation.json and MUTATION.md
  python bench/mutate.py 3 17         run only those mutants (by number), print, write nothing
  python bench/mutate.py --list       list the mutants
  python bench/mutate.py --report     re-render bench/MUTATION.md from bench/results/mutation.json
  python bench/mutate.py --without-rule-tests
                                      the same run without tests/core/test_rules_*.py: the "before"
                                      column of MUTATION.md (bench/results/mutation-before.json)

The per-mutant test selection is tests/core (about 10 s on an idle core: `pytest -x` stops at the
first failure, so killed mutants are faster); the full run takes a few minutes.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "mutation.json"
BEFORE = ROOT / "bench" / "results" / "mutation-before.json"
REPORT = ROOT / "bench" / "MUTATION.md"
#: What each mutant is tested against: the core tests (rule tests, families, engines, properties).
TESTS = ["tests/core"]
#: The rule-level tests, left out by --without-rule-tests to show what the other tests catch alone.
RULE_TESTS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "core").glob("test_rules_*.py"))
#: What the copy needs to import the package, read the catalogs and run the tests.
COPIED = ("gpusize", "tests", "data", "pyproject.toml", "README.md")
#: A mutant whose tests run longer than this is counted as killed (a hang is a detected fault).
TIMEOUT_S = 600

KV, PLAN = "gpusize/core/kvcache.py", "gpusize/core/plan.py"
#: core/weights/: the formats, the checkpoint's own quantization, `--dtype`, the bytes per GPU.
FORMATS, CHECKPOINT, DTYPE, PER_GPU = (
    f"gpusize/core/weights/{name}.py" for name in ("formats", "checkpoint", "dtype", "per_gpu")
)
#: The layer kinds the KV, state and split rules moved into (core/kinds/: each kind owns its rules).
ATTN, MLA, DELTANET, MAMBA = (
    f"gpusize/core/kinds/{name}.py" for name in ("attention", "mla", "gated_deltanet", "mamba2")
)


@dataclass(frozen=True)
class Mutant:
    file: str
    original: str
    replacement: str
    description: str
    #: Why no caller can tell it from the original (then it is not counted); None for a real mutant.
    equivalent: str | None = None


MUTANTS = [
    # ------------------------------------------------------------------ core/kvcache.py
    Mutant(KV, "return max(1, num_kv_heads // tp)", "return num_kv_heads // tp", "KV heads not replicated"),
    Mutant(
        MLA,
        "return spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim",
        "return spec.mla.kv_lora_rank",
        "MLA latent without the rope part",
    ),
    Mutant(
        KV,
        "        return kv_bytes_per_token(spec, layer, on_gpu, kv_bytes)\n",
        "        return kv_bytes_per_token(spec, layer, on_gpu, kv_bytes) // (tp if spec.mla else 1)\n",
        "MLA latent divided by TP",
    ),
    Mutant(
        ATTN,
        "return kv_heads * (head_width(spec, layer) + value_width(spec, layer)) + layer.index_head_dim",
        "return kv_heads * head_width(spec, layer) + layer.index_head_dim",
        "K only, no V",
    ),
    Mutant(
        KV,
        "kv_bytes_per_token_per_layer(spec, kv_bytes, tp, layer.num_key_value_heads, layer) * n\n",
        "kv_bytes_per_token_per_layer(spec, kv_bytes, tp, None, layer) * n\n",
        "per-layer KV heads ignored (DeciLM)",
    ),
    Mutant(
        KV,
        "return int(state_elements(spec) * state_bytes / tp)",
        "return int(state_elements(spec) * state_bytes)",
        "state not divided by TP",
    ),
    Mutant(
        DELTANET,
        "channels = 2 * la.num_key_heads * la.key_head_dim + la.num_value_heads",
        "channels = la.num_key_heads * la.key_head_dim + la.num_value_heads",
        "DeltaNet conv window without the second key block",
    ),
    Mutant(
        DELTANET,
        "return (la.conv_kernel - 1) * (",
        "return la.conv_kernel * (",
        "DeltaNet conv window of kernel, not kernel - 1",
    ),
    Mutant(
        MAMBA,
        "(mb.num_heads * mb.head_dim + 2 * groups * mb.state_size) // tp",
        "(mb.num_heads * mb.head_dim + groups * mb.state_size) // tp",
        "Mamba conv channels with one B/C block",
    ),
    Mutant(
        MAMBA,
        "return conv, mb.num_heads // tp * mb.head_dim * mb.state_size",
        "return 0, mb.num_heads // tp * mb.head_dim * mb.state_size",
        "Mamba conv state dropped",
    ),
    Mutant(
        KV,
        "return max(MLA_BLOCK_SIZE, default_block) if spec.mla else default_block",
        "return default_block",
        "MLA block size 16",
    ),
    Mutant(
        KV,
        "return KvLayout(page, block, count, (KvGroup(kind, window),))",
        "return KvLayout(page, block, 1, (KvGroup(kind, window),))",
        "one attention type: a block id costs one layer's page",
    ),
    Mutant(
        KV,
        "return largest if largest < group_ratio * smallest else smallest",
        "return smallest",
        "hybrid group rule: never the largest",
    ),
    Mutant(
        KV,
        "return largest if largest < group_ratio * smallest else smallest",
        "return largest",
        "hybrid group rule: always the largest",
    ),
    Mutant(
        KV,
        "return largest if largest < group_ratio * smallest else smallest",
        "return largest if largest <= group_ratio * smallest else smallest",
        "hybrid group rule at exactly 1.5",
    ),
    Mutant(
        KV,
        "return largest if largest < group_ratio * smallest else smallest",
        "return largest if largest < GROUP_SIZE_RATIO * smallest else smallest",
        "the release's group ratio ignored",
    ),
    Mutant(KV, "return -(-count // size)", "return count // size", "groups per type floored"),
    Mutant(
        KV,
        "return num_blocks // len(layout.groups) * layout.block_size",
        "return num_blocks * layout.block_size",
        "capacity not per group",
    ),
    Mutant(
        KV,
        "blocks = -(-min(group.window - 1 + max_num_batched_tokens, context) // bs) + 1",
        "blocks = -(-min(group.window - 1 + max_num_batched_tokens, context) // bs)",
        "sliding group without the extra block",
    ),
    Mutant(
        KV,
        "blocks = -(-min(group.window - 1 + max_num_batched_tokens, context) // bs) + 1",
        "blocks = -(-min(group.window + max_num_batched_tokens, context) // bs) + 1",
        "sliding group of window, not window - 1, tokens",
    ),
    Mutant(
        KV,
        "blocks = -(-min(group.window - 1 + max_num_batched_tokens, context) // bs) + 1",
        "blocks = -(-(group.window - 1 + max_num_batched_tokens) // bs) + 1",
        "sliding group not capped by the context",
    ),
    Mutant(
        KV,
        "blocks = -(-min(group.window + max_num_batched_tokens, context) // bs)",
        "blocks = -(-min(group.window + max_num_batched_tokens, context) // bs) + 1",
        "chunked group with an extra block",
    ),
    Mutant(
        KV,
        "blocks = -(-min(group.window + max_num_batched_tokens, context) // bs)",
        "blocks = -(-min(group.window - 1 + max_num_batched_tokens, context) // bs)",
        "chunked group of chunk - 1 tokens",
    ),
    Mutant(
        KV,
        'if group.kind == "full" or group.window is None:',
        'if group.kind != "sliding" or group.window is None:',
        "chunked group sized as full attention",
    ),
    Mutant(KV, "blocks = -(-context // bs)", "blocks = context // bs", "full group blocks floored"),
    Mutant(
        KV,
        "lo, hi = (mid, hi) if need <= num_blocks else (lo, mid - 1)",
        "lo, hi = (mid, hi) if need < num_blocks else (lo, mid - 1)",
        "largest context one block short",
    ),
    Mutant(
        KV,
        "return max(0, available_bytes // layout.bytes_per_block)",
        "return available_bytes // layout.bytes_per_block",
        "pool blocks negative when nothing is left",
    ),
    # ------------------------------------------------------------------ core/plan.py
    Mutant(
        ATTN,
        "        if heads % tp:\n",
        "        if False:\n",
        "attention-heads divisibility rule deleted",
    ),
    Mutant(
        ATTN,
        "if kv and kv % tp and tp % kv:",
        "if kv and kv % tp:",
        "KV heads never replicated (tp > kv refused)",
    ),
    Mutant(
        ATTN,
        "if kv and kv % tp and tp % kv:",
        "if kv and (kv % tp or tp % kv):",
        "KV rule needs both directions",
    ),
    Mutant(
        MLA,
        "        if layer.num_attention_heads % tp:\n",
        "        if layer.num_attention_heads % tp or (\n"
        "            layer.num_key_value_heads % tp and tp % layer.num_key_value_heads\n"
        "        ):\n",
        "KV rule applied to MLA",
    ),
    Mutant(
        DELTANET,
        "if la and (la.num_value_heads % tp or la.num_key_heads % tp):",
        "if la and la.num_value_heads % tp:",
        "linear-attention key heads not checked",
    ),
    Mutant(
        MAMBA,
        "if spec.mamba and spec.mamba.num_heads % tp:",
        "if False:",
        "Mamba heads rule deleted",
    ),
    Mutant(
        PLAN,
        "if spec.moe and expert_parallel and tp > spec.moe.num_experts:",
        "if spec.moe and expert_parallel and tp >= spec.moe.num_experts:",
        "EP refused at tp = experts",
    ),
    Mutant(
        PLAN,
        "if spec.moe and expert_parallel and tp > spec.moe.num_experts:",
        "if False:",
        "EP with more ranks than experts accepted",
    ),
    Mutant(
        PLAN,
        "width = spec.moe.moe_intermediate_size // (1 if expert_parallel else tp) if spec.moe else 0",
        "width = spec.moe.moe_intermediate_size // tp if spec.moe else 0",
        "FP8 block rule slices experts under EP",
    ),
    Mutant(
        PLAN,
        "if spec.moe and fp8_block and width % fp8_block[1]:",
        "if False:",
        "FP8 block rule deleted",
    ),
    Mutant(
        PLAN,
        "if spec.max_context and context > spec.max_context:",
        "if spec.max_context and context >= spec.max_context:",
        "context equal to the maximum refused",
    ),
    Mutant(PLAN, "if factor < 2 or factor > 64:", "if factor < 2:", "YaRN factor uncapped"),
    Mutant(PLAN, "if factor < 2 or factor > 64:", "if factor < 2 or factor > 32:", "YaRN cap at 32"),
    Mutant(PLAN, "if factor < 2 or factor > 64:", "if factor < 1 or factor > 64:", "YaRN factor 1 offered"),
    Mutant(
        PLAN,
        "original = 1 << (positions.bit_length() - 1)",
        "original = positions",
        "YaRN original not rounded to a power of two",
    ),
    Mutant(
        PLAN,
        "if not positions or spec.learned_position_embeddings or spec.rope_scaling:",
        "if not positions or spec.learned_position_embeddings:",
        "YaRN offered over an existing rope scaling",
    ),
    Mutant(
        PLAN,
        'key=lambda c: (c.num_gpus, c.usd_per_hour or float("inf"), c.gpu))',
        'key=lambda c: (c.num_gpus, c.usd_per_hour or float("inf"), c.gpu), reverse=True)',
        "ranking inverted",
    ),
    Mutant(
        PLAN,
        'key=lambda c: (c.num_gpus, c.usd_per_hour or float("inf"), c.gpu))',
        "key=lambda c: (c.num_gpus, c.usd_per_hour or 0.0, c.gpu))",
        "unpriced ranked first",
    ),
    Mutant(
        PLAN,
        'key=lambda c: (c.num_gpus, c.usd_per_hour or float("inf"), c.gpu))',
        'key=lambda c: (c.usd_per_hour or float("inf"), c.num_gpus, c.gpu))',
        "price before GPU count",
    ),
    Mutant(PLAN, "fitting = [c for c in best if c.fits]", "fitting = list(best)", "misfits ranked"),
    Mutant(
        PLAN,
        "return fitting[0] if fitting else None",
        "return fitting[-1] if fitting else None",
        "worst recommended",
    ),
    Mutant(
        PLAN,
        "        if candidate.fits:\n            break\n",
        "",
        "smallest_fit does not stop at the first fit",
    ),
    # ------------------------------------------------------------------ core/weights/
    Mutant(
        FORMATS,
        'return "bf16" if spec.torch_dtype in ("fp32", "fp8", "int8", "int4", "fp4") else spec.torch_dtype',
        'return "bf16" if spec.torch_dtype in ("fp8", "int8", "int4", "fp4") else spec.torch_dtype',
        "fp32 checkpoints served at 4 B a weight",
    ),
    Mutant(
        DTYPE,
        '            "fp8",\n            1 + FP8_CHANNEL_SCALE_BYTES / spec.hidden_size,',
        '            "fp8",\n            1,',
        "--dtype fp8 without channel scales",
    ),
    Mutant(
        DTYPE,
        'other = DTYPE_BYTES[act] if dtype in ("fp8", "int8", "int4") else DTYPE_BYTES[dtype]',
        'other = DTYPE_BYTES[act] if dtype in ("fp8", "int4") else DTYPE_BYTES[dtype]',
        "--dtype int8 embeddings at 1 B",
    ),
    Mutant(DTYPE, "0.5 + 2 / INT4_GROUP_SIZE,", "0.5,", "--dtype int4 without group scales"),
    Mutant(
        CHECKPOINT,
        'per_channel = q.group_size is None and q.method in ("gptq", "awq")',
        "per_channel = False",
        "GPTQ/AWQ per-channel scales as groups of 128",
    ),
    Mutant(
        CHECKPOINT,
        "group = spec.hidden_size if per_channel else (q.group_size or INT4_GROUP_SIZE)",
        "group = spec.hidden_size if per_channel else INT4_GROUP_SIZE",
        "GPTQ/AWQ group size ignored",
    ),
    Mutant(
        CHECKPOINT,
        "4 / (q.block_size[0] * q.block_size[1])",
        "4 / q.block_size[0]",
        "FP8 block scale per row of blocks",
    ),
    Mutant(
        CHECKPOINT,
        "else (FP8_CHANNEL_SCALE_BYTES / spec.hidden_size)",
        "else 0",
        "FP8 per-tensor checkpoint without channel scales",
    ),
    Mutant(CHECKPOINT, "            0.5 + 1 / 32,", "            0.5,", "MXFP4 without its e8m0 scales"),
    Mutant(
        CHECKPOINT, 'if "attn" in pattern:', 'if "self_attn." in pattern:', "unquantized attention missed"
    ),
    Mutant(
        PER_GPU,
        "return int(spec.max_position_embeddings * spec.head_dim * fmt.other_bytes)",
        "return int(spec.max_position_embeddings * spec.head_dim * fmt.linear_bytes)",
        "rope table in the linear format",
    ),
    Mutant(
        PER_GPU,
        "if spec.mla or not spec.max_position_embeddings or spec.learned_position_embeddings:",
        "if not spec.max_position_embeddings or spec.learned_position_embeddings:",
        "rope table counted for MLA",
    ),
    Mutant(
        PER_GPU,
        "        + counts.vision * fmt.other_bytes\n    )",
        "        + (counts.vision + counts.router) * fmt.other_bytes\n    )",
        "router weights counted twice (sharded and replicated)",
    ),
    Mutant(
        PER_GPU,
        "        + counts.vision * fmt.other_bytes\n    )\n"
        "    replicated = (\n"
        '        counts.replicated_attention * quant["attention"]\n'
        '        + _latent_projections(spec) * quant["shared_experts"]\n'
        "        + _vectors_bytes(counts, fmt)\n",
        "        + (counts.vision + counts.router) * fmt.other_bytes\n    )\n"
        "    replicated = (\n"
        '        counts.replicated_attention * quant["attention"]\n'
        '        + _latent_projections(spec) * quant["shared_experts"]\n'
        "        + counts.small * _or(fmt.small_bytes, fmt.other_bytes)\n",
        "router weights sharded instead of replicated",
    ),
    Mutant(
        PER_GPU,
        "    return (counts.small + counts.router) * _or(",
        "    return counts.small * _or(",
        "router weights dropped",
    ),
    Mutant(
        PER_GPU,
        '(counts.attention - counts.replicated_attention) * quant["attention"]',
        'counts.attention * quant["attention"]',
        "MLA down-projections counted twice (sharded and replicated)",
    ),
    Mutant(
        PER_GPU,
        '(counts.attention - counts.replicated_attention) * quant["attention"]\n'
        '        + counts.mlp * quant["mlp"]\n'
        "        + experts\n"
        '        + (counts.shared_experts - _latent_projections(spec)) * quant["shared_experts"]\n'
        "        + counts.embedding * _per_embedding(fmt)\n"
        "        + counts.lm_head * _per_lm_head(fmt)\n"
        "        + counts.vision * fmt.other_bytes\n"
        "    )\n"
        "    replicated = (\n"
        '        counts.replicated_attention * quant["attention"]\n',
        'counts.attention * quant["attention"]\n'
        '        + counts.mlp * quant["mlp"]\n'
        "        + experts\n"
        '        + (counts.shared_experts - _latent_projections(spec)) * quant["shared_experts"]\n'
        "        + counts.embedding * _per_embedding(fmt)\n"
        "        + counts.lm_head * _per_lm_head(fmt)\n"
        "        + counts.vision * fmt.other_bytes\n"
        "    )\n"
        "    replicated = (\n"
        "        0\n",
        "MLA down-projections sharded instead of replicated",
    ),
    Mutant(
        PER_GPU,
        "mtp = counts.mtp * fmt.linear_bytes / tp if include_mtp else 0",
        "mtp = counts.mtp * fmt.linear_bytes if include_mtp else 0",
        "MTP weights not sharded at TP>1",
    ),
    Mutant(
        PER_GPU,
        "mtp = counts.mtp * fmt.linear_bytes / tp if include_mtp else 0",
        "mtp = counts.mtp * fmt.other_bytes / tp if include_mtp else 0",
        "MTP weights unquantized",
    ),
    Mutant(
        PER_GPU,
        "experts *= tp * math.ceil(spec.moe.num_experts / tp) / spec.moe.num_experts",
        "experts *= 1",
        "EP deals fractional experts",
    ),
    Mutant(
        PER_GPU,
        "        if kv and tp > kv:\n",
        "        if False:\n",
        "no replicated K/V weights at tp > kv heads",
    ),
    Mutant(
        PER_GPU,
        "        if kv and tp > kv:\n",
        "        if kv and tp >= kv:\n",
        "replicated K/V from tp = kv heads",
        equivalent="at tp = kv heads each term is hidden x width x (1 - kv / tp) = 0",
    ),
    Mutant(
        PER_GPU,
        "extra += spec.hidden_size * width * (1 - kv / tp)",
        "extra += spec.hidden_size * width",
        "replicated K/V counted whole, not beyond the shard",
    ),
    Mutant(
        PER_GPU,
        'extra_kv = _replicated_kv_weights(spec, tp) * quant["attention"]',
        "extra_kv = _replicated_kv_weights(spec, tp) * fmt.other_bytes",
        "replicated K/V weights unquantized",
    ),
    Mutant(
        PER_GPU,
        "hidden, width = spec.moe.latent_size or spec.hidden_size, spec.moe.moe_intermediate_size // tp",
        "hidden, width = spec.moe.latent_size or spec.hidden_size, spec.moe.moe_intermediate_size",
        "MXFP4 padding of the whole, not the per-rank, width",
    ),
    Mutant(
        PER_GPU,
        "    return moe_layers(spec) * 2 * spec.hidden_size * spec.moe.latent_size\n",
        "    return 0\n",
        "latent MoE projections sharded by TP, not replicated",
    ),
    Mutant(
        CHECKPOINT,
        "if abs(ratio - 1) <= CHECKPOINT_TOLERANCE:",
        "if ratio - 1 <= CHECKPOINT_TOLERANCE:",
        "a checkpoint smaller than its config ignored",
    ),
    Mutant(
        CHECKPOINT,
        "main_share = counts.total / (counts.total + counts.mtp) if counts.mtp else 1.0",
        "main_share = 1.0",
        "MTP share of the stored bytes not set aside",
    ),
    Mutant(
        PER_GPU,
        "stored = (sharded / tp + replicated + extra_kv + mtp) * fmt.checkpoint_scale",
        "stored = sharded / tp + replicated + extra_kv + mtp",
        "checkpoint scale not applied",
    ),
    Mutant(
        FORMATS,
        "if not BPW_RANGE[0] <= bits <= BPW_RANGE[1]:",
        "if not BPW_RANGE[0] < bits <= BPW_RANGE[1]:",
        "bpw1 refused",
    ),
    Mutant(
        PER_GPU,
        "return _linear_bytes(spec.params, fmt) * fmt.checkpoint_scale / n",
        "return _linear_bytes(spec.params, fmt) * fmt.checkpoint_scale",
        "linear lower bound not split",
    ),
    Mutant(
        CHECKPOINT,
        "if q.weight_bits == 8 and q.group_size is None:",
        "if q.weight_bits == 8:",
        "grouped int8 checkpoints with FP8 channel scales",
    ),
    # The per-layer replicated K/V rule (Gemma 4: layers of their own KV heads and widths, K = V).
    Mutant(
        PER_GPU,
        "width = head_width(spec, layer) + (0 if layer.k_eq_v else value_width(spec, layer))",
        "width = head_width(spec, layer) + value_width(spec, layer)",
        "replicated K/V with a v_proj on K-equals-V layers",
    ),
    Mutant(
        PER_GPU,
        "        kv = layer.num_key_value_heads\n",
        "        kv = spec.num_key_value_heads\n",
        "replicated K/V by the model's KV heads, not the layer's",
    ),
]


#: Why a counted mutant survives (filled in from the last run's survivors).
SURVIVOR_NOTES: dict[int, str] = {}


def _copy(into: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
        else:
            shutil.copy2(source, into / name)


def _run_tests(copy: Path, ignored: list[str]) -> tuple[bool, float]:
    """(tests passed, seconds) against the package in `copy`."""
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS]
    command += [f"--ignore={path}" for path in ignored]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=copy, env=env, capture_output=True, timeout=TIMEOUT_S, check=False)
        passed = done.returncode == 0
    except subprocess.TimeoutExpired:
        passed = False
    return passed, time.monotonic() - started


def _shadows(copy: Path) -> None:
    """Stop unless the copy's package is the one imported (not the editable install of the worktree)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import gpusize; print(gpusize.__file__)"],
        cwd=copy,
        env={**os.environ, "PYTHONPATH": str(copy)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not probe.startswith(str(copy)):
        raise SystemExit(f"the copy does not shadow the installed package: {probe}")


def stale(numbers: list[int]) -> list[str]:
    """One line per mutant whose original snippet does not occur exactly once in its file: the code
    moved on and the mutant must be rewritten (tests/test_tooling.py runs this over every mutant)."""
    out = []
    for n in numbers:
        m = MUTANTS[n - 1]
        path = ROOT / m.file
        found = path.read_text().count(m.original) if path.exists() else 0
        if found != 1:
            out.append(f"mutant {n} ({m.description}): its snippet occurs {found} times in {m.file}")
        elif m.original == m.replacement:
            out.append(f"mutant {n} ({m.description}): the replacement is the original")
    return out


def run(numbers: list[int], ignored: list[str]) -> list[dict[str, object]]:
    problems = stale(numbers)
    if problems:  # before the baseline: a stale mutant would stop the run minutes in
        raise SystemExit("\n".join(problems))
    out = []
    with tempfile.TemporaryDirectory(prefix="gpusize-mutate-") as tmp:
        copy = Path(tmp)
        _copy(copy)
        _shadows(copy)
        baseline, seconds = _run_tests(copy, ignored)
        if not baseline:
            raise SystemExit("the unmutated tests fail; fix them first")
        print(f"baseline: passed in {seconds:.0f} s", flush=True)
        for n in numbers:
            m = MUTANTS[n - 1]
            path = copy / m.file
            text = path.read_text()
            if text.count(m.original) != 1:
                raise SystemExit(f"mutant {n}: the original snippet occurs {text.count(m.original)} times")
            path.write_text(text.replace(m.original, m.replacement))
            try:
                passed, seconds = _run_tests(copy, ignored)
            finally:
                path.write_text(text)
            status = "survived" if passed else "killed"
            print(f"{n:3} {status:8} {seconds:5.0f} s  {m.file}: {m.description}", flush=True)
            out.append({"n": n, "status": status, "seconds": round(seconds, 1)})
    return out


def _statuses(results: list[dict[str, object]]) -> dict[int, str]:
    return {int(str(r["n"])): str(r["status"]) for r in results}


def _kills(by_n: dict[int, str]) -> tuple[int, int]:
    """(killed, counted) over the non-equivalent mutants that ran."""
    ran = [n for n, m in enumerate(MUTANTS, 1) if m.equivalent is None and n in by_n]
    return sum(by_n[n] == "killed" for n in ran), len(ran)


def report(
    results: list[dict[str, object]],
    date: str,
    before: list[dict[str, object]] | None = None,
    before_date: str = "",
) -> str:
    by_n, old = _statuses(results), _statuses(before or [])
    rows = []
    for n, m in enumerate(MUTANTS, 1):
        note = f"equivalent: {m.equivalent}" if m.equivalent else SURVIVOR_NOTES.get(n, "")
        rows.append(
            f"| {n} | `{m.file.removeprefix('gpusize/core/')}` | {m.description} | {old.get(n, '-')} "
            f"| {by_n.get(n, 'not run')} | {note} |"
        )
    killed, counted = _kills(by_n)
    old_killed, old_counted = _kills(old)
    equivalent = sum(m.equivalent is not None for m in MUTANTS)
    survivors = [
        f"- {n}. `{m.file.removeprefix('gpusize/core/')}`: {m.description}. {SURVIVOR_NOTES.get(n, '')}"
        for n, m in enumerate(MUTANTS, 1)
        if m.equivalent is None and by_n.get(n) == "survived"
    ]
    rate = f"{killed / counted:.1%}" if counted else "n/a"
    before_line = (
        f"Without the rule tests ({', '.join(RULE_TESTS)}) the run of {before_date or date} killed "
        f"{old_killed} of {old_counted} ({old_killed / max(old_counted, 1):.1%}; column 'before', with "
        "the mutants of that day; '-' for a mutant added since)."
        if old
        else ""
    )
    return "\n".join(
        [
            "# Mutation run: core/kvcache.py, core/plan.py, core/weights/, core/kinds/",
            "",
            f"Run {date} by `python bench/mutate.py` (each mutant against {', '.join(TESTS)}, `pytest -x`; "
            f"{sum(float(str(r['seconds'])) for r in results) / 60:.0f} min of tests on the 2 shared cores).",
            "",
            f"{len(MUTANTS)} mutants, {equivalent} equivalent (not counted); of the {counted} counted, "
            f"**{killed} killed, {counted - killed} survived: kill rate {rate}**.",
            before_line,
            "",
            "Each mutant is one hand-written edit of these modules, applied to a temporary copy of",
            "the repository; `pytest -x tests/core` failing kills it. The issue's 26 survivors are among",
            "them: the attention-heads rule, recurrent state by TP, fp32 served in bf16, the ranking, the",
            "sliding and chunked blocks per request, the MLA block size, both branches of the hybrid group",
            "rule, EP at tp = experts, the YaRN cap, GPTQ/AWQ per-channel scales, routers, MTP at TP>1,",
            "replicated K/V weights, a checkpoint smaller than its config. An equivalent mutant is one no",
            "input tells apart from the original; it is listed with the reason and not counted.",
            "",
            "## Surviving mutants",
            "",
            *(survivors or ["None."]),
            "",
            "## Every mutant",
            "",
            "| # | file | mutation | before | now | note |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


def _render() -> None:
    data = json.loads(RESULTS.read_text())
    old = json.loads(BEFORE.read_text()) if BEFORE.exists() else {}
    REPORT.write_text(report(data["results"], data["date"], old.get("results"), old.get("date", "")))


def main(argv: list[str]) -> None:
    if argv == ["--list"]:
        for n, m in enumerate(MUTANTS, 1):
            print(f"{n:3} {m.file}: {m.description}{' (equivalent)' if m.equivalent else ''}")
        return
    if argv == ["--report"]:
        _render()
        return
    without = argv == ["--without-rule-tests"]
    numbers = [] if without else [int(a) for a in argv]
    ignored = RULE_TESTS if without else []
    results = run(numbers or list(range(1, len(MUTANTS) + 1)), ignored)
    if numbers:
        return
    date = datetime.date.today().isoformat()
    target = BEFORE if without else RESULTS
    target.parent.mkdir(exist_ok=True)
    record = {"date": date, "tests": TESTS, "ignored": ignored, "results": results}
    target.write_text(json.dumps(record, indent=1) + "\n")
    if RESULTS.exists():
        _render()
        print(REPORT.read_text())


if __name__ == "__main__":
    main(sys.argv[1:])
