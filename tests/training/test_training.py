"""Training and fine-tuning sizing: golden arithmetic, the engine-log records with their tolerances,
the fit of the two calibrated constants and invariants (hypothesis).

Run `python -m tests.training.test_training` to print the record-by-record table of
bench/train_calibration.md.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec, ParamCounts
from gpusize.errors import InputError
from gpusize.sources.catalog import find_gpu, find_model
from gpusize.training import activations, anatomy, states, time_cost
from gpusize.training import device as device_module
from gpusize.training import peak as peak_module
from gpusize.training import setup as job_setup
from gpusize.units import parse_budget as parse_token_budget

#: Every public name of the training package, as one namespace (the tests predate its split by concern).
T = SimpleNamespace(
    **{
        name: value
        for module in (job_setup, anatomy, states, activations, peak_module, device_module, time_cost)
        for name, value in vars(module).items()
        if not name.startswith("_")
    }
)

try:
    from tests.conftest import engine_records
except ImportError:  # run as a script from the repository root
    from conftest import engine_records  # type: ignore[no-redef]

GIB = 1 << 30
GB = 10**9


@functools.cache
def model(name: str) -> tuple[ModelSpec, ParamCounts]:
    spec = parse_config(find_model(name).config)
    return spec, spec.params


L8, L8C = model("Llama-3.1-8B")
P8 = L8C.total  # 8,030,261,248 (tests/test_params.py)


def peak(m: peak_module.TrainMemory) -> int:
    """What PyTorch reports as peak (torch.cuda.max_memory_allocated): the allocated peak."""
    return m.allocated_peak_bytes


# --------------------------------------------------------------------------- golden arithmetic


def test_model_states_follow_the_zero_paper() -> None:
    # ZeRO paper 3.1: mixed-precision Adam = 2 (bf16 weights) + 2 (grads) + 12 (fp32 master, m, v) = 16 B.
    setup = T.TrainSetup("full", 2048)
    assert T.weights_bytes(L8, setup) == 2 * P8
    assert T.master_weights_bytes(L8, setup) == 4 * P8
    assert T.gradients_bytes(L8, setup) == 2 * P8
    assert T.optimizer_bytes(L8, setup) == 8 * P8
    # Pure bf16 (torch.optim keeps moments in the parameter dtype): 2 + 2 + 4; fp32: 4 + 4 + 8.
    pure = replace(setup, precision="bf16")
    assert T.weights_bytes(L8, pure) + T.gradients_bytes(L8, pure) == 4 * P8
    assert T.optimizer_bytes(L8, pure) == 4 * P8 and T.master_weights_bytes(L8, pure) == 0
    assert T.optimizer_bytes(L8, replace(setup, precision="fp32")) == 8 * P8


def test_optimizer_states() -> None:
    setup = T.TrainSetup("full", 2048)
    # bitsandbytes 8-bit Adam: 2 moments x (1 B + one fp32 absmax per 256 values, bitsandbytes >= 0.44).
    assert T.optimizer_bytes(L8, replace(setup, optimizer="adamw-8bit")) == int(P8 * 2 * (1 + 4 / 256))
    assert T.optimizer_bytes(L8, replace(setup, optimizer="sgd")) == 4 * P8
    assert T.optimizer_bytes(L8, replace(setup, optimizer="sgd-nomomentum")) == 0
    # Adafactor: rows + columns per matrix: per layer 4096 x (4096 + 1024 + 1024 + 4096) + 3 x (4096 +
    # 14336) = 97,216 (+ 2 x 4096 norms), two (128256 + 4096) tables, the final norm; x 4 bytes.
    per_layer = 4096 + 4096 + 2 * (4096 + 1024) + 4096 + 4096 + 3 * (4096 + 14336) + 2 * 4096
    expected = 4 * (32 * per_layer + 2 * (128256 + 4096) + 4096)
    assert T.optimizer_bytes(L8, replace(setup, optimizer="adafactor")) == expected


def test_lora_and_qlora() -> None:
    # Hu et al. 2021: r x (in + out) per adapted matrix. Llama-3.1-8B, r=16, all-linear, per layer:
    # q 8192 + k 5120 + v 5120 + o 8192 + 3 x 18432 = 81,920 x 16 = 1,310,720; x 32 layers.
    assert T.lora_params(L8, 16) == 41_943_040
    assert T.lora_params(L8, 16, T.LORA_MODULES["attention"]) == 32 * 16 * (8192 + 5120 + 5120 + 8192)
    # QLoRA paper section 3: double quantization costs 8/64 + 32/(64 x 256) = 0.127 bits per weight.
    assert pytest.approx(0.127, abs=5e-4) == (T.NF4_BYTES_PER_PARAM - 0.5) * 8
    q = T.TrainSetup("qlora", 2048, kernels=T.TORCHTUNE)
    nf4 = int(L8C.linear * T.NF4_BYTES_PER_PARAM + (P8 - L8C.linear) * 2)
    assert T.frozen_base_bytes(L8, q) == nf4
    assert T.dequant_buffer_bytes(L8, q) == 14336 * 4096 * 2  # one bf16 MLP matrix at a time
    # Transformers' QLoRA recipe (prepare_model_for_kbit_training) keeps the unquantized rest in fp32.
    assert T.frozen_base_bytes(L8, replace(q, kernels=T.TRANSFORMERS)) - nf4 == (P8 - L8C.linear) * 2


def test_activation_terms() -> None:
    full = T.TrainSetup("full", 2048)
    # Eager full training with bf16 weights (FSDP/DeepSpeed layout), per token: attention = norm (fp32
    # copy 4h + bf16 output 2h) + q/k/v input 2h + q 8192 + k, v 2 x 2048 + SDPA output 8192 + 32 fp32
    # LSEs 128 + the contiguous copy of the output kept by o_proj 8192 = 94,336; MLP = norm 6h + input
    # 2h + gate, silu, up, product 4 x 28,672 = 114,688. (Before the o_proj copy was counted: 200,832.)
    assert T.layer_activation_bytes_per_token(L8, L8.layers[0], full) == 209_024
    assert T.checkpoint_bytes_per_token(L8, full) == 32 * 4096 * 2
    # transformers 5.x loss: 12 B per token x vocab in backward, 10 in the forward (was 14).
    assert T.logits_bytes(L8, full) == 2048 * 128256 * 12
    assert T.loss_forward_bytes(L8, full) == 2048 * 128256 * 10
    # Logits and one layer's backward work never coexist: the peak adds the larger one.
    held = T.held_activations_bytes(L8, full)
    work = max(T.logits_bytes(L8, full), T.backward_working_bytes(L8, full))
    assert T.activations_bytes(L8, full) == held + work
    # Plain PyTorch AMP on one GPU: fp32 weights, the residual stream in fp32, and autocast's bf16 copy of
    # every matmul weight held through the forward.
    amp = T.TrainSetup("full", 2048, sharding="none")
    assert T.checkpoint_bytes_per_token(L8, amp) == 32 * 4096 * 4
    assert T.autocast_cache_bytes(L8, amp) == 2 * (L8C.linear + L8C.lm_head)


def test_flops_and_cost() -> None:
    plain = T.TrainSetup("full", 2048, grad_ckpt=False)
    n = L8C.active
    attn = 32 * 4 * 4096 * 1024  # per token: 4 x q_dim x causal mean context (seq / 2) per layer
    assert T.flops_per_token(L8, plain) == pytest.approx(6 * n + 3 * attn)
    assert T.flops_per_token(L8, replace(plain, grad_ckpt=True)) == pytest.approx(8 * n + 4 * attn)
    assert T.flops_per_token(L8, replace(plain, method="lora")) == pytest.approx(4 * n + 3 * attn)
    # The single- vs multi-GPU servers article's worked example: 4 GPUs at 3.2x = 80% scaling; 100 h at
    # $1/h vs 31.25 h at $4/h = +25%.
    assert T.scaling_efficiency("pcie", 4) == pytest.approx(0.8)
    assert T.training_cost_usd(100 / 3.2, 1.0, 4) == pytest.approx(125.0)
    assert T.scaling_efficiency("nvswitch", 8) > T.scaling_efficiency("bridge-pairs", 8)
    hours = T.training_hours(1e18, 989.0, 1, "nvswitch")
    assert hours == pytest.approx(1e18 / (989e12 * T.ASSUMED_MFU) / 3600)


def test_token_budget_parsing() -> None:
    assert parse_token_budget("1B") == 10**9 and parse_token_budget("500m") == 5 * 10**8
    assert parse_token_budget("2.5k") == 2500 and parse_token_budget("20000") == 20000
    for bad in ("1q", "", "-5", "0"):
        with pytest.raises(InputError):
            parse_token_budget(bad)


# --------------------------------------------------------------------------- published figures


def test_guide_full_finetune_8b() -> None:
    """The Huananzhi GPU-server guide: "full fine-tuning of 8B in mixed precision needs 80-120 GB, LoRA
    16-24 GB".

    Full, bf16-mixed as plain PyTorch AMP on one GPU (fp32 weights, fp32 grads, fp32 AdamW: 16 B/param),
    2k tokens. With torch's default foreach AdamW the peak is the optimizer step, whose square-root copy
    of the second moment adds 4 B/param: 160.7 GB allocated. Fused AdamW (transformers Trainer's default
    on torch >= 2.8) peaks in forward/backward at 129.5 GB (+ the autocast cache of bf16 weights). The
    guide's range matches bf16 weights, grads and moments (8 B/param): 65.1 GB fused, 80.4 GB foreach.
    (Before the optimizer step and autocast were modelled: 129.9 GB with bf16 weights + fp32 master.)"""
    foreach = T.train_memory(L8, T.TrainSetup("full", 2048), 1)
    assert foreach.peak_phase == "optimizer step" and foreach.step_bytes == 4 * P8
    assert 160e9 < foreach.allocated_peak_bytes < 161.5e9
    assert foreach.weights_bytes == foreach.gradients_bytes == 4 * P8 and foreach.master_weights_bytes == 0
    fused = T.train_memory(L8, T.TrainSetup("full", 2048, optimizer="adamw-fused"), 1)
    assert fused.peak_phase == "forward/backward" and 129e9 < fused.allocated_peak_bytes < 130.5e9
    pure = T.train_memory(L8, T.TrainSetup("full", 2048, precision="bf16"), 1)
    assert 80 * GB <= pure.allocated_peak_bytes <= 120 * GB


def test_guide_lora_8b() -> None:
    m = T.train_memory(L8, T.TrainSetup("lora", 2048), 1)
    assert 16 * GB <= m.total_bytes <= 24 * GB  # 22.2 GB on the device (20.4 GB allocated); was 21.4 GB


def test_acceptance_4_llama70b_lora_fsdp_matches_torchtune() -> None:
    """torchtune-readme-7: Llama 3.1 70B LoRA on 8x A100, 27.6 GiB peak per GPU."""
    measured = _measured("torchtune-readme-7", "peak_memory_per_gpu_gib") * GIB
    spec, counts = model("Llama-3.1-70B")
    cli_default = T.train_memory(spec, T.TrainSetup("lora", 2048, sharding="fsdp"), 8)
    assert abs(peak(cli_default) / measured - 1) < 0.05  # 27.4 GiB allocated (-0.6%; was 27.9, +1%)
    torchtune = T.TrainSetup(
        "lora",
        2048,
        batch=2,
        precision="bf16",
        lora_rank=16,
        lora_modules=("q", "k", "v"),
        kernels=T.TORCHTUNE,
    )
    assert abs(peak(T.train_memory(spec, torchtune, 8)) / measured - 1) < 0.10  # 28.6 GiB (+3.6%)


# --------------------------------------------------------------------------- records


@functools.cache
def _records() -> dict[str, Any]:
    return {r["id"]: r for r in engine_records()}


def _measured(rid: str, figure: str) -> float:
    value: Any = _records()[rid]["measured"]
    for key in figure.split("."):
        value = value[key]
    return float(value)


TT = dict(seq_tokens=2048, batch=2, precision="bf16", sharding="none", kernels=T.TORCHTUNE)
TT_OFFLOAD_ACTS = replace(T.TORCHTUNE, offload_checkpoints=True)
#: torchtune's eager loss path (3B table, before compile): the model returns fp32 logits (4, held),
#: cross-entropy saves its log-softmax (4), backward adds two fp32 gradients (4 + 4): 16 B/element.
TT_EAGER = T.Kernels("torchtune eager", "eager", 16.0)
#: Compiled model, unchunked loss: fp32 logits held (4) + their fp32 gradient (4).
TT_COMPILED = T.Kernels("torchtune compiled", "compiled", 8.0)
TT3B = dict(seq_tokens=4096, batch=2, precision="bf16", sharding="none", kernels=T.TORCHTUNE)
#: torchtune's full-finetune configs step torch.optim.AdamW with `fused: True`; the measured 24.9 GiB
#: with checkpointing (static states alone 24 GiB) leaves no room for foreach's 6 GiB temporary.
TT3B_FUSED = {**TT3B, "optimizer": "adamw-fused"}
QV, QKV = ("q", "v"), ("q", "k", "v")
QVO_MLP = ("q", "v", "o", "gate", "up", "down")
UNSLOTH_8B = T.TrainSetup("qlora", 1, lora_rank=32, sharding="none", kernels=T.UNSLOTH)
#: The Hugging Face column of Unsloth's benchmark (README of Jan 2025) ran transformers 4.4x.
HF_8B = replace(UNSLOTH_8B, kernels=T.TRANSFORMERS_4)


@dataclass(frozen=True)
class Case:
    """One measured figure of a training record and how we reproduce it.

    kind: peak = torch peak GiB; max_seq = longest sequence whose torch peak fits the VRAM label in
    decimal GB; oom = the record ran out of memory on `gpu`; seq_bracket = measured tokens work and
    twice as many do not. expect: the documented residual of an explained gap (None: within tol)."""

    rid: str
    figure: str
    name: str
    setup: T.TrainSetup
    gpus: int = 1
    kind: str = "peak"
    tol: float = 0.10
    expect: float | None = None
    gpu: str = ""
    fit: bool = False
    note: str = ""


CASES = [
    Case(
        "torchtune-readme-1",
        "peak_memory_per_gpu_gib",
        "Llama-3.1-8B",
        T.TrainSetup("full", optimizer="adamw-8bit", offload="optimizer", optimizer_in_backward=True, **TT),
        fit=True,
        note="8B_full_single_device: PagedAdamW8bit (paged states live outside torch's count: "
        "modelled as offloaded), optimizer_in_bwd, checkpointing",
    ),
    Case(
        "torchtune-readme-2",
        "peak_memory_per_gpu_gib",
        "Llama-3.1-8B",
        T.TrainSetup("full", optimizer="adamw-8bit", offload="optimizer", grad_ckpt=False, **TT),
        note="same recipe, checkpointing off (the A6000 has room); optimizer_in_bwd off",
    ),
    Case(
        "torchtune-readme-3",
        "peak_memory_per_gpu_gib",
        "Llama-3.1-8B",
        T.TrainSetup("lora", lora_rank=8, lora_modules=QV, **TT),
        fit=True,
        note="8B_lora_single_device at the README commit: q,v rank 8, checkpointing",
    ),
    Case(
        "torchtune-readme-4",
        "peak_memory_per_gpu_gib",
        "Llama-3.1-8B",
        T.TrainSetup("lora", lora_rank=8, lora_modules=QV, grad_ckpt=False, **TT),
        note="as row 3 with checkpointing off (A6000)",
    ),
    Case(
        "torchtune-readme-5",
        "peak_memory_per_gpu_gib",
        "Llama-3.1-8B",
        T.TrainSetup("qlora", lora_rank=8, **TT),
        fit=True,
        note="8B_qlora_single_device: q,k,v,o + MLP rank 8, NF4 (torchao), checkpointing",
    ),
    Case(
        "torchtune-readme-6",
        "peak_memory_per_gpu_gib",
        "Llama-3.1-70B",
        T.TrainSetup("full", **{**TT, "sharding": "fsdp"}, offload="params"),
        gpus=8,
        fit=True,
        note="70B_full: FSDP with fsdp_cpu_offload (params, grads, fused AdamW on the CPU)",
    ),
    Case(
        "torchtune-readme-7",
        "peak_memory_per_gpu_gib",
        "Llama-3.1-70B",
        T.TrainSetup("lora", lora_rank=16, lora_modules=QKV, **{**TT, "sharding": "fsdp"}),
        gpus=8,
        fit=True,
        note="70B_lora: q,k,v rank 16, FSDP full shard",
    ),
    Case(
        "torchtune-readme-8",
        "peak_memory_per_gpu_gb",
        "Llama-3.1-405B-Instruct",
        T.TrainSetup("qlora", lora_rank=16, **{**TT, "batch": 1, "sharding": "fsdp"}),
        gpus=8,
        note="405B_qlora: batch 1 as the config (not the README's 2); the figure read as GiB",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_packed",
        "Llama-3.2-3B",
        T.TrainSetup("full", grad_ckpt=False, **{**TT3B_FUSED, "kernels": TT_EAGER}),
        note="eager, unchunked loss, no checkpointing, torch AdamW",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_packed_compile",
        "Llama-3.2-3B",
        T.TrainSetup("full", grad_ckpt=False, **{**TT3B_FUSED, "kernels": TT_COMPILED}),
        note="+ compile",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_plus_chunked_ce",
        "Llama-3.2-3B",
        T.TrainSetup("full", grad_ckpt=False, **TT3B_FUSED),
        fit=True,
        note="+ chunked cross-entropy",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_plus_activation_checkpointing",
        "Llama-3.2-3B",
        T.TrainSetup("full", **TT3B_FUSED),
        fit=True,
        note="+ checkpointing",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_plus_optimizer_in_bwd",
        "Llama-3.2-3B",
        T.TrainSetup("full", optimizer_in_backward=True, **TT3B_FUSED),
        fit=True,
        note="+ optimizer in backward",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_plus_activation_offload",
        "Llama-3.2-3B",
        T.TrainSetup("full", optimizer_in_backward=True, **{**TT3B_FUSED, "kernels": TT_OFFLOAD_ACTS}),
        fit=True,
        note="+ checkpoints offloaded",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_plus_adamw8bit",
        "Llama-3.2-3B",
        T.TrainSetup(
            "full", optimizer="adamw-8bit", optimizer_in_backward=True, **{**TT3B, "kernels": TT_OFFLOAD_ACTS}
        ),
        fit=True,
        expect=-0.15,
        note="+ 8-bit AdamW: 2.6 GiB more than its states explain (unexplained; perhaps the 8-bit "
        "step's temporaries on the 394M-element tied embedding under optimizer_in_bwd)",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_lora",
        "Llama-3.2-3B",
        T.TrainSetup("lora", lora_rank=64, lora_modules=QVO_MLP, **{**TT3B, "kernels": TT_OFFLOAD_ACTS}),
        fit=True,
        note="3B_lora_single_device: q,v,o + MLP rank 64, bf16 AdamW, checkpoints offloaded",
    ),
    Case(
        "torchtune-readme-3b",
        "peak_active_gib_qlora",
        "Llama-3.2-3B",
        T.TrainSetup("qlora", lora_rank=64, lora_modules=QVO_MLP, **{**TT3B, "kernels": TT_OFFLOAD_ACTS}),
        fit=True,
        note="as LoRA with an NF4 base",
    ),
]
for vram in ("12GB", "16GB", "24GB", "40GB", "48GB", "80GB"):
    CASES.append(
        Case(
            "unsloth-readme-8b",
            f"max_context_by_vram.{vram}.unsloth",
            "Llama-3.1-8B",
            UNSLOTH_8B,
            kind="max_seq",
            note="QLoRA r32 all-linear, batch 1, fused CE, offloaded checkpoints",
        )
    )
CASES += [
    Case(
        "unsloth-readme-8b",
        "max_context_by_vram.8GB.unsloth",
        "Llama-3.1-8B",
        UNSLOTH_8B,
        kind="max_seq",
        expect=0.23,
        note="static 7.2 GB vs the table's 7.37 GB intercept: 0.2 GB of a 0.8 GB margin (was +36% before "
        "the step and load phases)",
    ),
    Case(
        "unsloth-readme-8b",
        "max_context_by_vram.80GB.hf_fa2",
        "Llama-3.1-8B",
        HF_8B,
        kind="max_seq",
        note="Transformers + PEFT QLoRA (fp32 embeddings and lm_head: 16 B/element of logits), FA2, "
        "checkpointing on the GPU",
    ),
    Case(
        "unsloth-readme-8b",
        "max_context_by_vram.24GB.hf_fa2",
        "Llama-3.1-8B",
        HF_8B,
        kind="max_seq",
        expect=0.12,
        note="Transformers of 2024 also kept a shifted fp32 copy of the logits (+4 B/element): "
        "with that copy -8%; the benchmark's version lies between",
    ),
    Case(
        "unsloth-readme-70b",
        "max_context_by_vram.80GB.unsloth",
        "Llama-3.3-70B-Instruct",
        replace(UNSLOTH_8B),
        kind="max_seq",
        note="QLoRA r32 all-linear on one A100 80GB",
    ),
    Case(
        "unsloth-readme-70b",
        "max_context_by_vram.48GB.unsloth",
        "Llama-3.3-70B-Instruct",
        replace(UNSLOTH_8B),
        kind="max_seq",
        expect=-1.0,
        note="static 48.3 GB vs the table's ~43 GB: fp32 adapters + AdamW (16 B x 414M) vs bf16 (8 B), and "
        "foreach AdamW's step temporary (1.7 GB); with adamw-8bit 9,161 (-24%), with bf16 adapters more "
        "(was -72% before the optimizer step was modelled)",
    ),
    Case(
        "unsloth-readme-70b",
        "max_context_by_vram.80GB.hf_fa2",
        "Llama-3.3-70B-Instruct",
        HF_8B,
        kind="max_seq",
        expect=0.31,
        note="as the 8B rows: +14% with that logits copy",
    ),
    Case(
        "llamafactory-5545",
        "",
        "Llama-3.1-8B",
        T.TrainSetup("qlora", 51974, grad_accum=8, sharding="none"),
        kind="oom",
        gpu="H100-SXM",
        note="51,974 tokens without Unsloth: 99 GiB of fp32 logits alone",
    ),
    Case(
        "llamafactory-5977",
        "",
        "Llama-3.1-8B",
        T.TrainSetup("full", 1024, grad_accum=2, sharding="zero3"),
        gpus=8,
        kind="oom",
        gpu="RTX3090",
        note="plain ZeRO-3 OOMed on 8 x RTX 3090: we predict 26.3 GiB on the device (DeepSpeed's 1 GB reduce "
        "bucket, foreach AdamW's step temporary, the allocator cache); before this model 21.3 GiB (fits)",
    ),
    Case(
        "llamafactory-5977",
        "zero3_offload_per_gpu_gb",
        "Llama-3.1-8B",
        T.TrainSetup("full", 1024, grad_accum=2, sharding="zero3", offload="params"),
        gpus=8,
        kind="process_gb",
        expect=-0.405,
        note="13 GB is a process reading (allocator cache, DeepSpeed buffers), not a peak: 7.7 GiB predicted "
        "on the device (was 6.3)",
    ),
    Case(
        "axolotl-2531",
        "allocated_by_pytorch_gib_at_oom",
        "Qwen2.5-32B-Instruct",
        T.TrainSetup(
            "full", 4096, precision="bf16", sharding="ddp", offload="optimizer", optimizer="sgd-nomomentum"
        ),
        gpus=8,
        kind="forward",
        note="OOM although ZeRO-3 offload needs 17.1 GiB/GPU: 74.1 GiB allocated = bf16 weights unsharded "
        "on every GPU (61.0, zero.Init not in effect) + activations; Qwen2.5-32B stands in for the Coder",
    ),
    Case(
        "axolotl-1717",
        "max_seq_len_lora",
        "Llama-3.1-8B",
        T.TrainSetup("lora", 1, sharding="zero3"),
        gpus=2,
        kind="seq_bracket",
        gpu="RTX3090Ti",
        note="LoRA r16 all-linear, ZeRO-3 over 2 GPUs",
    ),
    Case(
        "axolotl-1717",
        "max_seq_len_qlora",
        "Llama-3.1-8B",
        T.TrainSetup("qlora", 1, sharding="zero2", kernels=replace(T.TRANSFORMERS, upcast_unquantized=False)),
        gpus=2,
        kind="seq_bracket",
        gpu="RTX3090Ti",
        tol=0.03,
        note="QLoRA replicated (ZeRO-2), bf16 embeddings (its ~6 GB load figure); we fit 7,983, 2.6% short",
    ),
]


def predict(case: Case) -> tuple[float, float]:
    """(predicted, measured) in the record's unit; the residual is predicted / measured - 1."""
    spec, counts = model(case.name)
    if case.kind == "max_seq":
        budget = int(float(case.figure.split(".")[1].removesuffix("GB")) * GB)
        limit = 1 << 21
        got = T.largest_seq(spec, case.setup, 1, budget + T.overhead_bytes(1), limit, figure="allocated")
        return got, _measured(case.rid, case.figure)
    if case.kind == "seq_bracket":
        budget = find_gpu(case.gpu).visible_bytes
        got = T.largest_seq(spec, case.setup, case.gpus, budget, 1 << 20, figure="allocated")
        return got, _measured(case.rid, case.figure)
    m = T.allocated_memory(spec, case.setup, case.gpus)
    if case.kind in ("oom", "process_gb"):  # what the device shows: reserved + context
        m = T.train_memory(spec, case.setup, case.gpus)
    if case.kind == "oom":
        return m.total_bytes / GIB, find_gpu(case.gpu).visible_bytes / GIB
    if case.kind == "process_gb":
        return m.total_bytes / GIB, _measured(case.rid, case.figure)
    if case.kind == "forward":  # at the OOM: weights + activations, before gradients exist
        return (m.weights_bytes + m.activations_bytes) / GIB, _measured(case.rid, case.figure)
    return peak(m) / GIB, _measured(case.rid, case.figure)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rid}:{c.figure or c.kind}" for c in CASES])
def test_record(case: Case) -> None:
    got, want = predict(case)
    residual = got / want - 1
    if case.kind == "seq_bracket":  # the reported length works and twice it does not
        assert want * (1 - case.tol) <= got < 2 * want, (got, want)
    elif case.kind == "oom" and case.expect is None:
        assert got > want  # predicted peak above the GPU's visible memory
    elif case.expect is not None:  # an explained gap: it stays what bench/train_calibration.md says
        assert abs(residual - case.expect) <= 0.03, residual
    else:
        assert abs(residual) <= case.tol, residual


def test_every_training_record_is_covered() -> None:
    kinds = ("training_peak_memory", "training_max_context", "training_oom")
    ids = {r["id"] for r in engine_records() if r["kind"] in kinds}
    assert ids == {c.rid for c in CASES}


# --------------------------------------------------------------------------- the fit


def objective(workspace: float, tt_logits: float) -> float:
    """Sum of squared log residuals over the fit records: the torchtune rows with fit=True and
    Unsloth's bytes per token (8B: 8 GB -> 80 GB; 70B: 48 GB -> 80 GB) from its context tables."""
    total = 0.0
    for case in (c for c in CASES if c.fit):
        kernels = replace(case.setup.kernels, workspace_layers=workspace, logits_bytes_per_element=tt_logits)
        got, want = predict(replace(case, setup=replace(case.setup, kernels=kernels)))
        total += math.log(got / want) ** 2
    unsloth = replace(T.UNSLOTH, workspace_layers=workspace)
    for name, low, high in (("Llama-3.1-8B", "8GB", "80GB"), ("Llama-3.3-70B-Instruct", "48GB", "80GB")):
        rid = "unsloth-readme-8b" if name == "Llama-3.1-8B" else "unsloth-readme-70b"
        tokens = [_measured(rid, f"max_context_by_vram.{v}.unsloth") for v in (low, high)]
        measured = (float(high[:-2]) - float(low[:-2])) * GB / (tokens[1] - tokens[0])
        spec, counts = model(name)
        ends = [
            T.allocated_memory(spec, replace(UNSLOTH_8B, seq_tokens=s, kernels=unsloth))
            for s in (1000, 101000)
        ]
        per_token = (ends[1].allocated_peak_bytes - ends[0].allocated_peak_bytes) / 100_000
        total += math.log(per_token / measured) ** 2
    return total


def fit_constants() -> tuple[float, float, float]:
    """Grid least squares: (workspace, torchtune logits, objective), coarse 0.1 x 0.2 then 0.01 x 0.05."""
    grid = [(w / 10, 1 + k / 5) for w in range(31) for k in range(16)]
    _, w0, l0 = min((objective(w, lg), w, lg) for w, lg in grid)
    fine = [(round(w0 + dw / 100, 2), round(l0 + dl / 20, 2)) for dw in range(-10, 11) for dl in range(-4, 5)]
    best, w1, l1 = min((objective(w, lg), w, lg) for w, lg in fine)
    return w1, l1, best


def test_constants_are_the_least_squares_fit() -> None:
    """BACKWARD_WORKSPACE_LAYERS and TORCHTUNE_LOGITS_BYTES are where the fit lands, not hand-tuned."""
    workspace, logits, best = fit_constants()
    assert (workspace, logits) == (T.BACKWARD_WORKSPACE_LAYERS, T.TORCHTUNE_LOGITS_BYTES)
    assert best < 0.05  # rms log residual over the 14 fit points under 6%


# --------------------------------------------------------------------------- invariants

NAMES = [
    "Llama-3.1-8B",
    "Qwen3-30B-A3B",
    "SmolLM2-135M",
    "gemma-3-1b-it",
    "gpt_bigcode-santacoder",
    "Qwen3-Next-80B-A3B-Instruct",
    "Nemotron-H-56B-Base-8K",
    "DeepSeek-V2-Lite",
]
MODELS = {name: model(name) for name in NAMES}

setups = st.builds(
    T.TrainSetup,
    method=st.sampled_from(T.METHODS),
    seq_tokens=st.integers(1, 65536),
    batch=st.integers(1, 8),
    grad_accum=st.sampled_from([1, 4]),
    optimizer=st.sampled_from(T.OPTIMIZERS),
    precision=st.sampled_from(T.PRECISIONS),
    grad_ckpt=st.booleans(),
    lora_rank=st.sampled_from([8, 16, 64]),
    lora_modules=st.sampled_from(list(T.LORA_MODULES.values())),
    offload=st.sampled_from(["none", "optimizer"]),
    kernels=st.sampled_from(list(T.FRAMEWORKS.values())),
)
names = st.sampled_from(NAMES)


@settings(max_examples=60, deadline=None)
@given(names, setups, st.integers(1, 65536))
def test_more_sequence_never_needs_less(name: str, setup: T.TrainSetup, extra: int) -> None:
    spec, counts = MODELS[name]
    longer = replace(setup, seq_tokens=setup.seq_tokens + extra)
    for n in (1, 8):
        a, b = T.allocated_memory(spec, setup, n), T.allocated_memory(spec, longer, n)
        assert b.allocated_peak_bytes >= a.allocated_peak_bytes and b.activations_bytes >= a.activations_bytes


@settings(max_examples=60, deadline=None)
@given(names, setups)
def test_checkpointing_never_increases_activations(name: str, setup: T.TrainSetup) -> None:
    spec, counts = MODELS[name]
    on, off = replace(setup, grad_ckpt=True), replace(setup, grad_ckpt=False)
    assert T.activations_bytes(spec, on) <= T.activations_bytes(spec, off)
    assert (
        T.allocated_memory(spec, on).allocated_peak_bytes
        <= T.allocated_memory(spec, off).allocated_peak_bytes
    )


@settings(max_examples=60, deadline=None)
@given(names, setups, st.sampled_from([2, 4, 8]))
def test_sharding_never_increases_per_gpu_memory(name: str, setup: T.TrainSetup, n: int) -> None:
    """At a fixed count: ddp >= zero1 >= zero2 >= zero3 >= fsdp. More GPUs never cost more per GPU.
    FSDP on n GPUs never needs more than one GPU alone, communicator buffers aside (DeepSpeed's stages
    keep persistent gradient buffers a lone GPU does not: with no optimizer state to shard, ZeRO-1 on
    2 GPUs really can need more than 1 GPU)."""
    spec, counts = MODELS[name]

    def per_gpu(sharding: str, k: int) -> int:
        job = replace(setup, sharding=sharding)  # type: ignore[arg-type]
        return T.allocated_memory(spec, job, k).allocated_peak_bytes

    ladder = [per_gpu(s, n) for s in ("ddp", "zero1", "zero2", "zero3", "fsdp")]
    assert ladder == sorted(ladder, reverse=True)
    for s in ("zero1", "zero2", "zero3", "fsdp"):
        assert per_gpu(s, 2 * n) <= per_gpu(s, n)
    alone = T.allocated_memory(spec, replace(setup, sharding="none"), 1)
    assert per_gpu("fsdp", n) <= alone.allocated_peak_bytes


@settings(max_examples=40, deadline=None)
@given(names, setups, st.sampled_from([1, 2, 8]))
def test_offload_never_increases_gpu_memory(name: str, setup: T.TrainSetup, n: int) -> None:
    spec, counts = MODELS[name]
    fsdp = replace(setup, sharding="fsdp")
    gpu = [T.allocated_memory(spec, replace(fsdp, offload=o), n).allocated_peak_bytes for o in T.OFFLOADS]
    assert gpu == sorted(gpu, reverse=True)


if __name__ == "__main__":  # the fit and the record table of bench/train_calibration.md
    w, lg, best = fit_constants()
    print(f"fit: workspace {w} layers, torchtune logits {lg} B/element, sum sq log residual {best:.4f}")
    print("| record | figure | measured | predicted | residual | tolerance | assumed |")
    print("|---|---|---:|---:|---:|---|---|")
    for c in CASES:
        got, want = predict(c)
        tol = f"explained ({c.expect:+.0%})" if c.expect is not None else f"±{c.tol:.0%}"
        if c.kind == "seq_bracket":
            tol = f"[{want:,.0f}, {2 * want:,.0f})"
        elif c.kind == "oom" and c.expect is None:
            tol = f"OOM: > {want:.1f} GiB"
        print(
            f"| {c.rid} | {c.figure or c.kind} | {want:,.1f} | {got:,.1f} | {got / want - 1:+.1%} | {tol} | "
            f"{c.note} |"
        )
