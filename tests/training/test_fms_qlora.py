"""QLoRA's 4-bit path against two releases of fms-acceleration's A100-80GB table
(tests/data/torch/fms_acceleration_a100.yaml): full, LoRA and QLoRA of Mistral-7B, Mixtral-8x7B and
Llama-2-70B on one GPU and on two under FSDP.

Each record is a case with its tolerance on PyTorch's allocated peak; runs that did not finish must be
predicted not to fit. Known misses are asserted at their documented residual (+-3 points), so a change
that moves them shows here. `python -m tests.training.test_fms_qlora` prints the table that
bench/qlora_fms.md records.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import pytest
import yaml

from gpusize.sources.catalog import find_gpu
from gpusize.training import setup as S
from gpusize.training.activations import backward_working_bytes, layer_activation_bytes_per_token
from gpusize.training.device import train_memory
from gpusize.training.peak import TrainMemory
from gpusize.training.quantized import bnb_saved_input_bytes, fp32_stream
from gpusize.training.reshard_hook import input_grads_kept_bytes, reshard_hook_keeps_inputs
from tests.conftest import FIXTURES
from tests.torch_training_records import reference_spec

GIB, MIB = 1 << 30, 1 << 20
TABLE = FIXTURES / "torch" / "fms_acceleration_a100.yaml"
MODELS = {
    "mistralai/Mistral-7B-v0.1": "Mistral-7B-v0.1",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "Mixtral-8x7B-Instruct-v0.1",
    "NousResearch/Llama-2-70b-hf": "meta-llama__Llama-2-70b-hf",
}
#: The libraries of each release. 2405 (May 2024): transformers 4.41, PEFT 0.11, TRL 0.8 and
#: bitsandbytes <= 0.43.1 (0.43.2, with PR #1270, came out in July), FlashAttention-2, fp16 AMP.
#: 2409: pinned in the commit's refs/requirements.txt (bitsandbytes 0.43.3: inputs no longer
#: saved), bf16 AMP. baseline-peft-bnb on one GPU goes through TRL's prepare_model_for_kbit_training
#: (fp32 embeddings and norms); the accelerated plugin and every FSDP run (TRL skips it for sharded
#: QLoRA) do not upcast.
KERNELS = {
    "2405": replace(
        S.TRANSFORMERS_4,
        bnb_saves_input=True,
        version="transformers 4.41, peft 0.11, trl 0.8, bitsandbytes 0.43.1",
    ),
    "2409": replace(
        S.TRANSFORMERS_4, version="transformers 4.44.2, peft 0.12.0, trl 0.10.1, bitsandbytes 0.43.3"
    ),
}

#: Allowed residual on the allocated peak. The 2405 release is where the two 4-bit terms were read
#: against (in-sample); 2409 was added afterwards and not tuned on (held out): its one-GPU rows sit
#: above 2405's by the transformers 4.x loss constant (14 B per logit element; these runs measure
#: 12.8: +4% on Mistral-7B at 4 x 4096). Two-GPU rows (FSDP1), both releases, since FSDP1's
#: reshard-only hook is modelled (`training.reshard_hook`): QLoRA -2.2% to +5.5%, LoRA +0.5% to +4.3%.
TOLERANCE = {"2405": 0.06, "2409": 0.09}
FSDP_TOLERANCE = 0.06

#: Residuals outside the tolerance, each with its reason, asserted at the value +-3 points so that a
#: change that moves them shows here (none since the FSDP1 term).
EXPLAINED: dict[str, tuple[float, str]] = {}
#: Runs that did not finish but are predicted to fit: 2405's Llama-2-70B QLoRA at 4 x 4096 on two
#: GPUs, bitsandbytes 0.43.1 (its 4-bit inputs kept): 70.1 GiB allocated, 78.1 GiB on the device
#: predicted against the A100's 79.3 (in 2409, with bitsandbytes' fix, the same run fit at 67.6 GiB
#: allocated, 78.96 on the device; predicted 69.0 / 77.0).
_NEAR = "within 1.2 GiB of the device's limit: the allocator's last retries are not modelled that closely"
OOM_MISSES = {
    "fms-a100-l2-70b-qlora-baseline-2gpu-bs4-oom": _NEAR,
    "fms-a100-l2-70b-qlora-accelerated-2gpu-bs4-oom": _NEAR,
}


@functools.cache
def records() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = yaml.safe_load(TABLE.read_text())
    return loaded


@dataclass(frozen=True)
class Row:
    rec: dict[str, Any]

    @property
    def rid(self) -> str:
        return str(self.rec["id"])

    @property
    def release(self) -> str:
        return str(self.rec["release"])

    @property
    def gpus(self) -> int:
        return int(self.rec["num_gpus"])

    def setup(self) -> S.TrainSetup:
        """benchmark.py's run: fp16 (the 2-byte regimes: pure fp16 = "bf16" for full, AMP =
        "bf16-mixed" for LoRA over the fp16 base and for QLoRA), FSDP on two GPUs."""
        method = self.rec["method"]
        upcast = self.rec["framework_config"] == "baseline-peft-bnb" and self.gpus == 1
        return S.TrainSetup(
            method,
            int(self.rec["seq"]),
            batch=int(self.rec["batch"]),
            precision="bf16" if method == "full" else "bf16-mixed",
            lora_rank=16,
            lora_modules=("q", "k", "v", "o"),
            sharding="fsdp" if self.gpus > 1 else "none",
            kernels=replace(KERNELS[self.release], upcast_unquantized=upcast or method != "qlora"),
        )

    def predict(self) -> TrainMemory:
        gpu = find_gpu("A100-80GB")
        spec = reference_spec(MODELS[self.rec["model"]])
        return train_memory(spec, self.setup(), self.gpus, gpu.interconnect, gpu.visible_bytes)

    def residual(self) -> float:
        return self.predict().allocated_peak_bytes / int(self.rec["peak_alloc_bytes"]) - 1


def rows(outcome: str) -> list[Row]:
    return [Row(r) for r in records() if r["outcome"] == outcome]


@pytest.mark.parametrize("row", rows("fits"), ids=lambda r: r.rid)
def test_allocated_peak(row: Row) -> None:
    err = row.residual()
    if row.rid in EXPLAINED:
        want, why = EXPLAINED[row.rid]
        assert abs(err - want) <= 0.03, f"{row.rid}: {err:+.1%}, documented {want:+.1%} ({why})"
    else:
        tol = FSDP_TOLERANCE if row.gpus > 1 else TOLERANCE[row.release]
        assert abs(err) <= tol, f"{err:+.1%}"


@pytest.mark.parametrize("row", rows("oom"), ids=lambda r: r.rid)
def test_out_of_memory_runs(row: Row) -> None:
    """Among them the miss of the issue: Llama-2-70B QLoRA, one A100-80GB, 4 x 4096 through TRL's
    upcast, predicted to fit at 72.6 GiB before the fp32 stream was modelled."""
    gpu = find_gpu("A100-80GB")
    fits = row.predict().device_bytes <= gpu.visible_bytes
    assert fits is (row.rid in OOM_MISSES), row.rid


def _by_id(rid: str) -> Row:
    return next(Row(r) for r in records() if r["id"] == rid)


@pytest.mark.parametrize("prefix", ["fms-a100", "fms-a100-2409"])
@pytest.mark.parametrize("model", ["mistral7b", "mixtral8x7b"])
def test_upcast_term_grows_with_tokens_as_measured(prefix: str, model: str) -> None:
    """What TRL's upcast adds on one GPU (baseline minus accelerated plugin, same batch) grows with
    batch x seq as the table does, and within 15% of its measured size, in both releases."""
    for batch in (4, 8):
        base = _by_id(f"{prefix}-{model}-qlora-baseline-1gpu-bs{batch}")
        fast = _by_id(f"{prefix}-{model}-qlora-accelerated-1gpu-bs{batch}")
        pred = base.predict().allocated_peak_bytes - fast.predict().allocated_peak_bytes
        meas = int(base.rec["peak_alloc_bytes"]) - int(fast.rec["peak_alloc_bytes"])
        assert abs(pred / meas - 1) <= 0.15, (batch, pred / GIB, meas / GIB)


def test_4bit_terms_scale_with_batch_times_seq() -> None:
    spec = reference_spec("meta-llama__Llama-2-70b-hf")
    one = S.TrainSetup(
        "qlora", 4096, batch=2, lora_modules=("q", "k", "v", "o"), sharding="none", kernels=KERNELS["2405"]
    )
    layer = spec.layers[0]
    assert bnb_saved_input_bytes(spec, layer, one) > 0
    assert bnb_saved_input_bytes(spec, layer, replace(one, kernels=S.TRANSFORMERS_4)) == 0
    assert bnb_saved_input_bytes(spec, layer, replace(one, method="lora")) == 0
    for bigger in (replace(one, batch=4), replace(one, seq_tokens=8192)):
        assert backward_working_bytes(spec, bigger) == pytest.approx(
            2 * backward_working_bytes(spec, one), rel=1e-6
        )


def test_fp32_stream_only_where_peft_upcasts() -> None:
    q = S.TrainSetup("qlora", 4096, sharding="none")
    assert fp32_stream(q)
    assert not fp32_stream(replace(q, sharding="fsdp"))  # TRL skips the upcast for sharded QLoRA
    assert not fp32_stream(replace(q, kernels=S.UNSLOTH))
    assert not fp32_stream(replace(q, method="lora"))


def main() -> None:
    print("| record | GPUs | allocated GiB meas / pred | err | device GiB meas / pred | err |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in records():
        row = Row(r)
        m = row.predict()
        dev = float(r["nvidia_mib"]) * MIB
        if r["outcome"] == "oom":
            alloc = f"OOM / {m.allocated_peak_bytes / GIB:.2f} | - "
        else:
            meas = int(r["peak_alloc_bytes"])
            pred = m.allocated_peak_bytes
            alloc = f"{meas / GIB:.2f} / {pred / GIB:.2f} | {pred / meas - 1:+.1%}"
        print(
            f"| {row.rid} | {row.gpus} | {alloc} | {dev / GIB:.2f} / {m.device_bytes / GIB:.2f} | "
            f"{m.device_bytes / dev - 1:+.1%} |"
        )


if __name__ == "__main__":
    main()


def test_moe_workspace_is_one_experts_share() -> None:
    """Autograd runs a MoE layer's expert branches one after another (later-created nodes first), so
    the gradient temporaries scale with one expert's share of the routed tokens; a dense layer keeps
    BACKWARD_WORKSPACE_LAYERS x its whole saved set."""
    setup = S.TrainSetup("qlora", 4096, batch=4, lora_modules=("q", "k", "v", "o"), sharding="none")
    ws = setup.kernels.workspace_layers
    for name, moe in (("Mistral-7B-v0.1", False), ("Mixtral-8x7B-Instruct-v0.1", True)):
        spec = reference_spec(name)
        layer = layer_activation_bytes_per_token(spec, spec.layers[0], setup) * setup.tokens_per_gpu
        working = backward_working_bytes(spec, setup)
        if moe:
            assert layer < working < (1 + ws) * layer
        else:
            assert working == pytest.approx((1 + ws) * layer, rel=1e-6)


def test_moe_device_figure_replays_one_experts_tensors() -> None:
    """The allocator replay sizes a MoE model's MLP tensors as one expert's share of the routed
    tokens: Mixtral-8x7B's one-GPU QLoRA device rows within 10% on average (12.4% when the replay
    cut them for the whole micro-batch)."""
    errs = [
        row.predict().device_bytes / (float(row.rec["nvidia_mib"]) * MIB) - 1
        for row in rows("fits")
        if "mixtral8x7b-qlora" in row.rid and row.gpus == 1
    ]
    assert len(errs) == 8 and sum(abs(e) for e in errs) / len(errs) <= 0.10


def _fsdp_pairs() -> list[tuple[Row, Row]]:
    """Two-GPU rows that finished at 2 x 4096 and 4 x 4096 per GPU, same release and configuration."""
    fits = {row.rid: row for row in rows("fits") if row.gpus == 2 and row.rec["method"] != "full"}
    bigger = {rid: rid.replace("-bs2", "-bs4") for rid in fits if rid.endswith("-bs2")}
    return [(fits[rid], fits[big]) for rid, big in bigger.items() if big in fits]


@pytest.mark.parametrize("pair", _fsdp_pairs(), ids=lambda p: p[0].rid)
def test_fsdp_cost_per_token_as_measured(pair: tuple[Row, Row]) -> None:
    """Under FSDP1 with LoRA / QLoRA and reentrant checkpoints, what 8192 more tokens per GPU cost
    (bs4 minus bs2) is within 12% of the table (-9% to +11%): every checkpoint and its layer-input
    gradient stay to the end of backward (`training.reshard_hook`). Before: -6% to -38% (Llama-2-70B
    14.9 GiB predicted against 24.2 measured), 8 of the 14 pairs outside."""
    small, big = pair
    pred = big.predict().allocated_peak_bytes - small.predict().allocated_peak_bytes
    meas = int(big.rec["peak_alloc_bytes"]) - int(small.rec["peak_alloc_bytes"])
    assert abs(pred / meas - 1) <= 0.12, (small.rid, pred / GIB, meas / GIB)


def test_reshard_hook_only_where_it_runs() -> None:
    """FSDP1 keeps the layer inputs and their gradients only for LoRA / QLoRA (frozen decoder units)
    on 2+ GPUs with reentrant checkpoints kept on the GPU: not for full training, one GPU, ZeRO-3,
    transformers 5's non-reentrant checkpoints, no checkpointing or offloaded checkpoints."""
    spec = reference_spec("Mistral-7B-v0.1")
    job = S.TrainSetup("qlora", 4096, batch=2, sharding="fsdp", kernels=S.TRANSFORMERS_4)
    kept = input_grads_kept_bytes(spec, job, 2)
    assert kept == 32 * 4096 * 2 * 8192  # one bf16 hidden state per layer and token
    assert input_grads_kept_bytes(spec, replace(job, method="lora"), 8) == kept
    assert reshard_hook_keeps_inputs(job, 2)
    for other, n in (
        (replace(job, method="full"), 2),
        (job, 1),
        (replace(job, sharding="zero3"), 2),
        (replace(job, kernels=S.TRANSFORMERS), 2),
        (replace(job, grad_ckpt=False), 2),
        (replace(job, kernels=replace(S.TRANSFORMERS_4, offload_checkpoints=True)), 2),
    ):
        assert not reshard_hook_keeps_inputs(other, n), other
        assert input_grads_kept_bytes(spec, other, n) == 0
