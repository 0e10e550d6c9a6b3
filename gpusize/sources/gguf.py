"""GGUF files (llama.cpp, Ollama): architecture metadata and the exact bytes of every tensor.

I/O at the edge: reads the GGUF header and tensor table through the optional `gguf` package
(`pip install 'gpusize[gguf]'`), never the tensor data, after `gguf_header.check_header` has walked
the header and bounded every count and length by the file's real size (a tensor count of 2^62 or a
truncated file never reaches the reader). Metadata values are read through `core.fields`: a width
of 256.7, a block count of "two" or an array where a number belongs is an error naming the key.
The metadata is translated into a Hugging Face-style config dict so the same ModelSpec arithmetic
applies (KV cache, heads, TP); weights come from the file itself, tensor by tensor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusize.core.fields import Fields, echo
from gpusize.errors import ConfigError
from gpusize.sources.config_json import shown_path
from gpusize.sources.gguf_header import check_header

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
_BLOCK = re.compile(r"^blk\.(\d{1,18})\.")


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


def _gguf_module(path: Path) -> Any:
    try:
        # optional extra (pip install gpusize[gguf]): loaded only for .gguf files
        import gguf
    except ImportError:
        raise ConfigError(
            f"{shown_path(path)}: reading GGUF files needs the gguf extra", hint="pip install 'gpusize[gguf]'"
        ) from None
    return gguf


def _reader(path: Path) -> Any:
    """GGUFReader over a header that `gguf_header.check_header` has walked and bounded first."""
    gguf = _gguf_module(path)

    def quant_sizes(kind: int) -> tuple[int, int] | None:
        try:
            sizes: tuple[int, int] = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
        except (ValueError, KeyError):
            return None
        return sizes

    check_header(path, quant_sizes)
    try:
        return gguf.GGUFReader(str(path), "r")
    except (ValueError, OSError, KeyError, IndexError, TypeError, OverflowError) as exc:
        raise ConfigError(f"{shown_path(path)}: not a readable GGUF file ({exc})".splitlines()[0]) from None


def _fields(reader: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in reader.fields.items():
        if key.startswith("tokenizer.ggml.") and key != "tokenizer.ggml.tokens":
            continue
        try:
            out[key] = value.contents()
        except (ValueError, IndexError, TypeError):  # UnicodeDecodeError is a ValueError
            continue
    return out


def read_gguf(path: Path) -> GgufModel:
    reader = _reader(path)
    meta = _fields(reader)
    where = f"{shown_path(path)}: GGUF metadata"
    arch = Fields(meta, where).string("general.architecture")
    if not arch:
        raise ConfigError(f"{where}: missing 'general.architecture'")
    if arch not in ARCH_TO_MODEL_TYPE:
        raise ConfigError(
            f"{where}: architecture {echo(arch)} is not supported",
            hint=f"supported: {', '.join(sorted(ARCH_TO_MODEL_TYPE))}",
        )
    blocks = Fields(meta, where).integer(f"{arch}.block_count", kind="layers")
    layers = [0] * blocks
    by_type: dict[str, int] = {}
    embd = output = other = 0
    for tensor in reader.tensors:
        size = int(tensor.n_bytes)
        by_type[tensor.tensor_type.name] = by_type.get(tensor.tensor_type.name, 0) + size
        match = _BLOCK.match(tensor.name)
        if match:
            index = int(match[1])
            if index >= blocks:
                raise ConfigError(
                    f"{where}: tensor {echo(tensor.name)} belongs to block {index:,}, but "
                    f"{arch}.block_count is {blocks}"
                )
            layers[index] += size
        elif tensor.name.startswith("token_embd"):
            embd += size
        elif tensor.name.startswith("output.") or tensor.name == "output":
            output += size
        else:
            other += size
    while layers and layers[-1] == 0:  # blocks without tensors of their own at the end (MTP stubs)
        layers.pop()
    return GgufModel(
        path=str(path),
        architecture=arch,
        file_type=_file_type(meta),
        config=_config(arch, Fields(meta, where), _vocab(meta, reader, where), output),
        tensor_bytes=sum(by_type.values()),
        bytes_by_type=by_type,
        layer_bytes=tuple(layers),
        token_embd_bytes=embd,
        output_bytes=output,
        other_bytes=other,
    )


def _vocab(meta: dict[str, Any], reader: Any, where: str) -> int:
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is not None:
        if not isinstance(tokens, list):
            raise ConfigError(
                f"{where}: 'tokenizer.ggml.tokens' must be a list of strings, got {echo(tokens)}"
            )
        if tokens:
            return len(tokens)
    for tensor in reader.tensors:
        if tensor.name == "token_embd.weight":
            return int(tensor.shape[-1])
    raise ConfigError(f"{where}: no vocabulary (tokenizer.ggml.tokens or token_embd.weight)")


def _file_type(meta: dict[str, Any]) -> str:
    code = meta.get("general.file_type")
    if not isinstance(code, int) or isinstance(code, bool):
        return "unknown"
    try:
        # optional extra (pip install gpusize[gguf]): loaded only for .gguf files
        from gguf import LlamaFileType

        return str(LlamaFileType(code).name).removeprefix("MOSTLY_")
    except (ImportError, ValueError):
        return str(code)


def _config(arch: str, f: Fields, vocab: int, output_bytes: int) -> dict[str, Any]:
    """An HF-style config from `{arch}.*` metadata keys (llama.cpp's names for the same facts), each
    read through `core.fields` (typed, bounded, the key named in any error)."""

    def key(name: str) -> str:
        return f"{arch}.{name}"

    hidden = f.integer(key("embedding_length"), kind="width")
    heads = f.integer(key("attention.head_count"), kind="heads")
    if hidden < heads:
        raise f.fail(key("embedding_length"), f"is smaller than the {heads} attention heads", hidden)
    intermediate = f.integer(key("feed_forward_length"), kind="width", default=4 * hidden)
    config: dict[str, Any] = {
        "model_type": ARCH_TO_MODEL_TYPE[arch],
        "architectures": [f"gguf:{arch}"],
        "hidden_size": hidden,
        "num_hidden_layers": f.integer(key("block_count"), kind="layers"),
        "num_attention_heads": heads,
        "num_key_value_heads": f.integer(key("attention.head_count_kv"), kind="heads", default=heads),
        "head_dim": f.integer(key("attention.key_length"), kind="width", default=hidden // heads),
        "intermediate_size": intermediate,
        "vocab_size": vocab,
        "max_position_embeddings": f.optional_integer(key("context_length"), kind="positions"),
        "tie_word_embeddings": output_bytes == 0,
        "torch_dtype": "bfloat16",
    }
    window = f.optional_integer(key("attention.sliding_window"), kind="positions", minimum=0)
    if window:
        config["sliding_window"] = window
    experts = f.optional_integer(key("expert_count"), kind="experts", minimum=0)
    if experts:
        config.update(
            {
                "num_experts": experts,
                "num_experts_per_tok": f.integer(key("expert_used_count"), kind="experts"),
                "moe_intermediate_size": f.integer(
                    key("expert_feed_forward_length"), kind="width", default=intermediate
                ),
            }
        )
    if f.optional_integer(key("attention.kv_lora_rank"), kind="width", minimum=0):
        rope = f.integer(key("rope.dimension_count"), kind="width", default=64)
        key_length = f.integer(key("attention.key_length"), kind="width", default=192)
        if key_length <= rope:
            raise f.fail(
                key("attention.key_length"), f"must exceed rope.dimension_count ({rope})", key_length
            )
        config.update(
            {
                "kv_lora_rank": f.integer(key("attention.kv_lora_rank"), kind="width"),
                "qk_rope_head_dim": rope,
                "qk_nope_head_dim": key_length - rope,
                "v_head_dim": f.integer(key("attention.value_length"), kind="width", default=128),
                "q_lora_rank": f.optional_integer(key("attention.q_lora_rank"), kind="width", minimum=0)
                or None,
            }
        )
    return config
