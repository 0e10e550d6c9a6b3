"""GGUF files the tests write themselves with the `gguf` writer.

Large models are written SPARSE: the header and tensor table are real, the data region is a hole
(truncate), so a 4.9 GB Llama-3.1-8B Q4_K_M layout costs a few kB of disk and reads instantly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGUFValueType, GGUFWriter
from gguf import GGMLQuantizationType as T


def tensor_bytes(shape: list[int], qtype: T) -> int:
    block, size = GGML_QUANT_SIZES[qtype]
    return int(np.prod(shape)) // block * size


def write_sparse(
    path: Path, arch: str, meta: dict[str, int], tensors: list[tuple[str, list[int], T]], vocab: int
) -> int:
    """Write a GGUF whose tensor data is a hole; returns the sum of the tensors' bytes."""
    w = GGUFWriter(str(path), arch)
    w.add_block_count(meta["block_count"])
    w.add_embedding_length(meta["embedding_length"])
    w.add_feed_forward_length(meta["feed_forward_length"])
    w.add_head_count(meta["head_count"])
    w.add_head_count_kv(meta["head_count_kv"])
    w.add_context_length(meta["context_length"])
    if "sliding_window" in meta:
        w.add_sliding_window(meta["sliding_window"])
    w.add_vocab_size(vocab)
    w.add_file_type(meta.get("file_type", 15))
    total = 0
    for name, shape, qtype in tensors:
        nbytes = tensor_bytes(shape, qtype)
        total += nbytes
        w.add_tensor_info(name, list(reversed(shape)), np.float32, nbytes, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    f = w.fout[0]
    f.write(b"\0" * ((-f.tell()) % 32))
    padded = sum(GGUFWriter.ggml_pad(ti.nbytes, 32) for ti in w.tensors[0].values())
    f.flush()
    f.truncate(f.tell() + padded)
    f.close()
    return total


def llama31_8b_q4_k_m(path: Path) -> int:
    """The Llama-3.1-8B Q4_K_M tensor layout (llama.cpp's quantize: Q6_K for output, and for
    attn_v / ffn_down in the first and last eighth of layers and every third one between)."""
    n_layer, n_embd, n_ff, n_vocab, n_kv = 32, 4096, 14336, 128256, 1024

    def more(i: int) -> bool:
        return i < n_layer // 8 or i >= 7 * n_layer // 8 or (i - n_layer // 8) % 3 == 2

    tensors = [
        ("token_embd.weight", [n_embd, n_vocab], T.Q4_K),
        ("output_norm.weight", [n_embd], T.F32),
        ("output.weight", [n_embd, n_vocab], T.Q6_K),
        ("rope_freqs.weight", [64], T.F32),
    ]
    for i in range(n_layer):
        p = f"blk.{i}."
        tensors += [
            (p + "attn_norm.weight", [n_embd], T.F32),
            (p + "attn_q.weight", [n_embd, n_embd], T.Q4_K),
            (p + "attn_k.weight", [n_embd, n_kv], T.Q4_K),
            (p + "attn_v.weight", [n_embd, n_kv], T.Q6_K if more(i) else T.Q4_K),
            (p + "attn_output.weight", [n_embd, n_embd], T.Q4_K),
            (p + "ffn_norm.weight", [n_embd], T.F32),
            (p + "ffn_gate.weight", [n_embd, n_ff], T.Q4_K),
            (p + "ffn_up.weight", [n_embd, n_ff], T.Q4_K),
            (p + "ffn_down.weight", [n_ff, n_embd], T.Q6_K if more(i) else T.Q4_K),
        ]
    meta = {
        "block_count": n_layer,
        "embedding_length": n_embd,
        "feed_forward_length": n_ff,
        "head_count": 32,
        "head_count_kv": 8,
        "context_length": 131072,
    }
    return write_sparse(path, "llama", meta, tensors, n_vocab)


#: A tiny Llama GGUF's metadata: key -> (value, GGUF type); a test replaces or drops keys.
TINY_META: dict[str, tuple[object, GGUFValueType]] = {
    "llama.block_count": (2, GGUFValueType.UINT32),
    "llama.embedding_length": (64, GGUFValueType.UINT32),
    "llama.feed_forward_length": (128, GGUFValueType.UINT32),
    "llama.attention.head_count": (4, GGUFValueType.UINT32),
    "llama.attention.head_count_kv": (2, GGUFValueType.UINT32),
    "llama.context_length": (4096, GGUFValueType.UINT32),
    "general.file_type": (1, GGUFValueType.UINT32),
    "tokenizer.ggml.tokens": ([f"token{i}" for i in range(256)], GGUFValueType.ARRAY),
}


def tiny_tensors(blocks: int = 2) -> list[tuple[str, list[int], T]]:
    tensors = [("token_embd.weight", [64, 256], T.F16), ("output_norm.weight", [64], T.F32)]
    for i in range(blocks):
        tensors += [
            (f"blk.{i}.attn_q.weight", [64, 64], T.F16),
            (f"blk.{i}.attn_k.weight", [64, 32], T.F16),
            (f"blk.{i}.ffn_up.weight", [64, 128], T.F16),
        ]
    return tensors


def write_tiny(
    path: Path,
    meta: dict[str, tuple[object, GGUFValueType]] | None = None,
    drop: tuple[str, ...] = (),
    tensors: list[tuple[str, list[int], T]] | None = None,
    arch: str = "llama",
) -> Path:
    """A small, complete GGUF with TINY_META updated by `meta`; its tensor data is a hole (zeros)."""
    w = GGUFWriter(str(path), arch)
    try:
        for key, (value, vtype) in {**TINY_META, **(meta or {})}.items():
            if key in drop:
                continue
            if vtype == GGUFValueType.ARRAY:
                w.add_array(key, value)  # type: ignore[arg-type]
            else:
                w.add_key_value(key, value, vtype)
        for name, shape, qtype in tensors if tensors is not None else tiny_tensors():
            nbytes = tensor_bytes(shape, qtype)
            w.add_tensor_info(name, list(reversed(shape)), np.float32, nbytes, raw_dtype=qtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_ti_data_to_file()
        f = w.fout[0]
        f.write(b"\0" * ((-f.tell()) % 32))
        f.flush()
        f.truncate(f.tell() + sum(GGUFWriter.ggml_pad(ti.nbytes, 32) for ti in w.tensors[0].values()))
    finally:
        for handle in w.fout or []:
            handle.close()
    return path


def write_many_tensors(path: Path, count: int, vocabulary: bool = True) -> Path:
    """A tiny Llama GGUF whose table lists `count` small F32 tensors outside any block (100,000 make a
    file of about 18 MB), with or without tokenizer.ggml.tokens; it has no token_embd.weight."""
    table = [(f"extra.{i}.weight", [32], T.F32) for i in range(count)]
    return write_tiny(path, drop=() if vocabulary else ("tokenizer.ggml.tokens",), tensors=table)
