"""KV cache bytes per token and the engine's paged KV pool: block layout, capacity in tokens and blocks
per request (pure).

Per token: 2 x (kv_heads / TP, at least 1) x head_dim x bytes per attention layer; MLA caches the latent.

The pool models vLLM 0.19's v1 KV-cache manager (vllm/v1/core/kv_cache_utils.py):
- a page is one block of `block_size` tokens of one layer;
- layers of one attention type share a group; with mixed types (full + sliding window, full +
  chunked) layers are split into groups of `group_size` = the smallest type's layer count, or the
  largest when that is < 1.5 x the smallest; the pool holds `available // page // group_size`
  blocks, and the logged "GPU KV cache size" is `num_blocks // num_groups * block_size`;
- attention types whose layers differ in bytes per token (Gemma 4, MiMo-V2-Flash) get one page
  size: the smaller pages take proportionally more tokens per block (`_mixed_page_layout`); one
  type with per-layer widths (DeciLM, MiniMax-M3's index keys) is one group whose page sums them;
- per request, a full-attention group needs cdiv(max_model_len, block) blocks, a sliding-window
  group cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block) + 1, a chunked-local
  group cdiv(min(chunk + max_num_batched_tokens, max_model_len), block);
- "Maximum concurrency" = num_blocks / blocks needed by one request.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from gpusize.core.kinds import kv_bytes_per_token, mixer_kind, state_elements
from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.dataclass import dataclass
from gpusize.errors import ConfigError
from gpusize.units import DTYPE_BYTES

__all__ = [
    "BLOCK_SIZE",
    "COMPRESSED_BLOCK_SIZE",
    "GROUP_SIZE_RATIO",
    "MLA_BLOCK_SIZE",
    "KvGroup",
    "KvLayout",
    "block_size",
    "blocks_per_request",
    "capacity_tokens",
    "expanded_kv_width",
    "group_size",
    "groups_of",
    "kv_bytes_per_token_per_layer",
    "kv_cache_bytes_per_token",
    "kv_heads_per_gpu",
    "kv_layout",
    "kv_width",
    "largest_context",
    "pool_blocks",
    "recurrent_state_bytes",
    "request_kv_bytes",
]


def kv_heads_per_gpu(num_kv_heads: int, tp: int) -> int:
    """vLLM: max(1, kv_heads // tp); a rank never holds a fraction of a head."""
    return max(1, num_kv_heads // tp)


def kv_width(spec: ModelSpec, kv_heads: int, layer: LayerSpec | None = None) -> int:
    """Elements one token's K and V take in one attention layer holding `kv_heads` KV heads, as vLLM,
    SGLang and llama.cpp cache them; each layer kind owns its width (`core.kinds`): 2 x kv_heads x
    head_dim for GQA (llama.cpp's n_embd_k_gqa + n_embd_v_gqa), the latent kv_lora_rank +
    qk_rope_head_dim for MLA whatever the heads."""
    layer = layer or spec.attention_layers[0]
    return mixer_kind(spec, layer).kv_width(spec, layer, kv_heads)


def expanded_kv_width(spec: ModelSpec, layer: LayerSpec) -> int:
    """`kv_width` as transformers caches it: MLA's up-projected keys (nope + rope) and values for every
    attention head of the layer, not the latent (DeepseekV3Attention stores key_states/value_states
    after kv_b_proj); other layers as `kv_width` with the layer's KV heads."""
    if spec.mla:
        m = spec.mla
        return layer.num_attention_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
    return kv_width(spec, layer.num_key_value_heads, layer)


def kv_bytes_per_token_per_layer(
    spec: ModelSpec, kv_bytes: float, tp: int = 1, kv_heads: int | None = None, layer: LayerSpec | None = None
) -> int:
    """K and V for one token in one attention layer on one GPU.

    Standard: 2 x (kv_heads / tp, at least 1) x head_dim x bytes.
    MLA: (kv_lora_rank + qk_rope_head_dim) x bytes, no factor 2 and not divided by tp: every
    rank holds the whole latent (vLLM; Kimi-VL logs 31,104 B/token at TP=1 and TP=2).
    A packed kind answers in bytes itself (DeepSeek Sparse Attention: `core.kinds.mla_indexer`); a
    block-sparse layer's index key (MiniMax-M3) stays in the model dtype under an fp8 KV cache."""
    heads = spec.num_key_value_heads if kv_heads is None else kv_heads
    layer = layer or spec.attention_layers[0]
    on_gpu = kv_heads_per_gpu(heads, tp)
    index = layer.index_head_dim
    if not index:
        return kv_bytes_per_token(spec, layer, on_gpu, kv_bytes)
    # MiniMaxM3IndexerCache keeps the index keys in the model dtype under a quantized KV cache
    # (index_cache_torch_dtype = model dtype if is_quantized_kv_cache else the KV dtype).
    index_bytes = max(kv_bytes, DTYPE_BYTES.get(spec.torch_dtype, kv_bytes))
    return int((kv_width(spec, on_gpu, layer) - index) * kv_bytes + index * index_bytes)


#: Cached (a few models x dtypes x TP sizes): read by every plan, whole-model figure and note of a fit,
#: on every row of a batch (bench/RESULTS.md).
@functools.lru_cache(maxsize=256)
def kv_cache_bytes_per_token(spec: ModelSpec, kv_bytes: float, tp: int = 1) -> int:
    """Bytes per token summed over every attention layer on one GPU (Llama-3-8B bf16: 131,072)."""
    return sum(
        kv_bytes_per_token_per_layer(spec, kv_bytes, tp, layer.num_key_value_heads, layer) * n
        for layer, n in spec.attention_layer_counts
    )


def recurrent_state_bytes(spec: ModelSpec, state_bytes: float, tp: int = 1) -> int:
    """Constant per-sequence state of the recurrent layers (linear attention, Mamba) on one GPU: each
    kind's conv window and recurrent state (`core.kinds`), sharded over TP with the heads."""
    return int(state_elements(spec) * state_bytes / tp)


# --------------------------------------------------------------------------- the paged pool

#: vLLM's default KV block size on CUDA (CacheConfig.DEFAULT_BLOCK_SIZE).
BLOCK_SIZE = 16
#: FlashMLA, vLLM's MLA backend on Hopper, prefers 64-token blocks.
MLA_BLOCK_SIZE = 64
#: DeepSeek-V4's KV block in vLLM: 256 tokens (vllm/models/deepseek_v4/compressor.py: "The KV block
#: shape [256//4, head_dim] = [64, 584]").
COMPRESSED_BLOCK_SIZE = 256
#: vLLM's group-size rule: use the largest type's layer count when it is < 1.5 x the smallest.
GROUP_SIZE_RATIO = 1.5


@dataclass(frozen=True)
class KvGroup:
    """One group of layers sharing a KV cache shape in vLLM's layout: its kind, window and block size."""

    kind: str  # full | sliding | chunked | state (recurrent layers, core/engines/vllm/hybrid.py)
    window: int | None
    #: Tokens per block of this group when vLLM raised it to unify page sizes (0 = the layout's).
    block_size: int = 0
    #: Blocks one request holds in a state group (vLLM MambaSpec.max_memory_usage_bytes: 1, or 2 and
    #: more under prefix caching's "align" mode, core/engines/vllm/hybrid.py `state_blocks`).
    state_blocks: int = 1


@dataclass(frozen=True)
class KvLayout:
    """vLLM's KV cache layout for a model: the page bytes, tokens per block, tensors per block id and
    the layer groups."""

    page_bytes: int
    block_size: int
    group_size: int
    groups: tuple[KvGroup, ...]
    #: Bytes a speculative-decoding draft's layers add to every block (vLLM keeps EAGLE, MTP and draft
    #: model layers in the target's blocks; core/engines/vllm/speculative.py); 0 without a draft.
    draft_page_bytes: int = 0

    @property
    def bytes_per_block(self) -> int:
        """Bytes one block id costs across the group_size tensors that share it (and the draft's)."""
        return self.page_bytes * self.group_size + self.draft_page_bytes


#: Layouts `kv_layout` keeps (a few kB each): the fit test and the speed model ask for the same
#: model's layout again (`which` 170 times for 92 plans, `quote` over 1,000 GPU types 4,000 times).
LAYOUTS_KEPT = 1024


@functools.lru_cache(maxsize=LAYOUTS_KEPT)
def kv_layout(
    spec: ModelSpec,
    kv_bytes: float,
    tp: int,
    group_ratio: float = GROUP_SIZE_RATIO,
    default_block: int = BLOCK_SIZE,
) -> KvLayout | None:
    """The engine's KV grouping for this model on one GPU; None when no layer keeps a KV cache.
    `default_block`: the release's default block size (vLLM's CacheConfig.DEFAULT_BLOCK_SIZE). A pure
    function of its arguments, so a kept answer (LAYOUTS_KEPT) is the answer."""
    layers = spec.attention_layers
    if not layers:
        return None
    block = block_size(spec, default_block)
    mixed = _mixed_page_layout(spec, kv_bytes, tp, block, group_ratio)
    if mixed is not None:
        return mixed
    per_layer = [  # once per distinct layer, with its count
        (kv_bytes_per_token_per_layer(spec, kv_bytes, tp, la.num_key_value_heads, la), n)
        for la, n in spec.attention_layer_counts
    ]
    if (not spec.uniform_kv_heads and not spec.mla) or (
        len({b for b, _ in per_layer}) > 1 and len(spec.attention_kinds) == 1
    ):
        # Per-layer KV widths of one attention type (DeciLM block_configs, DeepSeek-V4's compression
        # ratios, MiniMax-M3's index key on its sparse layers): vLLM's UniformTypeKVCacheSpecs, one
        # block id spans every layer, num_blocks = available // sum of the layers' page sizes.
        return KvLayout(block * sum(b * n for b, n in per_layer), block, 1, (KvGroup("full", None),))
    page = block * kv_bytes_per_token_per_layer(spec, kv_bytes, tp, layers[0].num_key_value_heads)
    kinds = dict(spec.attention_kinds)
    if len(kinds) == 1:
        (kind, window), count = next(iter(kinds.items()))
        return KvLayout(page, block, count, (KvGroup(kind, window),))
    size = group_size(kinds.values(), group_ratio)
    groups = tuple(
        KvGroup(kind, window)
        for (kind, window), count in kinds.items()
        for _ in range(groups_of(count, size))
    )
    return KvLayout(page, block, size, groups)


def group_size(layer_counts: Iterable[int], group_ratio: float) -> int:
    """Layers per KV cache group, from the layer count of each attention type (or page spec): the
    largest count when it is below `group_ratio` x the smallest, else the smallest (vLLM
    kv_cache_utils.py `_get_kv_cache_groups_uniform_page_size`; GROUP_SIZE_RATIO by default)."""
    counts = tuple(layer_counts)
    smallest, largest = min(counts), max(counts)
    return largest if largest < group_ratio * smallest else smallest


def groups_of(count: int, size: int) -> int:
    """Groups `count` layers of one type fill at `size` layers a group (the last one may be short)."""
    return -(-count // size)


def block_size(spec: ModelSpec, default_block: int = BLOCK_SIZE) -> int:
    """Tokens per KV block vLLM uses for this model: 256 for DeepSeek-V4, 64 for MLA (at least), else
    the release's default (`default_block`: BLOCK_SIZE, 16, up to vLLM 0.33.0; 64 from 0.34.0)."""
    if spec.compressed is not None:
        return COMPRESSED_BLOCK_SIZE
    return max(MLA_BLOCK_SIZE, default_block) if spec.mla else default_block


def _mixed_page_layout(
    spec: ModelSpec, kv_bytes: float, tp: int, block: int, group_ratio: float
) -> KvLayout | None:
    """The groups of a model with two or more attention types, whose layers may differ in bytes per
    token (Gemma 4: sliding layers of 8 KV heads x 256, global layers of 2 x 512; MiMo-V2-Flash: 8 vs
    4 KV heads of K 192 + V 128); None for one attention type or MLA.

    vLLM (vllm/v1/core/kv_cache_utils.py get_kv_cache_groups, vllm-project/vllm commit
    001cabc1be16a59a70d720ed61a13b678c060a18): the specs are neither uniform nor one type, so
    `unify_kv_cache_spec_page_size` raises the block size of each smaller-page spec by
    max_page // its page (NotImplementedError when that does not divide) so that every page has the
    largest page's bytes; `_get_kv_cache_groups_uniform_page_size` then groups the layers of each
    spec as for equal widths (group size = the smallest spec's layer count, the largest below 1.5x).
    The logged token capacity uses the smallest block size (`_report_kv_cache_config`).

    Worked example, Gemma-4-31B bf16 at TP=1: sliding 2 x 16 x 256 x 2 B = 16,384 B/token, page
    262,144 B; global 2 x 4 x 512 x 2 B = 8,192 B/token, page 131,072 B -> global blocks of 32
    tokens; 50 sliding + 10 global layers -> group size 10, 5 sliding groups + 1 global group, one
    block id costs 10 x 262,144 B = 2,621,440 B. At TP=8 the ratio flips (sliding 2 heads -> 2,048
    B/token, global 1 head -> 2,048 B/token: equal pages, block 16 everywhere)."""
    if spec.mla or len(spec.attention_kinds) < 2:
        return None
    counts: dict[tuple[str, int | None, int], int] = {}
    for layer, n in spec.attention_layer_counts:  # first-seen order, as over every layer
        kind = "full" if layer.window is None else ("chunked" if layer.chunked else "sliding")
        width = kv_bytes_per_token_per_layer(spec, kv_bytes, tp, layer.num_key_value_heads, layer)
        key = (kind, layer.window, width)
        counts[key] = counts.get(key, 0) + n
    widths = {width for _, _, width in counts}
    page = block * max(widths)
    for width in widths:
        if page % (block * width):
            raise ConfigError(
                f"vLLM cannot unify this model's KV page sizes ({block * width:,} B does not divide "
                f"{page:,} B; kv_cache_utils.unify_kv_cache_spec_page_size raises NotImplementedError)"
            )
    size = group_size(counts.values(), group_ratio)
    groups = tuple(
        KvGroup(kind, window, 0 if page == block * width else page // width)
        for (kind, window, width), count in counts.items()
        for _ in range(groups_of(count, size))
    )
    return KvLayout(page, block, size, groups)


def pool_blocks(layout: KvLayout, available_bytes: int) -> int:
    return max(0, available_bytes // layout.bytes_per_block)


def capacity_tokens(layout: KvLayout, num_blocks: int) -> int:
    """What vLLM logs as 'GPU KV cache size: N tokens'."""
    return num_blocks // len(layout.groups) * layout.block_size


def blocks_per_request(layout: KvLayout, context: int, max_num_batched_tokens: int) -> int:
    """Blocks one request of `context` tokens reserves across all groups (`_summed_blocks`, each group
    once)."""
    terms = tuple((group, group.block_size or layout.block_size, 1) for group in layout.groups)
    return _summed_blocks(terms, context, max_num_batched_tokens)


def _one_block_per_block(group: KvGroup, block_size: int) -> bool:
    """Whether a request of c x block_size tokens holds c blocks of this group (`blocks_per_request`:
    a full-attention group, or one without a window, at the layout's block size)."""
    full = group.kind != "state" and (group.kind == "full" or group.window is None)
    return full and (group.block_size or block_size) == block_size


def request_kv_bytes(layout: KvLayout, context: int, max_num_batched_tokens: int) -> int:
    """KV bytes one request of `context` tokens reserves on one GPU."""
    return blocks_per_request(layout, context, max_num_batched_tokens) * layout.bytes_per_block


def largest_context(
    layout: KvLayout, num_blocks: int, batch: int, max_num_batched_tokens: int, limit: int
) -> int:
    """Largest context (multiple of the block size, <= limit) of which `batch` requests fit: found by
    bisection, or, when every group holds one block per block size of context (full attention at the
    layout's block size), as the quotient the bisection would reach."""
    lo, hi = 0, limit // layout.block_size
    groups = len(layout.groups)
    if (
        hi > 0
        and batch > 0
        and groups
        and all(_one_block_per_block(g, layout.block_size) for g in layout.groups)
    ):
        # blocks_per_request(mid x block) = groups x mid, rising with mid: the largest mid <= hi with
        # batch x groups x mid <= num_blocks
        return max(0, min(hi, num_blocks // (batch * groups))) * layout.block_size
    terms = _block_terms(layout)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        need = batch * _summed_blocks(terms, mid * layout.block_size, max_num_batched_tokens)
        lo, hi = (mid, hi) if need <= num_blocks else (lo, mid - 1)
    return lo * layout.block_size


def _block_terms(layout: KvLayout) -> tuple[tuple[KvGroup, int, int], ...]:
    """The layout's groups as `blocks_per_request` reads them, each distinct (kind, window, block size,
    state blocks) once: (a group of them, its block size, how many groups): the bisection of
    `largest_context` sums each kind once a step instead of once a group (Gemma 3's sliding groups)."""
    counts: dict[tuple[str, int | None, int, int], list[Any]] = {}
    for group in layout.groups:
        bs = group.block_size or layout.block_size
        key = (group.kind, group.window, bs, group.state_blocks)
        if key in counts:
            counts[key][2] += 1
        else:
            counts[key] = [group, bs, 1]
    return tuple((group, bs, n) for group, bs, n in counts.values())


def _summed_blocks(
    terms: tuple[tuple[KvGroup, int, int], ...], context: int, max_num_batched_tokens: int
) -> int:
    """The blocks one request of `context` tokens reserves: over (group, its block size, how many such
    groups) terms (`blocks_per_request`: every group once; `_block_terms`: each distinct one)."""
    total = 0
    for group, bs, n in terms:
        if group.kind == "state":  # a recurrent layer's state (vLLM MambaSpec)
            blocks = group.state_blocks
        elif group.kind == "full" or group.window is None:
            blocks = -(-context // bs)
        elif group.kind == "sliding":
            blocks = -(-min(group.window - 1 + max_num_batched_tokens, context) // bs) + 1
        else:
            blocks = -(-min(group.window + max_num_batched_tokens, context) // bs)
        total += n * blocks
    return total
