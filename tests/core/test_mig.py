"""MIG slices as GPUs: derived from the catalog entry (one declaration), found by every command, one
engine instance per slice (no tensor parallel across slices), replicas across slices in serve."""

from __future__ import annotations

import json

import pytest

from gpusize.core.engines import engine
from gpusize.core.mig import MIG_TABLES, mig_slices
from gpusize.core.plan import TP_SIZES
from gpusize.sources.catalog import Catalogs, find_gpu, load_gpus
from tests.helpers import CliResult, catalog_spec, run_in_process, workload


def run(*args: str) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "160"})


def test_every_table_names_a_catalog_gpu_whose_mig_instances_it_matches() -> None:
    gpus = {g.name: g for g in load_gpus()}
    for name, table in MIG_TABLES.items():
        assert name in gpus, name
        assert gpus[name].mig_instances == table.compute_slices, name
        smallest = min(table.profiles, key=lambda p: p.memory_gib)
        assert smallest.per_gpu == table.compute_slices, name
        assert mig_slices(gpus[name]), name
        assert table.source


def test_slices_are_not_declared_in_the_catalog_file_and_are_not_planned_over() -> None:
    names = {g.name for g in load_gpus()}
    assert not any("-MIG-" in n for n in names)
    assert len(Catalogs.with_env().mig_gpus()) >= 40


@pytest.mark.parametrize(
    ("typed", "name", "mib", "sms"),
    [
        ("H100-MIG-3g.40gb", "H100-SXM-MIG-3g.40gb", round(39.50 * 1024), 60),
        ("h100-sxm-mig-1g.10gb", "H100-SXM-MIG-1g.10gb", round(9.75 * 1024), 16),
        ("A100-80GB-MIG-3g.40gb", "A100-80GB-MIG-3g.40gb", 40192, 42),
        ("A100-MIG-7g.80gb", "A100-80GB-MIG-7g.80gb", 80384, 98),
        ("H200-MIG-7g.141gb", "H200-SXM-MIG-7g.141gb", round(139.75 * 1024), 132),
        ("GB200-MIG-1g.23gb", "GB200-MIG-1g.23gb", 22 * 1024, 18),
    ],
)
def test_slice_names_resolve_with_reported_memory(typed: str, name: str, mib: int, sms: int) -> None:
    gpu = find_gpu(typed)
    assert (gpu.name, gpu.memory_mib, gpu.sm_count) == (name, mib, sms)
    assert gpu.interconnect == "none" and gpu.p2p is False and gpu.one_device


def test_bandwidth_is_the_share_of_memory_slices() -> None:
    whole, half = find_gpu("H100-SXM"), find_gpu("H100-SXM-MIG-3g.40gb")
    assert half.bandwidth_gbps == pytest.approx((whole.bandwidth_gbps or 0) * 4 / 8, abs=0.1)
    assert half.bf16_tflops == pytest.approx((whole.bf16_tflops or 0) * 3 / 7, abs=0.1)


@pytest.mark.parametrize("engine_name", ["vllm", "sglang", "llamacpp"])
def test_no_engine_runs_one_instance_across_slices(engine_name: str) -> None:
    spec = catalog_spec("Qwen3-8B")
    work = workload(spec, 4096, 1, "bf16", engine_name=engine_name)
    gpu = find_gpu("H100-SXM-MIG-1g.20gb")
    for tp in TP_SIZES[1:]:
        c = engine(engine_name).evaluate(spec, gpu, tp, work)
        assert not c.fits and "one engine instance runs per MIG slice" in (c.reason or "")


def test_fit_on_a_slice_tries_one_instance_only() -> None:
    r = run("fit", "Qwen3-32B", "--gpu", "H100-MIG-3g.40gb", "--ctx", "32k", "--json")
    assert r.code == 1, r.stderr
    data = json.loads(r.stdout)
    assert {c["tensor_parallel"] for c in data["candidates"]} == {1}


def test_fit_on_a_slice_answers() -> None:
    r = run("fit", "Qwen3-8B", "--gpu", "H100-MIG-3g.40gb", "--ctx", "32k")
    assert r.code == 0, r.stderr
    assert "MIG 3g.40gb (TP=1)" in r.stdout


def test_serve_on_slices_scales_by_replicas_only() -> None:
    r = run("serve", "Qwen3-0.6B", "--users", "8", "--gpu", "A100-MIG-1g.10gb", "--gpus", "4", "--json")
    assert r.code == 0, r.stderr
    layouts = json.loads(r.stdout)["layouts"]
    fitting = [x for x in layouts if x["fits"]]
    assert fitting and all(x["tensor_parallel"] == 1 for x in fitting)


def test_mig_alone_lists_the_slices() -> None:
    r = run("fit", "Qwen3-8B", "--gpu", "MIG")
    assert r.code == 2 and not r.stdout
    assert r.stderr.count("\n") == 1
    assert "H100-SXM-MIG-{1g.10gb,1g.20gb,2g.20gb,3g.40gb,4g.40gb,7g.80gb}" in r.stderr


def test_quote_on_slices_adds_replicas_not_tensor_parallel() -> None:
    r = run("quote", "Qwen3-8B", "--gpu", "H100-MIG-3g.40gb", "--users", "32", "--format", "json")
    assert r.code == 0, r.stderr
    option = json.loads(r.stdout)["options"][0]
    assert option["fits"] and option["tensor_parallel"] == 1 and option["replicas"] == 2


def test_train_on_a_slice_never_spans_two() -> None:
    r = run("train", "Qwen3-0.6B", "--method", "lora", "--gpu", "H100-MIG-1g.10gb", "--json")
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["plan"]["num_gpus"] == 1
    r = run("train", "Qwen3-8B", "--method", "full", "--gpu", "H100-MIG-3g.40gb", "--gpus", "2")
    assert r.code == 1 and "one engine instance runs per MIG slice" in r.stdout


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("H100-MIG", "names no MIG profile of H100-SXM: H100-SXM-MIG-{1g.10gb,"),
        ("H200-MIG-3g.40gb", "names no MIG profile of H200-SXM: H200-SXM-MIG-{1g.18gb,"),
        ("L40S-MIG-1g.10gb", "L40S has no MIG profiles gpusize knows"),
    ],
)
def test_a_slice_name_without_a_real_profile_lists_that_gpus_slices(typed: str, said: str) -> None:
    r = run("fit", "Qwen3-8B", "--gpu", typed)
    assert r.code == 2 and not r.stdout and r.stderr.count("\n") == 1
    assert said in r.stderr, r.stderr
