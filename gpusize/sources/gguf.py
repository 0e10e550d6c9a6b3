"""GGUF files (llama.cpp, Ollama): architecture metadata and the exact bytes of every tensor.

I/O at the edge: reads the GGUF header and tensor table through the optional `gguf` package
(`pip install 'gpusize[gguf]'`), never the tensor data. The metadata is translated into a
Hugging Face-style config dict so the same ModelSpec arithmetic applies (KV cache, heads, TP);
weights come from the file itself, tensor by tensor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusize.errors import ConfigError

__all__ = ["ARCH_TO_MODEL_TYPE", "GgufModel", "read_gguf"]

#: GGUF `general.architecture` -> the Transformers model_type gpusize parses.
ARCH_TO_MODEL_TYPE = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3_text",
    "phi3": "phi3",
    "starcoder2": "starcoder2",
    "falcon": "falcon",
    "olmo2": "olmo2",
    "gpt-oss": "gpt_oss",
    "deepseek2": "deepseek_v3",
    "command-r": "cohere",
}
_BLOCK = re.compile(r"^blk\.(\d+)\.")


@dataclass(frozen=True)
class GgufModel:
    path: str
    architecture: str
    file_type: str
    config: dict[str, Any]
    tensor_bytes: int
    bytes_by_type: dict[str, int]
    #: Bytes of each repeating block blk.N.* (what --n-gpu-layers moves), token embedding, output head.
    layer_bytes: tuple[int, ...]
    token_embd_bytes: int
    output_bytes: int
    other_bytes: int
    notes: tuple[str, ...] = field(default_factory=tuple)


def _reader(path: Path) -> Any:
    try:
        # optional extra (pip install gpusize[gguf]): loaded only for .gguf files
        from gguf import GGUFReader
    except ImportError:
        raise ConfigError(
            f"{path}: reading GGUF files needs the gguf extra", hint="pip install 'gpusize[gguf]'"
        ) from None
    try:
        return GGUFReader(str(path), "r")
    except (ValueError, OSError, KeyError) as exc:
        raise ConfigError(f"{path}: not a readable GGUF file ({exc})".splitlines()[0]) from None


def _fields(reader: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in reader.fields.items():
        if key.startswith("tokenizer.ggml.") and key != "tokenizer.ggml.tokens":
            continue
        try:
            out[key] = value.contents()
        except (ValueError, IndexError, TypeError):
            continue
    return out


def read_gguf(path: Path) -> GgufModel:
    reader = _reader(path)
    meta = _fields(reader)
    arch = str(meta.get("general.architecture", ""))
    if not arch:
        raise ConfigError(f"{path}: GGUF without general.architecture")
    layers: dict[int, int] = {}
    by_type: dict[str, int] = {}
    embd = output = other = 0
    for tensor in reader.tensors:
        size = int(tensor.n_bytes)
        by_type[tensor.tensor_type.name] = by_type.get(tensor.tensor_type.name, 0) + size
        match = _BLOCK.match(tensor.name)
        if match:
            layers[int(match[1])] = layers.get(int(match[1]), 0) + size
        elif tensor.name.startswith("token_embd"):
            embd += size
        elif tensor.name.startswith("output.") or tensor.name == "output":
            output += size
        else:
            other += size
    vocab_rows = _vocab(meta, reader)
    return GgufModel(
        path=str(path),
        architecture=arch,
        file_type=_file_type(meta),
        config=_config(arch, meta, vocab_rows, output),
        tensor_bytes=sum(by_type.values()),
        bytes_by_type=by_type,
        layer_bytes=tuple(layers.get(i, 0) for i in range(max(layers) + 1 if layers else 0)),
        token_embd_bytes=embd,
        output_bytes=output,
        other_bytes=other,
    )


def _vocab(meta: dict[str, Any], reader: Any) -> int:
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens:
        return len(tokens)
    for tensor in reader.tensors:
        if tensor.name == "token_embd.weight":
            return int(tensor.shape[-1])
    raise ConfigError("GGUF without a vocabulary (tokenizer.ggml.tokens or token_embd.weight)")


def _file_type(meta: dict[str, Any]) -> str:
    code = meta.get("general.file_type")
    if code is None:
        return "unknown"
    try:
        # optional extra (pip install gpusize[gguf]): loaded only for .gguf files
        from gguf import LlamaFileType

        return str(LlamaFileType(int(code)).name).removeprefix("MOSTLY_")
    except (ImportError, ValueError):
        return str(code)


def _config(arch: str, meta: dict[str, Any], vocab: int, output_bytes: int) -> dict[str, Any]:
    """An HF-style config from `{arch}.*` metadata keys (llama.cpp's names for the same facts)."""

    def get(key: str, default: Any = None) -> Any:
        return meta.get(f"{arch}.{key}", default)

    if arch not in ARCH_TO_MODEL_TYPE:
        raise ConfigError(
            f"GGUF architecture '{arch}' is not supported",
            hint=f"supported: {', '.join(sorted(ARCH_TO_MODEL_TYPE))}",
        )
    hidden, heads = get("embedding_length"), get("attention.head_count")
    if not hidden or not heads or not get("block_count"):
        raise ConfigError(f"GGUF {arch}: missing embedding_length, attention.head_count or block_count")
    config: dict[str, Any] = {
        "model_type": ARCH_TO_MODEL_TYPE[arch],
        "architectures": [f"gguf:{arch}"],
        "hidden_size": int(hidden),
        "num_hidden_layers": int(get("block_count")),
        "num_attention_heads": int(heads),
        "num_key_value_heads": int(get("attention.head_count_kv", heads)),
        "head_dim": int(get("attention.key_length", int(hidden) // int(heads))),
        "intermediate_size": int(get("feed_forward_length", 4 * int(hidden))),
        "vocab_size": vocab,
        "max_position_embeddings": int(get("context_length", 0)) or None,
        "tie_word_embeddings": output_bytes == 0,
        "torch_dtype": "bfloat16",
    }
    if get("attention.sliding_window"):
        config["sliding_window"] = int(get("attention.sliding_window"))
    if get("expert_count"):
        config.update(
            {
                "num_experts": int(get("expert_count")),
                "num_experts_per_tok": int(get("expert_used_count")),
                "moe_intermediate_size": int(get("expert_feed_forward_length", config["intermediate_size"])),
            }
        )
    if get("attention.kv_lora_rank"):
        config.update(
            {
                "kv_lora_rank": int(get("attention.kv_lora_rank")),
                "qk_rope_head_dim": int(get("rope.dimension_count", 64)),
                "qk_nope_head_dim": int(get("attention.key_length", 192))
                - int(get("rope.dimension_count", 64)),
                "v_head_dim": int(get("attention.value_length", 128)),
                "q_lora_rank": int(get("attention.q_lora_rank", 0)) or None,
            }
        )
    return config
