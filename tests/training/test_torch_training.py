"""Training memory against real PyTorch runs: the allocated peak, the reserved peak and what the device
shows, and the verdict near the edge.

1. The H200 measurements (tests/data/reference/measured, torch 2.11 + transformers 5.17 + peft 0.21,
   `torch.optim.AdamW` defaults), split before anything was fitted: four lines for calibration, two
   held out. Issue 12's targets: allocated peak within 5% mean (worst 12%), device within 5% mean.
2. Published figures (tests/data/torch/published.yaml, each with its source and quote): the fsdp_qlora
   reserved-peak tables (2 x RTX 3090 / 4090), LitGPT's allocated-peak tables, PEFT's MetaMathQA
   reserved peaks (torch 2.13, transformers 5.13), PEFT's FSDP/DeepSpeed device readings and
   torchtune's reserved peaks. None was used to fit anything. Every record is a case or is listed in
   NOT_MODELLED with the reason.

Run `python -m tests.training.test_torch_training` for the tables of bench/train_calibration.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gpusize.sources.catalog import find_gpu
from gpusize.training import setup as S
from gpusize.training.device import train_memory
from tests.torch_training_records import (
    CASES,
    GIB,
    HOLDOUT,
    LITGPT,
    MIB,
    NOT_MODELLED,
    TRAIN,
    Case,
    h200_errors,
    h200_setup,
    key,
    measured,
    predict,
    predicted,
    published,
    reference_spec,
)


@pytest.mark.parametrize("rec", TRAIN, ids=["-".join(map(str, key(r))) for r in TRAIN])
def test_h200_line(rec: dict[str, Any]) -> None:
    """Each line: allocated within 5%; device within 15% (the full fine-tune without checkpointing
    reserves 0.65 GiB above its allocated peak where the replay leaves 8.8: +14.9%)."""
    alloc, device = h200_errors(rec)
    assert abs(alloc) <= 0.05, alloc
    assert abs(device) <= 0.15, device


@pytest.mark.parametrize("held_out", [False, True], ids=["calibration", "holdout"])
def test_h200_accuracy(held_out: bool) -> None:
    chosen = [r for r in TRAIN if (key(r) in HOLDOUT) == held_out]
    assert len(chosen) == (2 if held_out else 4)
    alloc, device = zip(*(h200_errors(r) for r in chosen), strict=True)
    assert sum(map(abs, alloc)) / len(alloc) <= 0.05 and max(map(abs, alloc)) <= 0.12
    assert sum(map(abs, device)) / len(device) <= 0.05


def test_the_first_step_peaks_at_the_optimizer_step() -> None:
    """Llama-3.2-1B full, fp32 weights under autocast: the first step has no optimizer states during
    its forward, so its peak is `step()`: weights + gradients + AdamW's two moments + foreach's copy of
    the second moment (4 + 4 + 8 + 4 B/param = 24.72 GB; measured peak_step1 24.78 GB)."""
    rec = next(r for r in TRAIN if key(r) == ("meta-llama__Llama-3.2-1B-Instruct", 2048, 4, True))
    m = train_memory(reference_spec(rec["name"]), h200_setup(rec), 1)
    step = m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.step_bytes
    assert m.step_bytes == m.weights_bytes  # one fp32 copy per parameter
    assert abs(step / rec["peak_step1"] - 1) < 0.01
    fused = train_memory(reference_spec(rec["name"]), replace(h200_setup(rec), optimizer="adamw-fused"), 1)
    assert fused.step_bytes == 0 and fused.allocated_peak_bytes <= m.allocated_peak_bytes


@pytest.mark.parametrize("case", CASES, ids=[c.rid for c in CASES])
def test_published(case: Case) -> None:
    if case.figure == "oom":  # the authors' run did not fit: neither may ours
        assert predict(case).device_bytes > find_gpu(case.gpu).visible_bytes
        return
    residual = predicted(case) / measured(case) - 1
    assert abs(residual) <= case.tol, residual


def test_every_published_training_record_is_covered() -> None:
    ids = {rid for rid in published()}
    cases = {c.rid for c in CASES}
    assert not cases & set(NOT_MODELLED)
    assert ids == cases | set(NOT_MODELLED)


def test_published_reserved_tables_never_fit_where_the_run_did_not() -> None:
    """On the fsdp_qlora reserved-peak tables the verdict is never "fits" where the authors' run
    could not go, and every run they report does fit its own GPUs' device figure or lies within the
    allocator's near-full retry (reserved <= visible)."""
    for case in (c for c in CASES if c.rid.startswith("fsdpqlora")):
        m, gpu = predict(case), find_gpu(case.gpu)
        if case.figure == "oom":
            assert m.device_bytes > gpu.visible_bytes
        else:
            assert m.allocated_peak_bytes + m.overhead_bytes <= gpu.visible_bytes


def test_published_accuracy() -> None:
    """Mean absolute error per kind of published figure (bench/train_calibration.md)."""
    for figure, mean_bound in (("allocated", 0.07), ("reserved", 0.08), ("device", 0.10)):
        errs = [abs(predicted(c) / measured(c) - 1) for c in CASES if c.figure == figure]
        assert errs and sum(errs) / len(errs) <= mean_bound, (figure, errs)


if __name__ == "__main__":  # the tables of bench/train_calibration.md
    print(
        "| model | method seq x batch | split | allocated GiB meas / pred | err "
        "| device GiB meas / pred | err |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for r in TRAIN:
        m = train_memory(reference_spec(r["name"]), h200_setup(r), 1)
        a, d = h200_errors(r)
        split = "holdout" if key(r) in HOLDOUT else "calibration"
        print(
            f"| {r['name']} | {r['method']} {r['precision']} {r['seq']} x {r['batch']}"
            f"{' ckpt' if r['grad_ckpt'] else ''} | {split} | {r['peak'] / GIB:.2f} / "
            f"{m.allocated_peak_bytes / GIB:.2f} | {a:+.1%} | {r['smi_used_mib'] / 1024:.2f} / "
            f"{m.device_bytes / GIB:.2f} | {d:+.1%} |"
        )
    print()
    print("| record | figure | GPUs | measured GiB | predicted GiB | residual | verdict |")
    print("|---|---|---|---:|---:|---:|---|")
    for c in CASES:
        m, gpu = predict(c), find_gpu(c.gpu)
        fits = "fits" if m.device_bytes <= gpu.visible_bytes else "does not fit"
        if c.figure == "oom":
            print(
                f"| {c.rid} | OOM | {c.gpus}x {c.gpu} | - | {m.device_bytes / GIB:.2f} (device) | - "
                f"| {fits} |"
            )
            continue
        got, want = predicted(c), measured(c)
        print(
            f"| {c.rid} | {c.figure} | {c.gpus}x {c.gpu} | {want / GIB:.2f} | {got / GIB:.2f} | "
            f"{got / want - 1:+.1%} | {fits} |"
        )


# --------------------------------------------------------------------------- mechanisms


def test_step_temporaries_per_optimizer() -> None:
    """torch 2.11: foreach AdamW copies the whole group's second moment, fused nothing, the for-loop
    two copies of one parameter's; transformers' Adafactor four fp32 copies of the largest parameter."""
    spec = reference_spec("meta-llama__Llama-3.1-8B")
    p, largest = spec.params.total, spec.params.embedding  # the 128256 x 4096 embedding
    bf16 = S.TrainSetup("full", 2048, precision="bf16", sharding="none")

    def step(**kw: Any) -> int:
        return train_memory(spec, replace(bf16, **kw), 1).step_bytes

    assert step() == 2 * p and step(optimizer="adamw-fused") == 0
    assert step(optimizer="adamw-forloop") == 2 * 2 * largest
    assert step(optimizer="adafactor") == 16 * largest
    assert step(optimizer="adamw-8bit") == step(optimizer="sgd") == 0
    # sharded states (ZeRO-1 and beyond, FSDP): foreach runs over the local shard
    assert train_memory(spec, replace(bf16, sharding="fsdp"), 8).step_bytes == 2 * p // 8


def test_buffers_and_nccl() -> None:
    """DDP keeps a bucket copy of every gradient; DeepSpeed a 5e8-element reduce bucket; NCCL's buffers
    grow with the interconnect's channels; one GPU has none of them."""
    spec = reference_spec("meta-llama__Llama-3.1-8B")
    job = S.TrainSetup("lora", 2048)
    lora = train_memory(spec, replace(job, sharding="ddp"), 8)
    assert lora.buffers_bytes == lora.gradients_bytes
    full = train_memory(spec, S.TrainSetup("full", 2048, sharding="zero2"), 8)
    assert full.buffers_bytes == 500_000_000 * 2
    one = train_memory(spec, job, 1)
    assert one.buffers_bytes == 0 and one.overhead_bytes == 775 * MIB
    nvswitch = train_memory(spec, job, 8, "nvswitch").overhead_bytes
    pcie = train_memory(spec, job, 8, "pcie").overhead_bytes
    assert nvswitch > pcie > one.overhead_bytes


def test_qlora_load_peak() -> None:
    """transformers 5 quantizes layer by layer: the load peak is the loaded model + one bf16 tensor
    (the largest linear, or PEFT's fp32 upcast of the largest table); a framework that quantizes after
    loading holds every linear in bf16 first (LitGPT's QLoRA peak, -1.4% on its table)."""
    spec = reference_spec("Llama-2-7b-hf")
    job = S.TrainSetup("qlora", 512, sharding="none")
    m = train_memory(spec, job, 1)
    base = m.weights_bytes
    assert m.load_peak_bytes == base + 2 * max(spec.params.embedding, 11008 * 4096)
    after = train_memory(spec, replace(job, kernels=LITGPT), 1)
    assert after.load_peak_bytes > after.weights_bytes + spec.params.linear
    assert after.allocated_peak_bytes >= after.load_peak_bytes


def test_expandable_segments_leave_less_cache() -> None:
    rec = next(r for r in TRAIN if key(r) == ("meta-llama__Llama-3.2-1B-Instruct", 2048, 4, True))
    spec, job = reference_spec(rec["name"]), h200_setup(rec)
    default = train_memory(spec, job, 1)
    grown = train_memory(spec, replace(job, expandable_segments=True), 1)
    assert grown.allocated_peak_bytes == default.allocated_peak_bytes
    assert grown.fragmentation_bytes < default.fragmentation_bytes
