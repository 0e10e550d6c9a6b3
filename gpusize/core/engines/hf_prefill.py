"""What plain transformers allocates for one `generate` call (pure): the tensors of the prefill forward
in the order the modeling code creates and drops them, layer by layer, then the first decode step, as
a `core.allocator.Trace` whose replay gives the allocated and the reserved peak.

Followed: transformers 5.17 (`models/llama/modeling_llama.py`, `integrations/sdpa_attention.py`,
`masking_utils.py`, `cache_utils.py`, `integrations/moe.py`), which every decoder family copies:

- the model keeps the embedding output and each layer's input alive for the whole layer (the loop
  variable), the layer keeps its residual and its normalized input (RMSNorm computes in fp32:
  upcast, square, normalize, cast back, scale);
- q/k/v projections, rotary embedding (q*cos + rotate_half(q)*sin: four q-sized results), the cache
  update (`torch.cat` copies K and V into the cache, `DynamicLayer.update`), attention, the output
  transpose (`.contiguous()`), o_proj, then the MLP: act(gate) * up, down;
- SDPA without a mask uses its flash kernel with `enable_gqa` (no K/V copies, head_dim <= 256);
  sliding-window and chunked layers whose context reaches the window get a boolean mask
  [q, kv] built once per layer type and kept for the forward; with a mask SDPA repeats K/V to all
  heads (`repeat_kv`) and converts the mask to an additive one in the model dtype
  (`at::where` over the expanded batch, padded to a multiple of 16 for the memory-efficient kernel);
- eager attention (gpt-oss, or `--attn-implementation eager`): an additive mask in the model dtype
  for every layer type, and per layer the scores in the model dtype, scaled, masked, an fp32
  softmax and its cast back (B x heads x q x kv x (2 + 2 + 4 + 2) at the worst moment);
- flash_attention_2: no mask, no copies;
- MoE layers run the grouped_mm experts (5.x default): the top-k dispatched copies of the tokens,
  gate/up and down outputs, each masked and weighted with a copy;
- sliding-window layers keep the whole prompt's K/V after prefill (the window is a view of it) until
  the first decode step (`DynamicSlidingWindowLayer`, transformers >= 4.56); before 4.56 they kept
  every token for good. The prefill peak is the same: every layer's full-prompt K/V is alive.
- `generate` computes the logits of the last position only (`logits_to_keep=1`) and copies them to
  fp32.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpusize.core.allocator import Trace
from gpusize.core.kvcache import expanded_kv_width
from gpusize.core.spec import KV_MIXERS, LayerSpec, ModelSpec
from gpusize.dataclass import dataclass

__all__ = [
    "EAGER_FAMILIES",
    "Prefill",
    "attention_implementation",
    "layer_kv_bytes",
    "prefill_trace",
]

#: Model types whose modeling code sets `_supports_sdpa = False` in transformers 5.17, so they run
#: eager attention unless flash attention is requested (gpt-oss: attention sinks).
EAGER_FAMILIES = frozenset({"gpt_oss", "deepseek_v4", "granite_swa", "granitemoe_swa", "mimo_v2_flash"})


def attention_implementation(spec: ModelSpec, requested: str | None) -> str:
    """What `from_pretrained` runs: the request, else sdpa, else eager for families without SDPA."""
    if requested:
        return requested
    return "eager" if spec.model_type in EAGER_FAMILIES else "sdpa"


@dataclass(frozen=True)
class Prefill:
    """One prefill of `batch` prompts of `tokens` tokens and the first decode step."""

    batch: int
    tokens: int
    act_bytes: float
    kv_bytes: float
    attn: str
    version: str
    #: Weight tensors in load order (bytes), from the engine's weight format.
    weights: tuple[int, ...]
    #: Quantized weights (bitsandbytes, GPTQ, ...): the bf16 copy of the largest linear that a kernel
    #: dequantizes for its matmul (bnb MatMul4Bit), 0 for 16-bit weights.
    dequant: int = 0


def layer_kv_bytes(spec: ModelSpec, layer: LayerSpec, tokens: int, kv_bytes: float) -> int:
    """K + V of one layer for `tokens` tokens of one sequence. transformers caches MLA's
    up-projected keys (nope + rope) and values per head, not the latent."""
    if layer.mixer not in KV_MIXERS:  # Falcon-H1's attention_mamba layers keep KV too
        return 0
    return int(tokens * expanded_kv_width(spec, layer) * kv_bytes)


def _q_width(spec: ModelSpec, layer: LayerSpec) -> int:
    if spec.mla:
        return layer.num_attention_heads * (spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim)
    return layer.num_attention_heads * spec.head_dim


def _masked(layer: LayerSpec, p: Prefill) -> bool:
    """Whether this layer's attention gets a materialized mask."""
    if p.attn == "flash_attention_2":
        return False
    return p.attn == "eager" or (layer.window is not None and p.tokens >= layer.window)


def _norm(t: Trace, n: int, width: int, act: float) -> int:
    """RMSNorm: fp32 upcast, its square, the normalized fp32, cast back, times the weight."""
    up = t.alloc(n * width * 4)
    t.temp(n * width * 4)
    normed = t.alloc(n * width * 4)
    t.free(up)
    cast = t.alloc(int(n * width * act))
    t.free(normed)
    out = t.alloc(int(n * width * act))
    t.free(cast)
    return out


def _rope(t: Trace, x: int, size: int) -> int:
    """q * cos + rotate_half(q) * sin: rotate_half concatenates a negated half."""
    a = t.alloc(size)
    neg = t.alloc(size // 2)
    rot = t.alloc(size)
    t.free(neg)
    b = t.alloc(size)
    t.free(rot)
    out = t.alloc(size)
    t.free(a)
    t.free(b)
    t.free(x)
    return out


def _attention(t: Trace, spec: ModelSpec, layer: LayerSpec, p: Prefill, hidden: int) -> tuple[int, int, int]:
    """The mixer of one layer; returns (cache K, cache V, o_proj output)."""
    n, act, h = p.batch * p.tokens, p.act_bytes, spec.hidden_size
    heads = layer.num_attention_heads
    q_size = int(n * _q_width(spec, layer) * act)
    kv = layer_kv_bytes(spec, layer, p.tokens, p.kv_bytes) * p.batch
    x = _norm(t, n, h, act)
    q, k, v = t.alloc(q_size), t.alloc(kv // 2), t.alloc(kv // 2)
    t.free(x)
    if spec.qk_norm != "none":
        q2 = _norm(t, n, _q_width(spec, layer), act)
        t.free(q)
        q = q2
    q, k = _rope(t, q, q_size), _rope(t, k, kv // 2)
    cache_k, cache_v = t.alloc(kv // 2), t.alloc(kv // 2)
    t.free(k)
    t.free(v)
    out_size = int(n * heads * (spec.mla.v_head_dim if spec.mla else spec.head_dim) * act)
    full_heads = heads * (spec.mla.v_head_dim if spec.mla else spec.head_dim)
    repeat = _masked(layer, p) or (spec.head_dim > 256 and p.attn == "sdpa")
    copies = [t.alloc(int(n * full_heads * act)) for _ in range(2)] if repeat else []
    if p.attn == "eager":
        scores = p.batch * heads * p.tokens * p.tokens
        s1 = t.alloc(int(scores * act))
        s2 = t.alloc(int(scores * act))
        t.free(s1)
        s3 = t.alloc(int(scores * act))
        t.free(s2)
        s4 = t.alloc(scores * 4)
        s5 = t.alloc(int(scores * act))
        t.free(s4)
        t.free(s3)
        out = t.alloc(out_size)
        t.free(s5)
    elif _masked(layer, p):
        # at::where(mask, 0, -inf) in the model dtype over the expanded batch; the memory-efficient
        # kernel needs the last dimension padded to 16 (a padded copy) when it is not.
        additive = t.alloc(int(p.batch * p.tokens * _aligned(p.tokens) * act))
        padded = t.alloc(int(p.batch * p.tokens * _aligned(p.tokens) * act)) if p.tokens % 16 else 0
        out = t.alloc(out_size)
        t.free(additive)
        t.free(padded)
    else:
        out = t.alloc(out_size)
        t.temp(p.batch * heads * p.tokens * 4)  # the kernel's fp32 log-sum-exp
    for c in copies:
        t.free(c)
    t.free(q)
    flat = t.alloc(out_size)
    t.free(out)
    o = t.alloc(int(n * h * act))
    t.free(flat)
    return cache_k, cache_v, o


def _ffn(t: Trace, spec: ModelSpec, layer: LayerSpec, p: Prefill) -> int:
    """MLP or MoE block after its norm; returns the output. The normed input stays alive (the
    decoder layer's variable) until the block returns."""
    n, act, h = p.batch * p.tokens, p.act_bytes, spec.hidden_size
    x = _norm(t, n, h, act)
    t.temp(p.dequant)
    if layer.ffn == "moe" and spec.moe:
        m = spec.moe
        slots = n * m.num_experts_per_tok
        t.temp(n * m.num_experts * 4)  # router softmax (fp32)
        sel = t.alloc(int(slots * h * act))
        up = t.alloc(int(slots * 2 * m.moe_intermediate_size * act))
        masked = t.alloc(int(slots * 2 * m.moe_intermediate_size * act))
        t.free(up)
        gated = t.alloc(int(slots * m.moe_intermediate_size * act))
        t.free(masked)
        down = t.alloc(int(slots * h * act))
        t.free(gated)
        steps = [down] + [t.alloc(int(slots * h * act)) for _ in range(3)]
        for s in steps[:-1]:
            t.free(s)
        out = t.alloc(int(n * h * act))
        t.free(steps[-1])
        t.free(sel)
        if m.shared_intermediate_size:
            t.free(_mlp(t, n, h, m.shared_intermediate_size, act))
    elif layer.ffn == "none":
        out = t.alloc(int(n * h * act))
    else:
        out = _mlp(t, n, h, layer.intermediate_size, act)
    t.free(x)
    return out


def _aligned(n: int) -> int:
    return -(-n // 16) * 16


def _mlp(t: Trace, n: int, h: int, width: int, act: float) -> int:
    """down(act(gate(x)) * up(x)): the gate output dies inside act()."""
    gate = t.alloc(int(n * width * act))
    a = t.alloc(int(n * width * act))
    t.free(gate)
    up = t.alloc(int(n * width * act))
    prod = t.alloc(int(n * width * act))
    t.free(a)
    t.free(up)
    out = t.alloc(int(n * h * act))
    t.free(prod)
    return out


def _masks(t: Trace, spec: ModelSpec, p: Prefill) -> Iterator[int]:
    """Masks built before the layers, one per layer type that needs one, kept for the forward."""
    seen: set[int | None] = set()
    for layer in spec.attention_layers:
        if _masked(layer, p) and layer.window not in seen:
            seen.add(layer.window)
            square = p.tokens * p.tokens
            if p.attn == "eager":  # torch.where(bool mask, 0, min) in the model dtype, whole batch
                mask = t.alloc(square)
                yield t.alloc(int(p.batch * square * p.act_bytes))
                t.free(mask)
            else:
                yield t.alloc(square)


def prefill_trace(spec: ModelSpec, p: Prefill, workspace: int) -> Trace:
    """Weights, the cuBLAS workspaces, the prefill forward and the first decode step."""
    t = Trace()
    for size in p.weights:
        t.alloc(size)
    t.alloc(workspace)
    n, h, act = p.batch * p.tokens, spec.hidden_size, p.act_bytes
    t.alloc(n * 8)  # input ids (int64)
    embeds = t.alloc(int(n * h * act))
    rope = [t.alloc(int(n * spec.head_dim * act)) for _ in range(2)]
    masks = list(_masks(t, spec, p))
    hidden, caches = embeds, []
    for layer in spec.layers:
        if layer.mixer in KV_MIXERS:
            k, v, o = _attention(t, spec, layer, p, hidden)
            caches.append((layer, k, v))
        else:
            x = _norm(t, n, h, act)
            o = t.alloc(int(n * h * act))
            t.free(x)
        mid = t.alloc(int(n * h * act))
        t.free(o)
        f = _ffn(t, spec, layer, p)
        out = t.alloc(int(n * h * act))
        t.free(f)
        t.free(mid)
        if hidden != embeds:
            t.free(hidden)
        hidden = out
    for m in masks + rope:
        t.free(m)
    t.free(embeds)
    last = _norm(t, n, h, act)
    t.free(hidden)
    logits = t.alloc(int(p.batch * spec.vocab_size * act))
    t.free(last)
    t.temp(p.batch * spec.vocab_size * 4)  # generate's fp32 copy of the last logits
    t.free(logits)
    _decode(t, spec, p, caches)
    return t


def _decode(t: Trace, spec: ModelSpec, p: Prefill, caches: list[tuple[LayerSpec, int, int]]) -> None:
    """First decode step: every layer's cache is re-made by `torch.cat` one token longer (sliding
    layers: window tokens, from transformers 5 / 4.56) while the old one is still alive."""
    for layer, k, v in caches:
        sliding = layer.window is not None and p.version == "5"
        length = min(p.tokens, layer.window - 1) + 1 if sliding and layer.window else p.tokens + 1
        size = layer_kv_bytes(spec, layer, length, p.kv_bytes) * p.batch // 2
        new_k = t.alloc(size)
        t.free(k)
        new_v = t.alloc(size)
        t.free(v)
        del new_k, new_v
