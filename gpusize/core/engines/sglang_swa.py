"""SGLang's hybrid SWA pool (pure): a sliding-window model's KV memory split between a full-attention
token pool and a smaller sliding-window token pool, `swa_full_tokens_ratio` of it.

Which models, read in the wheels on PyPI with bench/release_sources.py (`SWA_RELEASES`):
- 0.4.9.post3 to 0.5.6 (model_runner.py "Check if the model is using hybrid SWA"): a model whose
  class has `get_attention_sliding_window_size` and is not Llama-4 nor turned off in server_args.py:
  Gemma 2 until 0.4.10.post2 ("FIXME: https://github.com/sgl-project/sglang/pull/7367 is not
  compatible with gemma2 model"), Gemma 3 until the 0.5.0rc0 pre-release (Gemma2/3/3n listed there;
  0.5.1 the first final release), gpt-oss turned off from its first release (0.5.0rc0) to 0.5.6;
- 0.5.7 (configs/model_config.py `is_hybrid_model`): MiMo-V2-Flash only;
- from 0.5.8 (`is_hybrid_swa_model`): Llama-4 (its chunked layers are the SWA layers, `(i + 1) % 4
  != 0`), gpt-oss (in 0.5.8 and 0.5.9 not with trtllm_mha, its default on compute capability 10, nor
  with speculative decoding), MiMo-V2-Flash, and Gemma 4 from 0.5.11 (`layer_types`
  "sliding_attention"); Gemma 2 and 3 stay off (arg_groups/model_overrides/gemma2_gemma3.py in
  0.5.23). Step-3.7's SWA architecture is Step3p7ForConditionalGeneration; the checkpoint gpusize
  reads names Step3p7FlashForCausalLM, so it stays in one pool here.

How the bytes are split (the per-token bytes of each layer group: F x n_full over the full-attention
layers, S x n_swa over the sliding ones, each layer's KV heads over attention TP and its own head
sizes, `get_swa_num_kv_heads`, `swa_head_dim`; r = --swa-full-tokens-ratio, default 0.8):
- before 0.5.10 (model_runner.py `set_num_token_hybrid` from 0.4.9.post3,
  model_runner_kv_cache_mixin.py `set_num_tokens_hybrid_swa` from 0.5.7): the profiled tokens of the
  one-shape cell (every layer sized as a full one, F x L) times L, over r x n_swa + n_full:
  full = int(pool // (F x L) x L / (r x n_swa + n_full));
- 0.5.10 (`_resolve_hybrid_swa_tokens`): full = int(pool // (F n_full + S n_swa) x (F n_full +
  S n_swa) / (F n_full + r S n_swa));
- from 0.5.11 (model_executor/pool_configurator.py `HybridSWAPoolConfigurator`, the same in
  0.5.14 and 0.5.23): cell = F n_full + r x S n_swa, full = int(pool // cell);
- every release: the SWA pool holds int(full x r) tokens (page-aligned; one-token pages here).

A sequence takes its whole context in the full pool and its window in the SWA pool (SGLang frees
the tokens that slide out of the window, `SWATokenToKVPoolAllocator`). Any other model, or release,
keeps every layer in one pool for the whole context. Not modelled: `SWARequestCapPoolConfigurator`
(0.5.23, --max-running-requests with the radix cache off), the unified memory pool, hierarchical
cache (which turns the SWA pool off for MiMo-V2-Flash), and the draft model's SWA rows (a plan with
a draft in the cell stays in one pool).
"""

from __future__ import annotations

from gpusize.core.engines.sglang_defaults import release_version
from gpusize.core.gpu import GpuSpec
from gpusize.core.kvcache import kv_bytes_per_token_per_layer
from gpusize.core.releases import Version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload
from gpusize.dataclass import dataclass

__all__ = [
    "GPT_OSS_SWA_EVERYWHERE_FROM",
    "PER_GROUP_FROM",
    "POOL_CONFIGURATOR_FROM",
    "SWA_RELEASES",
    "SWA_FULL_TOKENS_RATIO",
    "SwaPool",
    "swa_pool",
]

#: --swa-full-tokens-ratio's default (server_args.py `swa_full_tokens_ratio: float = 0.8` from
#: 0.4.9.post3; arg_groups/fields/schedule.py `fallback=0.8` in 0.5.23).
SWA_FULL_TOKENS_RATIO = 0.8
#: The split by each layer group's own bytes (model_runner_kv_cache_mixin.py
#: `_resolve_hybrid_swa_tokens`): first in 0.5.10 (absent in 0.5.9).
PER_GROUP_FROM = "0.5.10"
#: model_executor/pool_configurator.py `HybridSWAPoolConfigurator`: first in the 0.5.11 wheel
#: (absent in 0.5.10.post1).
POOL_CONFIGURATOR_FROM = "0.5.11"
#: gpt-oss keeps its SWA pool with trtllm_mha and with speculative decoding from this release (the
#: server_args.py rule that turned it off is in 0.5.9, not in 0.5.10).
GPT_OSS_SWA_EVERYWHERE_FROM = "0.5.10"
#: Architecture -> the releases SGLang gives it an SWA pool, [first, until) (until None: still).
#: gpt-oss stays listed in 0.5.20 and 0.5.23 through SWA_SINK_ARCHS, MiMo-V2-Flash through
#: MIMO_V2_MODEL_ARCHS.
SWA_RELEASES: dict[str, tuple[str, str | None]] = {
    "Gemma2ForCausalLM": ("0.4.9.post3", "0.4.10.post2"),
    "Gemma3ForCausalLM": ("0.4.9.post3", "0.5.1"),
    "Gemma3ForConditionalGeneration": ("0.4.9.post3", "0.5.1"),
    "MiMoV2FlashForCausalLM": ("0.5.7", None),
    "Llama4ForConditionalGeneration": ("0.5.8", None),
    "GptOssForCausalLM": ("0.5.8", None),
    "Gemma4ForCausalLM": ("0.5.11", None),
    "Gemma4ForConditionalGeneration": ("0.5.11", None),
}


@dataclass(frozen=True)
class SwaPool:
    """One GPU's share of SGLang's two pools for one model: bytes per token of each layer group."""

    #: F x n_full: one token in every full-attention layer.
    full_bytes: int
    #: S x n_swa: one token in every sliding-window layer.
    swa_bytes: int
    #: F x L: SGLang's one-shape cell (every layer sized as a full one), 0.5.8 and 0.5.9.
    one_shape_bytes: int
    n_full: int
    n_swa: int
    #: The sliding window (Llama-4: the attention chunk) in tokens.
    window: int
    ratio: float

    def tokens(self, pool: int, version: Version) -> tuple[int, int]:
        """(full-pool tokens, SWA-pool tokens) of a pool of `pool` bytes in that release."""
        if pool <= 0:
            return 0, 0
        r = self.ratio
        denominator = self.full_bytes + r * self.swa_bytes
        if version >= release_version(POOL_CONFIGURATOR_FROM):
            full = int(pool // denominator)
        elif version >= release_version(PER_GROUP_FROM):
            both = self.full_bytes + self.swa_bytes
            full = int(pool // both * both / denominator)
        else:
            layers = self.n_full + self.n_swa
            full = int(pool // self.one_shape_bytes * layers / (r * self.n_swa + self.n_full))
        return full, int(full * r)

    def sequences(self, full_tokens: int, swa_tokens: int, context: int) -> float:
        """How many sequences of `context` tokens the two pools hold: the full pool takes the context,
        the SWA pool the window (or the context, when shorter)."""
        local = min(context, self.window)
        return min(full_tokens / context, swa_tokens / local)

    def bytes_for(self, sequences: int, context: int) -> int:
        """The pool bytes `sequences` of `context` tokens take: each full-pool token costs F + r x S
        (its share of the SWA pool with it), and a sequence takes `context` of them, or local / r when
        its window fills the SWA pool first."""
        local = min(context, self.window)
        return int(
            sequences * max(context, local / self.ratio) * (self.full_bytes + self.ratio * self.swa_bytes)
        )

    def longest_context(self, full_tokens: int, swa_tokens: int, sequences: int) -> int:
        """The longest context each of `sequences` can reach: the full pool's share, unless the SWA
        pool cannot hold every window (then the context stays below the window)."""
        if swa_tokens >= sequences * self.window:
            return full_tokens // sequences
        return min(full_tokens, swa_tokens) // sequences


def _gpt_oss_kept_whole(spec: ModelSpec, gpu: GpuSpec | None, work: Workload) -> bool:
    """0.5.8 and 0.5.9 server_args.py turn gpt-oss's SWA pool off with the trtllm_mha backend, its
    default on compute capability 10 (`is_sm100_supported`), and with speculative decoding ("TODO:
    support swa kv indices translation for trtllm_mha"; absent from 0.5.10)."""
    if spec.architecture != "GptOssForCausalLM" or work.release.version >= release_version(
        GPT_OSS_SWA_EVERYWHERE_FROM
    ):
        return False
    sm100 = (
        gpu is not None
        and gpu.vendor == "NVIDIA"
        and (gpu.compute_capability or "").partition(".")[0] == "10"
    )
    return sm100 or work.engine.speculative_algorithm is not None


def swa_pool(spec: ModelSpec, gpu: GpuSpec | None, work: Workload, tp: int) -> SwaPool | None:
    """SGLang's two pools for this model in the release modelled on `gpu` (None: any), or None: one
    pool, every layer kept for the whole context (a model not in SWA_RELEASES, a release outside
    its entry, or a setting that turns the SWA pool off)."""
    releases = SWA_RELEASES.get(spec.architecture or "")
    if releases is None or _gpt_oss_kept_whole(spec, gpu, work):
        return None
    first, until = releases
    v = work.release.version
    if v < release_version(first) or (until is not None and v >= release_version(until)):
        return None
    full = swa = n_full = n_swa = one = 0
    window = 0
    for layer, n in spec.attention_layer_counts:
        row = kv_bytes_per_token_per_layer(spec, work.kv_bytes, tp, layer.num_key_value_heads, layer)
        if layer.window is None:
            full, n_full, one = full + row * n, n_full + n, row
        else:
            swa, n_swa, window = swa + row * n, n_swa + n, max(window, layer.window)
    if not n_swa or not n_full:
        return None
    ratio = work.engine.swa_full_tokens_ratio or SWA_FULL_TOKENS_RATIO
    return SwaPool(full, swa, one * (n_full + n_swa), n_full, n_swa, window, ratio)
