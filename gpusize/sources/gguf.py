"""GGUF files (llama.cpp, Ollama): architecture metadata and the exact bytes of every tensor.

I/O at the edge: reads the GGUF header and tensor table through `gguf_header` (a bounded reader
that checks every count and length against the file's real size and keeps nothing per tensor), never
the tensor data; the optional `gguf` package (`pip install 'gpusize[gguf]'`) gives the ggml type
sizes and names. The metadata is checked first (architecture, block count, every config field, the
vocabulary's type), then the tensor table is summed into per-layer bytes as it is read: a file that
cannot be sized is refused before its 100,000 tensors cost anything. Metadata values are read through
`core.fields`: a width of 256.7, a block count of "two" or an array where a number belongs is an
error naming the key. The metadata is translated into a Hugging Face-style config dict so the same
ModelSpec arithmetic applies (KV cache, heads, TP); weights come from the file itself, tensor by tensor."""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path
from typing import Any

from gpusize.core.fields import Fields, echo
from gpusize.dataclass import dataclass
from gpusize.errors import ConfigError
from gpusize.sources.config_json import shown_path
from gpusize.sources.gguf_header import GgufHeader, Unread, open_gguf

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
    """A GGUF file as read: its architecture, file type, config and the bytes of its tensors by kind
    and block."""

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


def _quant_sizes(gguf: Any) -> Any:
    """(elements per block, bytes per block) of a ggml type from the gguf package, None if unknown."""

    def sizes(kind: int) -> tuple[int, int] | None:
        try:
            found: tuple[int, int] = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
        except (ValueError, KeyError):
            return None
        return found

    return sizes


def read_gguf(path: Path) -> GgufModel:
    gguf = _gguf_module(path)
    with open_gguf(path, _quant_sizes(gguf)) as header:
        where = f"{shown_path(path)}: GGUF metadata"
        meta = header.metadata
        f = Fields(meta, where)
        arch = f.string("general.architecture")
        if not arch:
            raise ConfigError(f"{where}: missing 'general.architecture'")
        if arch not in ARCH_TO_MODEL_TYPE:
            raise ConfigError(
                f"{where}: architecture {echo(arch)} is not supported",
                hint=f"supported: {', '.join(sorted(ARCH_TO_MODEL_TYPE))}",
            )
        config = _config(arch, f)  # every metadata field checked before the tensor table is read
        tokens = _token_count(meta, where)
        sums = _sum_tensors(header, gguf, where, arch, config["num_hidden_layers"])
    vocab = tokens or sums.vocab
    if not vocab:
        raise ConfigError(f"{where}: no vocabulary (tokenizer.ggml.tokens or token_embd.weight)")
    config.update(vocab_size=vocab, tie_word_embeddings=sums.output == 0)
    config["torch_dtype"] = _float_dtype(sums.by_type)
    layers = list(sums.layers)
    while layers and layers[-1] == 0:  # blocks without tensors of their own at the end (MTP stubs)
        layers.pop()
    return GgufModel(
        path=str(path),
        architecture=arch,
        file_type=_file_type(meta),
        config=config,
        tensor_bytes=sum(sums.by_type.values()),
        bytes_by_type=sums.by_type,
        layer_bytes=tuple(layers),
        token_embd_bytes=sums.embd,
        output_bytes=sums.output,
        other_bytes=sums.other,
    )


@dataclass
class _Sums:
    """The tensor table summed as it is read: bytes per block, per part and per ggml type."""

    layers: list[int]
    by_type: dict[str, int] = field(default_factory=dict)
    embd: int = 0
    output: int = 0
    other: int = 0
    vocab: int = 0  # token_embd.weight's last dimension, when the table has it


def _sum_tensors(header: GgufHeader, gguf: Any, where: str, arch: str, blocks: int) -> _Sums:
    sums = _Sums([0] * blocks)
    type_names: dict[int, str] = {}
    for name, dims, kind, size in header.tensors():
        if kind not in type_names:
            type_names[kind] = gguf.GGMLQuantizationType(kind).name
        sums.by_type[type_names[kind]] = sums.by_type.get(type_names[kind], 0) + size
        match = _BLOCK.match(name)
        if match:
            index = int(match[1])
            if index >= blocks:
                raise ConfigError(
                    f"{where}: tensor {echo(name)} belongs to block {index:,}, but "
                    f"{arch}.block_count is {blocks}"
                )
            sums.layers[index] += size
        elif name.startswith("token_embd"):
            sums.embd += size
            if name == "token_embd.weight" and dims:
                sums.vocab = dims[-1]
        elif name.startswith("output.") or name == "output":
            sums.output += size
        else:
            sums.other += size
    return sums


def _token_count(meta: dict[str, Any], where: str) -> int:
    """How many tokens `tokenizer.ggml.tokens` lists (0 when it is absent or empty)."""
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is None:
        return 0
    if isinstance(tokens, Unread) and tokens.what.startswith("array"):
        return tokens.count
    raise ConfigError(f"{where}: 'tokenizer.ggml.tokens' must be a list of strings, got {echo(tokens)}")


#: GGUF float tensor types -> the Transformers dtype name a config.json would carry.
_GGUF_FLOATS = {"F16": "float16", "BF16": "bfloat16", "F32": "float32"}


def _float_dtype(by_type: dict[str, int]) -> str:
    """The file's 16/32-bit float type, by bytes (an F16 GGUF is float16, not bfloat16); the f32 norms
    of a quantized file do not count; bfloat16 when no float type holds weights."""
    quantized = any(kind not in _GGUF_FLOATS for kind in by_type)
    floats = {k: v for k, v in by_type.items() if k in _GGUF_FLOATS and not (quantized and k == "F32")}
    return _GGUF_FLOATS[max(floats, key=lambda k: floats[k])] if floats else "bfloat16"


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


def _config(arch: str, f: Fields) -> dict[str, Any]:
    """An HF-style config from `{arch}.*` metadata keys (llama.cpp's names for the same facts), each
    read through `core.fields` (typed, bounded, the key named in any error); `vocab_size` and
    `tie_word_embeddings` come from the tensor table."""

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
        "vocab_size": 0,  # set from the vocabulary once the tensor table is read
        "max_position_embeddings": f.optional_integer(key("context_length"), kind="positions"),
        "tie_word_embeddings": False,  # set from the tensor table
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
