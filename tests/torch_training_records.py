"""The H200 PyTorch training measurements of tests/data/reference/measured and the published training
records of tests/data/torch/published.yaml, and gpusize's prediction for each.

Shared by the training-memory tests (tests/training/test_torch_training.py) and the calibration
(bench/calibrate_torch.py), so both split, read and predict the records the same way.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from gpusize.core.parse import parse_config
from gpusize.core.spec import ModelSpec
from gpusize.sources.catalog import find_gpu, find_model
from gpusize.training import setup as S
from gpusize.training.device import train_memory
from gpusize.training.peak import TrainMemory
from tests.conftest import FIXTURES, REFERENCE

GIB, MIB, GB = 1 << 30, 1 << 20, 10**9
MEASURED = REFERENCE / "measured" / "h200-torch-2.11.jsonl"
PUBLISHED = FIXTURES / "torch" / "published.yaml"


# --------------------------------------------------------------------------- the H200 lines


def train_lines() -> list[dict[str, Any]]:
    return [json.loads(x) for x in MEASURED.read_text().splitlines() if json.loads(x)["kind"] == "train"]


def key(rec: dict[str, Any]) -> tuple[str, int, int, bool]:
    return rec["name"], rec["seq"], rec["batch"], rec["grad_ckpt"]


#: Held out before any constant was set: a pure-bf16 full fine-tune with checkpointing and a LoRA run
#: without checkpointing, on a model family (Qwen3, QK-norm, 152k vocabulary) the calibration lines lack.
HOLDOUT = {("Qwen__Qwen3-1.7B", 4096, 2, True), ("Qwen__Qwen3-8B", 4096, 1, False)}
TRAIN = train_lines()


@functools.cache
def reference_spec(name: str) -> ModelSpec:
    for folder in (REFERENCE / "configs", FIXTURES / "torch"):
        path = Path(folder) / f"{name}.json"
        if path.exists():
            return parse_config(json.loads(path.read_text())["config"])
    return parse_config(find_model(name).config)


def h200_setup(rec: dict[str, Any]) -> S.TrainSetup:
    """measure.py's loop: torch.optim.AdamW defaults (foreach), one GPU, transformers 5 + peft."""
    return S.TrainSetup(
        rec["method"],
        rec["seq"],
        batch=rec["batch"],
        precision=rec["precision"],
        grad_ckpt=rec["grad_ckpt"],
        lora_rank=rec["rank"],
        sharding="none",
    )


def h200_errors(rec: dict[str, Any]) -> tuple[float, float]:
    m = train_memory(reference_spec(rec["name"]), h200_setup(rec), 1)
    return m.allocated_peak_bytes / rec["peak"] - 1, m.device_bytes / (rec["smi_used_mib"] * MIB) - 1


# --------------------------------------------------------------------------- published figures


@functools.cache
def published() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in yaml.safe_load(PUBLISHED.read_text())}


QV = ("q", "v")
QKV_MLP = ("q", "k", "v", "gate", "up", "down")
#: LitGPT of 2023-24 (Fabric, bf16-true): eager modules, SDPA, cross-entropy over 128-token chunks of
#: the lm_head output (2 B per element + a chunk at a time, as torchtune's chunked loss), LoRA adapters
#: in the model dtype, and `--quantize bnb.nf4` quantizing after the whole model loaded in bf16.
LITGPT = S.Kernels(
    "litgpt eager, chunked cross-entropy", "eager", S.TORCHTUNE_LOGITS_BYTES, quantize_after_load=True
)
#: torchtune of April 2024: eager, the model returns fp32 logits kept through backward (4) + the
#: saved log-softmax (4) + two fp32 gradients (4 + 4).
TORCHTUNE_2024 = S.Kernels("torchtune eager (2024)", "eager", 16.0)
#: transformers 4.4x with non-reentrant checkpoints: fsdp_qlora's train.py (05ed9f2, train.py:783,
#: `reentrant_checkpointing` False by default: CheckpointImpl.NO_REENTRANT) and PEFT's FSDP LoRA
#: example (`--use_reentrant False`).
TRANSFORMERS_4_NO_REENTRANT = replace(S.TRANSFORMERS_4, reentrant_checkpointing=False)
#: fsdp_qlora's train.py: pure bf16, torch AdamW, rank 64 on q,k,v,gate,up,down, FSDP1, transformers
#: 4.4x (its loss keeps the logits through backward).
FSDP_QLORA = S.TrainSetup(
    "qlora", 2048, precision="bf16", lora_rank=64, lora_modules=QKV_MLP, kernels=TRANSFORMERS_4_NO_REENTRANT
)


def litgpt(method: S.Method, seq: int, batch: int, rank: int, **kw: Any) -> S.TrainSetup:
    kw.setdefault("optimizer", "paged-adamw" if method == "qlora" else "adamw")
    return S.TrainSetup(
        method,
        seq,
        batch=batch,
        precision="bf16",
        grad_ckpt=False,
        lora_rank=rank,
        lora_modules=QV,
        sharding="none",
        kernels=LITGPT,
        **kw,
    )


@dataclass(frozen=True)
class Case:
    """One published figure. figure: the measured field compared (allocated, reserved, device) or
    "oom" (the run did not fit: the verdict must say so). tol: allowed relative error."""

    rid: str
    model: str
    setup: S.TrainSetup
    gpus: int
    gpu: str
    figure: str
    tol: float = 0.15
    note: str = ""


def _fq(
    rid: str,
    seq: int,
    batch: int,
    method: S.Method = "qlora",
    offload: S.Offload = "none",
    sharding: S.Sharding = "fsdp",
) -> Case:
    model = "Llama-2-7b-hf"
    if "70b" in rid:
        model = "meta-llama__Llama-2-70b-hf"
    elif "yi34b" in rid:
        model = "Yi-1.5-34B-Chat"
    elif "mistral" in rid:
        model = "Mistral-7B-v0.1"
    gpu = "RTX4090" if "-4090-" in rid else "RTX3090"
    figure = "oom" if rid.endswith("-oom") else "reserved"
    setup = replace(
        FSDP_QLORA, seq_tokens=seq, batch=batch, method=method, sharding=sharding, offload=offload
    )
    return Case(rid, model, setup, 2, gpu, figure, tol=0.25)


CASES = [
    _fq("fsdpqlora-3090-l2-7b-qlora-512-bs1", 512, 1),
    _fq("fsdpqlora-3090-l2-7b-qlora-2048-bs1", 2048, 1),
    _fq("fsdpqlora-3090-l2-7b-lora-512-bs1", 512, 1, "lora"),
    _fq("fsdpqlora-3090-l2-7b-lora-2048-bs1", 2048, 1, "lora"),
    _fq("fsdpqlora-3090-l2-7b-qlora-2048-bs4", 2048, 4),
    _fq("fsdpqlora-3090-l2-7b-qlora-2048-bs10", 2048, 10),
    _fq("fsdpqlora-3090-l2-7b-lora-2048-bs4", 2048, 4, "lora"),
    _fq("fsdpqlora-3090-l2-7b-lora-2048-bs6", 2048, 6, "lora"),
    _fq("fsdpqlora-3090-l2-7b-qlora-ddp-bs8", 2048, 8, "qlora", sharding="ddp"),
    _fq("fsdpqlora-3090-l2-7b-lora-ddp-bs4", 2048, 4, "lora", sharding="ddp"),
    _fq("fsdpqlora-4090-l2-7b-lora-offload-bs10", 2048, 10, "lora", "params"),
    _fq("fsdpqlora-4090-l2-7b-qlora-offload-bs12", 2048, 12, "qlora", "params"),
    _fq("fsdpqlora-4090-mistral7bv02-qlora-offload-bs12", 2048, 12, "qlora", "params"),
    _fq("fsdpqlora-4090-mistral7bv02-qlora-offload-24k", 24576, 1, "qlora", "params"),
    _fq("fsdpqlora-4090-mistral7bv02-qlora-offload-32k-oom", 32768, 1, "qlora", "params"),
    _fq("fsdpqlora-3090-l2-70b-qlora-offload-bs2", 2048, 2, "qlora", "params"),
    _fq("fsdpqlora-3090-yi34b-qlora-bs2", 2048, 2),
    _fq("fsdpqlora-3090-yi34b-qlora-offload-bs4", 2048, 4, "qlora", "params"),
    Case(
        "litgpt-a100-l2-7b-lora-mb1", "Llama-2-7b-hf", litgpt("lora", 1304, 1, 8), 1, "A100-40GB", "allocated"
    ),
    Case(
        "litgpt-a100-l2-7b-lora-mb2", "Llama-2-7b-hf", litgpt("lora", 1304, 2, 8), 1, "A100-40GB", "allocated"
    ),
    Case(
        "litgpt-a100-l2-7b-qlora-nf4dq-mb1",
        "Llama-2-7b-hf",
        litgpt("qlora", 1304, 1, 8),
        1,
        "A100-40GB",
        "allocated",
        note="the peak is the load: the bf16 model before quantization",
    ),
    Case(
        "litgpt-a100-l2-13b-lora-mb1",
        "meta-llama__Llama-2-13b-hf",
        litgpt("lora", 1304, 1, 8),
        1,
        "A100-40GB",
        "allocated",
    ),
    Case(
        "litgpt-a100-l2-13b-lora-mb2-oom",
        "meta-llama__Llama-2-13b-hf",
        litgpt("lora", 1304, 2, 8),
        1,
        "A100-40GB",
        "oom",
    ),
    Case("litgpt-hub-a10g-l31-8b-lora", "Llama-3.1-8B", litgpt("lora", 512, 1, 32), 1, "A10G", "allocated"),
    Case("litgpt-hub-a10g-l31-8b-qlora", "Llama-3.1-8B", litgpt("qlora", 512, 2, 32), 1, "A10G", "allocated"),
    Case(
        "litgpt-hub-a10g-mistral7b-lora",
        "Mistral-7B-v0.1",
        litgpt("lora", 512, 2, 32),
        1,
        "A10G",
        "allocated",
    ),
    Case(
        "litgpt-hub-a10g-mistral7b-qlora",
        "Mistral-7B-v0.1",
        litgpt("qlora", 512, 2, 32),
        1,
        "A10G",
        "allocated",
    ),
    Case(
        "litgpt-hub-a10g-l31-8b-full-oom",
        "Llama-3.1-8B",
        replace(litgpt("lora", 512, 4, 8), method="full"),
        1,
        "A10G",
        "oom",
    ),
    Case(
        "litgpt-hub-4xa10g-l3-8b-full-oom",
        "Meta-Llama-3-8B-Instruct",
        replace(litgpt("lora", 512, 4, 8), method="full", grad_ckpt=True, sharding="fsdp"),
        4,
        "A10G",
        "oom",
    ),
    *[
        Case(
            f"peft-mmqa-l32-3b-{name}",
            "Llama-3.2-3B",
            S.TrainSetup(
                method,  # type: ignore[arg-type]
                768,
                batch=4,
                precision="bf16",
                grad_ckpt=False,
                lora_rank=rank,
                lora_modules=modules,
                sharding="none",
            ),
            1,
            "L40S",
            "reserved",
            tol=0.10,
            note="run.py measures memory_reserved() before the model loads: the figure is the reserved peak",
        )
        for name, method, rank, modules in (
            ("full", "full", 16, S.ALL_LINEAR),
            ("lora-r32-qv", "lora", 32, QV),
            ("lora-r64-qv", "lora", 64, QV),
            ("lora-r10-mlp", "lora", 10, ("gate", "up", "down")),
        )
    ],
    Case(
        "peft-fsdp-qlora-l2-70b-2gpu-no-offload",
        "meta-llama__Llama-2-70b-hf",
        S.TrainSetup(
            "qlora", 2048, batch=2, grad_accum=2, precision="bf16", lora_rank=8, kernels=S.TRANSFORMERS_4
        ),
        2,
        "A100-80GB",
        "device",
    ),
    Case(
        "peft-ds-z3-lora-l2-70b-8gpu",
        "meta-llama__Llama-2-70b-hf",
        S.TrainSetup(
            "lora", 2048, batch=8, grad_accum=4, lora_rank=8, sharding="zero3", kernels=S.TRANSFORMERS_4
        ),
        8,
        "A100-80GB",
        "device",
    ),
    Case(
        "peft-ds-z3-qlora-l2-70b-2gpu",
        "meta-llama__Llama-2-70b-hf",
        S.TrainSetup(
            "qlora", 2048, batch=2, grad_accum=2, lora_rank=8, sharding="zero3", kernels=S.TRANSFORMERS_4
        ),
        2,
        "A100-40GB",
        "device",
    ),
    Case(
        "peft-fsdp-lora-l2-70b-8gpu",
        "meta-llama__Llama-2-70b-hf",
        S.TrainSetup(
            "lora",
            2048,
            batch=8,
            grad_accum=4,
            lora_rank=8,
            sharding="fsdp",
            kernels=TRANSFORMERS_4_NO_REENTRANT,
        ),
        8,
        "A100-80GB",
        "device",
        tol=0.20,
        note="read off a screenshot as 72-80 GB, which includes saving a FULL_STATE_DICT",
    ),
    *[
        Case(
            rid,
            "Llama-2-7b-hf",
            S.TrainSetup(
                method,  # type: ignore[arg-type]
                512,
                batch=2,
                grad_accum=64,
                precision="bf16",
                lora_rank=rank,
                lora_modules=modules,
                sharding="none",
                kernels=TORCHTUNE_2024,
            ),
            1,
            "A100-80GB",
            "reserved",
            tol=0.10,
        )
        for rid, method, rank, modules in (
            ("torchtune-doc-l2-7b-lora-train", "lora", 8, QV),
            ("torchtune-doc-l2-7b-lora-ablation-1", "lora", 8, QV),
            ("torchtune-doc-l2-7b-lora-ablation-2", "lora", 8, S.ALL_LINEAR),
            ("torchtune-doc-l2-7b-lora-ablation-3", "lora", 64, QV),
            ("torchtune-doc-l2-7b-lora-ablation-4", "lora", 64, S.ALL_LINEAR),
        )
    ],
]

#: Records not turned into a case, and why.
NOT_MODELLED = {
    "fsdpqlora-readme-l2-70b-qlora-offload-512-bs2": "fits without a figure (Alpaca, variable length)",
    "torchtitan-h100x8-l31-8b-fsdp": "torchtitan: FSDP2, selective op-level checkpointing, its own loss",
    "torchtitan-h100x8-l31-8b-fsdp-compile": "torchtitan with torch.compile",
    "torchtitan-h100x8-l31-8b-fsdp-compile-fp8": "torchtitan with float8 linears",
    "torchtitan-h100x8-l31-8b-fsdp8-seq32k": "torchtitan with float8 and context parallelism",
    "torchtitan-h100x128-l31-8b-fsdp": "torchtitan, 128 GPUs",
    "torchtitan-h100x128-l31-8b-fsdp-compile": "torchtitan with torch.compile",
    "torchtitan-h100x128-l31-8b-fsdp-compile-fp8": "torchtitan with float8 linears",
    "torchtitan-h200x32-l31-8b-fsdp-compile-fp8": "torchtitan with float8 linears",
    "torchtitan-h200x64-l31-8b-fsdp-compile-fp8": "torchtitan with float8 linears",
    "peft-fsdp-qlora-l2-70b-2x24gb-offload": "FSDP CPU offload with fsdp_cpu_ram_efficient_loading: we "
    "predict "
    "13.7 GB against 19.6 (-30%), the pinned staging buffers are not modelled",
    "peft-readme-bloomz7b1-full-oom": "no BLOOM config in the catalog (ALiBi, fused qkv)",
    "peft-readme-bloomz7b1-lora": "no BLOOM config in the catalog",
    "peft-readme-bloomz7b1-lora-ds-offload": "no BLOOM config in the catalog",
    "peft-readme-mt0xxl-full-oom": "encoder-decoder (mT0): not supported",
    "peft-readme-mt0xxl-lora": "encoder-decoder (mT0): not supported",
    "peft-readme-t0-3b-full": "encoder-decoder (T0): not supported",
    "peft-readme-t0-3b-lora": "encoder-decoder (T0): not supported",
    "torchtune-doc-l2-7b-lora-init": "model init only (no training step)",
    "torchtune-doc-l2-7b-qlora-init": "torchtune 2024's QLoRA init reserves 9.13 GB for a 3.5 GB NF4 model: "
    "its construction path is not modelled",
    "torchtune-doc-l2-7b-qlora-train": "training peak 9.29 GB is the init's 9.13 (see qlora-init)",
    "torchtune-doc-l3-8b-lora-default": "figure type not stated (18.5 GB; we predict 19.2 GB reserved)",
    "litgpt-a100-phi15-lora-mb1": "no phi-1.5 config in the catalog",
    "litgpt-a100-l2-7b-qlora-nf4-mb1": "NF4 without double quantization (we model NF4 + double quantization)",
    "litgpt-a100-l2-13b-qlora-nf4-mb1": "NF4 without double quantization",
    "litgpt-a100-l2-7b-lora-mb4-oom": "KNOWN MISS: ran out of memory on an A100 40GB; we predict 36.8 GiB on "
    "the "
    "device (fits): LitGPT's activations are ~25% above our eager model (mb1 -8%, mb2 -12%)",
    "litgpt-a100-falcon40b-qlora-nf4-mb1-oom": "no Falcon-40B config in the catalog",
    "litgpt-2xa100-l2-7b-lora-fsdp-mb4": "LitGPT 2023 FSDP materialized the whole bf16 model on every rank "
    "(21.8 GiB for a 7B model on 2 GPUs): not a sharded peak",
    "litgpt-2xa100-l2-13b-lora-fsdp-mb1-oom": "as the row above: the whole 13B model per rank at load",
    "litgpt-4xa100-l2-13b-lora-fsdp-mb1": "as the rows above (33.1 GiB per GPU for 13B on 4 GPUs)",
    "litgpt-a100-infer-l2-7b-bf16": "inference: tests/core/test_torch_inference.py (LitGPT generate)",
    "litgpt-a100-infer-l2-13b-bf16": "inference: tests/core/test_torch_inference.py (LitGPT generate)",
    "litgpt-a100-infer-codellama34b-bf16-oom": "inference, no CodeLlama-34B config (any 34B model in bf16 "
    "exceeds the 40 GB)",
    "litgpt-a100-infer-l2-70b-nf4dq": "inference: tests/core/test_torch_inference.py (LitGPT generate)",
    "litgpt-hub-a10g-gemma7b-lora-oom": "no gemma-7b config in the catalog",
    "litgpt-hub-a10g-gemma7b-qlora": "no gemma-7b config in the catalog",
    "litgpt-hub-a10g-l32-1b-full": "marked SUSPECT by the collector: below the floor of its own states",
    "litgpt-hub-a10g-l32-3b-full": "marked SUSPECT by the collector: below the floor of its own states",
    "hf-doc-octocoder-bf16-short": "inference, no octocoder config in the catalog",
    "hf-doc-octocoder-int8-short": "inference, no octocoder config",
    "hf-doc-octocoder-nf4-short": "inference, no octocoder config",
    "hf-doc-octocoder-bf16-long-eager": "inference, no octocoder config",
    "hf-doc-octocoder-bf16-long-flash": "inference, no octocoder config",
    "hf-discussion-sciphi-mistral7b-32k-23k-oom": "inference (tests/core/test_torch_inference.py)",
    "megatron-bridge-llama3-8b-h100x8-iter1": "Megatron-Core: not modelled",
}


def _to_bytes(value: Any, unit: str) -> int:
    if isinstance(value, str):  # a range as printed: its middle
        low, high = (float(v) for v in value.split("-"))
        value = (low + high) / 2
    factor = GB if unit.startswith("GB") else GIB
    return int(float(value) * factor)


def measured(case: Case) -> int:
    m = published()[case.rid]["measured"]
    if case.figure == "reserved" and "reserved_peak_bytes" in m:
        return int(m["reserved_peak_bytes"])
    field = {"allocated": "allocated_peak_gib", "reserved": "reserved_peak_gib", "device": "device_gib"}
    return _to_bytes(m[field[case.figure]], m["unit"])


def predict(case: Case) -> TrainMemory:
    gpu = find_gpu(case.gpu)
    return train_memory(
        reference_spec(case.model), case.setup, case.gpus, gpu.interconnect, gpu.visible_bytes
    )


def predicted(case: Case) -> int:
    m = predict(case)
    return {"allocated": m.allocated_peak_bytes, "reserved": m.reserved_peak_bytes}.get(
        case.figure, m.device_bytes
    )
