"""The per-token working set is cached by the job without its sequence length, micro-batch and
accumulation (issue 24: the searches for the longest sequence and the largest micro-batch vary only
those): the cached figure is the one computed for the job itself, for every method, precision,
checkpointing and framework, dense and MoE, at several lengths and batches."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusize.training import activations
from gpusize.training.setup import UNSLOTH, TrainSetup
from tests.training_records import model

JOBS = [
    TrainSetup("full", 2048),
    TrainSetup("full", 4096, sharding="none"),
    TrainSetup("full", 8192, precision="bf16", grad_ckpt=False),
    TrainSetup("lora", 1024, grad_ckpt=False),
    TrainSetup("qlora", 16384, kernels=UNSLOTH),
    TrainSetup("qlora", 512, precision="bf16"),
]


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Qwen3-30B-A3B"])
@pytest.mark.parametrize("job", JOBS)
def test_cached_working_set_is_the_jobs_own(name: str, job: TrainSetup) -> None:
    spec, _ = model(name)
    uncached = activations._working_cached.__wrapped__
    for seq, batch, accum in ((1, 1, 1), (777, 3, 5), (131_072, 2, 1), (job.seq_tokens, 8, 16)):
        trial = replace(job, seq_tokens=seq, batch=batch, grad_accum=accum)
        for resident in (0.0, 1.0):
            assert activations._working_per_token(spec, trial, resident) == uncached(spec, trial, resident)
        assert activations.backward_working_bytes(spec, trial) == int(
            uncached(spec, trial, float(trial.grad_ckpt)) * trial.tokens_per_gpu
        )
