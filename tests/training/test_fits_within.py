"""training/device.fits_within: the fit test decided from one capacity-limited replay at the bounds of
the allocated peak (no unlimited replay) gives train_memory's verdict, over a sample of jobs on
every GPU type and count, with nothing cached and after each other's replays."""

from __future__ import annotations

import pytest

from gpusize.sources.catalog import load_gpus
from gpusize.training import device
from gpusize.training import setup as ts
from tests.helpers import catalog_spec

#: (model, job): full, LoRA and QLoRA jobs near and far from the GPUs' sizes, default and expandable
#: segments, DDP and FSDP, an MoE model.
SAMPLE = [
    ("Qwen3-8B", ts.TrainSetup(method="full", seq_tokens=131072)),
    ("Qwen3-8B", ts.TrainSetup(method="full", seq_tokens=131072, offload="optimizer")),
    ("Qwen3-8B", ts.TrainSetup(method="full", seq_tokens=36167, optimizer="adamw-8bit")),
    ("Qwen3-8B", ts.TrainSetup(method="lora", seq_tokens=65536, expandable_segments=True)),
    ("Qwen3-8B", ts.TrainSetup(method="full", seq_tokens=8192, batch=8)),
    ("Llama-3.1-8B", ts.TrainSetup(method="full", seq_tokens=32768, sharding="ddp")),
    ("Qwen3-30B-A3B", ts.TrainSetup(method="qlora", seq_tokens=65536, grad_ckpt=False)),
    ("Qwen3-32B", ts.TrainSetup(method="full", seq_tokens=4096, precision="bf16")),
]


def clear() -> None:
    device._TIGHT.clear()
    device._FREE.clear()
    device._BOUNDS.clear()
    device._replayer.cache_clear()
    device._probes.cache_clear()


@pytest.mark.parametrize(("model", "job"), SAMPLE)
def test_fits_within_gives_train_memorys_verdict(model: str, job: ts.TrainSetup) -> None:
    spec = catalog_spec(model)
    cases = [(gpu, n) for gpu in load_gpus() for n in (1, 2, 4, 8) if n == 1 or job.sharding != "none"]
    clear()
    got = [device.fits_within(spec, job, n, gpu.interconnect, gpu.visible_bytes) for gpu, n in cases]
    clear()  # train_memory's own replays (unlimited, then from its snapshots), none of fits_within's
    want = [
        device.train_memory(spec, job, n, gpu.interconnect, gpu.visible_bytes).device_bytes
        <= gpu.visible_bytes
        for gpu, n in cases
    ]
    assert got == want


def test_the_sample_takes_every_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fits on the unlimited path, fits and misfits after the allocator frees its cache, and the
    fallback to train_memory where the bounds straddle a capacity the replay's path depends on."""
    taken: list[str] = []
    plain_memory = device.train_memory

    def memory(*args, **kwargs):  # type: ignore[no-untyped-def]
        taken.append("train_memory")
        return plain_memory(*args, **kwargs)

    monkeypatch.setattr(device, "train_memory", memory)
    clear()
    for model, job in SAMPLE:
        spec = catalog_spec(model)
        for gpu in load_gpus():
            for n in (1, 2, 4, 8):
                before, asked = len(device._FREE), len(taken)
                fits = device.fits_within(spec, job, n, gpu.interconnect, gpu.visible_bytes)
                if len(device._FREE) > before:
                    taken.append("unlimited path")
                elif len(taken) == asked:
                    taken.append("fits" if fits else "misfit")
    assert {"unlimited path", "fits", "misfit", "train_memory"} <= set(taken)


def test_a_known_unlimited_replay_is_used_as_is() -> None:
    spec, job = catalog_spec("Qwen3-8B"), ts.TrainSetup(method="full", seq_tokens=65536)
    clear()
    device.train_memory(spec, job, 1)  # the unlimited replay, now known
    for gpu in load_gpus():
        want = device.train_memory(spec, job, 1, gpu.interconnect, gpu.visible_bytes)
        assert device.fits_within(spec, job, 1, gpu.interconnect, gpu.visible_bytes) == (
            want.device_bytes <= gpu.visible_bytes
        )
    assert not device._BOUNDS  # decided by train_memory, on the known replay
