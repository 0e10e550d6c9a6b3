"""`--engine trtllm` through the CLI (in-process): fit, serve and quote answer with TensorRT-LLM's
model and print trtllm-serve; its settings are refused elsewhere, bad values exit 2 in one line."""

from __future__ import annotations

import json

from tests.helpers import run_in_process


def test_fit_names_the_release_and_trtllm_s_settings() -> None:
    proc = run_in_process(
        "fit", "Qwen3-0.6B", "--engine", "trtllm", "--gpu", "H100", "--ctx", "40960", "--json"
    )
    assert proc.code == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["workload"]["engine_version"] == "1.2.1"
    # the H100 record of tests/data/trtllm_records.yaml: 643,136 tokens logged
    assert abs(data["plan"]["kv_cache_capacity_tokens"] - 643136) / 643136 < 0.03


def test_serve_prints_trtllm_serve_with_the_options_yaml() -> None:
    proc = run_in_process(
        "serve", "Llama-3.1-8B", "--engine", "trtllm", "--gpu", "H100", "--ctx", "8k", "--users", "20",
        "--kv-dtype", "fp8", "--max_batch_size", "256",
    )  # fmt: skip
    assert proc.code in (0, 1), proc.stderr
    text = " ".join(proc.stdout.split())
    assert "trtllm-serve meta-llama/Llama-3.1-8B --backend pytorch --tp_size 1" in text.replace("\\ ", "")
    assert "--max_batch_size 256" in text and 'kv_cache_config: {dtype: "fp8"}' in text


def test_bad_values_exit_2_in_one_line() -> None:
    for args in (
        ("--kv_cache_free_gpu_memory_fraction", "1.5"),
        ("--engine-version", "0.21.0"),
        ("--pp_size", "0"),
    ):
        proc = run_in_process("fit", "Qwen3-8B", "--engine", "trtllm", *args)
        assert proc.code == 2 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, args
    proc = run_in_process("fit", "Qwen3-8B", "--max_batch_size", "8")
    assert proc.code == 2 and "--engine trtllm" in proc.stderr
