"""The allocated-peak terms of a broad sample of jobs are those of 1bbfaae (issue 24: the terms no
token count moves are computed once per job without its sequence length and micro-batch,
`peak._state_terms`; the searches vary those two)."""

from __future__ import annotations

import hashlib
import itertools
import json

from gpusize.errors import GpusizeError
from gpusize.training import setup as ts
from gpusize.training.peak import peak_terms
from tests.helpers import catalog_spec

#: sha256 of the JSON of every row below, as 1bbfaae computed them.
PINNED_SHA256 = "3ae818295297ab2572f3e9d7a66777c8c3932a294ac0be14b4f7e04ef7831a89"
FIELDS = (
    "weights_bytes", "master_weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
    "logits_bytes", "host_ram_bytes", "overlap_bytes", "step_bytes", "buffers_bytes", "paged_bytes",
    "load_peak_bytes", "allocated_peak_bytes", "peak_phase",
)  # fmt: skip
#: (GPUs, sequence, micro-batch, accumulation)
SHAPES = ((1, 4096, 1, 1), (2, 32768, 2, 4), (8, 131072, 1, 1), (8, 2048, 8, 2))


def _rows() -> list[object]:
    rows: list[object] = []
    levers = list(
        itertools.product(
            ("full", "lora", "qlora"),
            ("bf16-mixed", "bf16"),
            ("adamw", "adamw-8bit", "adafactor"),
            ("none", "optimizer", "params"),
            ("fsdp", "zero2", "ddp"),
            (True, False),
            (ts.TRANSFORMERS, ts.TORCHTUNE, ts.UNSLOTH),
        )
    )
    for model in ("Qwen3-8B", "Llama-3.1-8B", "Qwen3-30B-A3B"):
        spec = catalog_spec(model)
        for method, precision, optimizer, offload, sharding, ckpt, kernels in levers:
            if kernels is not ts.TRANSFORMERS and method == "full":
                continue
            for n, seq, batch, accum in SHAPES:
                try:
                    job = ts.TrainSetup(
                        method=method, precision=precision, optimizer=optimizer, offload=offload,
                        sharding=sharding if n > 1 else "none", grad_ckpt=ckpt, seq_tokens=seq,
                        batch=batch, grad_accum=accum, kernels=kernels,
                    )  # fmt: skip
                except (GpusizeError, ValueError) as e:
                    rows.append(str(e))
                    continue
                m = peak_terms(spec, job, n)
                rows.append([getattr(m, f) for f in FIELDS])
    return rows


def test_peak_terms_are_those_of_1bbfaae() -> None:
    rows = _rows()
    assert sum(isinstance(r, list) for r in rows) > 1000
    assert hashlib.sha256(json.dumps(rows).encode()).hexdigest() == PINNED_SHA256
