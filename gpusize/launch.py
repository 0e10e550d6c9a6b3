"""Launch commands for a plan (pure): the engine flags that reproduce what gpusize computed."""

from __future__ import annotations


def vllm_command(
    model: str, tp: int, max_model_len: int, utilization: float, kv_dtype: str, weight_dtype: str
) -> str:
    parts = [
        f"vllm serve {model}",
        f"--tensor-parallel-size {tp}",
        f"--max-model-len {max_model_len}",
        f"--gpu-memory-utilization {utilization}",
    ]
    if kv_dtype == "fp8":
        parts.append("--kv-cache-dtype fp8")
    if weight_dtype == "fp8":
        parts.append("--quantization fp8")
    return " ".join(parts)


def sglang_command(model: str, tp: int, max_model_len: int, mem_fraction: float, kv_dtype: str) -> str:
    parts = [
        f"python -m sglang.launch_server --model-path {model}",
        f"--tp {tp}",
        f"--context-length {max_model_len}",
        f"--mem-fraction-static {mem_fraction}",
    ]
    if kv_dtype == "fp8":
        parts.append("--kv-cache-dtype fp8_e4m3")
    return " ".join(parts)


def llamacpp_command(model_file: str, context: int, gpu_layers: int, parallel: int = 1) -> str:
    return f"llama-server -m {model_file} -c {context * parallel} -np {parallel} -ngl {gpu_layers}"
