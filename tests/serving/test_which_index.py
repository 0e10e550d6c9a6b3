"""`which` over the catalog's stored specs (issue 24, sources/shipped_specs.py) answers what planning
every model from its config answers: the text (with and without --all) and the --json of a sweep of
GPUs, counts, contexts, engines, dtypes and orders are byte-identical to the plain evaluation, in
this process, over every bundled model and a user catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpusize.sources.catalog import Catalogs
from tests.helpers import CliResult, cli

#: Each query of the sweep: a consumer card on 1 and 2, datacenter GPUs on 4 and 8 (where TP=N is
#: not a valid split: replicas), a card without FP8 (no FP8 build), AMD, contexts from 4k to 1m,
#: SGLang and TensorRT-LLM, weights asked outright, an FP8 KV cache, the speed order and --top.
SWEEP: list[tuple[str, ...]] = [
    ("--gpu", "RTX4090", "--gpus", "2", "--ctx", "32k"),
    ("--gpu", "RTX4090", "--ctx", "8k", "--sort", "speed"),
    ("--gpu", "H100", "--gpus", "8", "--ctx", "128k"),
    ("--gpu", "A100-80GB", "--gpus", "4", "--ctx", "1m"),
    ("--gpu", "T4", "--gpus", "4", "--ctx", "4k"),
    ("--gpu", "MI300X", "--ctx", "64k", "--top", "5"),
    ("--gpu", "L4", "--gpus", "2", "--engine", "sglang"),
    ("--gpu", "H100", "--gpus", "2", "--engine", "trtllm", "--ctx", "16k"),
    ("--gpu", "L40S", "--dtype", "fp8", "--kv-dtype", "fp8"),
    ("--gpu", "RTX4090", "--gpus", "2", "--dtype", "bf16", "--ctx", "32k"),
    ("--gpu", "H200-SXM", "--gpus", "4", "--dtype", "int4", "--ctx", "256k"),
]


def _answers(args: tuple[str, ...]) -> list[CliResult]:
    return [cli("which", *args, *form) for form in ((), ("--all",), ("--json",))]


def _plain(monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]) -> list[CliResult]:
    """The answers with every config parsed where it is planned (no stored spec)."""
    with monkeypatch.context() as m:
        m.setattr(Catalogs, "parsed_models", Catalogs.models)
        return _answers(args)


@pytest.mark.parametrize("args", SWEEP, ids=lambda a: " ".join(a))
def test_which_over_stored_specs_is_the_plain_evaluation(
    monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    stored = _answers(args)
    assert stored == _plain(monkeypatch, args)
    assert all(r.code in (0, 1) and r.stdout for r in stored)


def test_a_user_catalog_is_answered_from_its_cached_specs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A user catalog's specs are parsed and cached on the first `which`, read on the second; its
    unreadable config is skipped, with its reason, either way; the answers are the plain ones."""
    base = Catalogs().find_model("Qwen3-8B")
    entries = [
        {"name": f"u-{i}", "hf_id": f"acme/u-{i}", "source": "test", "config": cfg}
        for i, cfg in enumerate(
            [
                base.config,
                {**base.config, "intermediate_size": 20_480},
                {**base.config, "hidden_size": -1},  # does not parse: skipped with its reason
                base.config,
            ]
        )
    ]
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump(entries))
    monkeypatch.setenv("GPUSIZE_CACHE_DIR", str(tmp_path / "cache"))
    args = ("--gpu", "L4", "--models-file", str(models), "--ctx", "16k")
    first = _answers(args)
    assert list((tmp_path / "cache").glob("catalog-*-specs-*.json"))
    again = _answers(args)
    plain = _plain(monkeypatch, args)
    assert first == again == plain
    assert "skipped u-2" in first[0].stderr


def test_the_weights_bound_leaves_room_for_offloaded_weights() -> None:
    """--cpu-offload-gb keeps up to that many GiB of weights per GPU in CPU memory, so the bound that
    skips a model (its linear weights alone above a GPU) must subtract them: `which` said Llama-3.3-70B
    does not fit one RTX4090 with 200 GiB offloaded ("int4 weights alone 32.9 GiB per GPU") where
    `fit` with the same flag plans it at 8.2 of 21.8 GiB."""
    args = ("--gpu", "RTX4090", "--ctx", "8k", "--cpu-offload-gb", "200")
    fit = cli("fit", "Llama-3.3-70B", *args, "--json")
    which = cli("which", *args, "--json")
    assert fit.code == 0 and which.code == 0
    row = next(m for m in json.loads(which.stdout)["models"] if m["name"] == "Llama-3.3-70B-Instruct")
    assert row["fits"], row["reason"]
