"""SGLang's KV bytes per token on one GPU (pure): the cell `profile_max_num_token` divides the pool by
(sglang/srt/model_executor/pool_configurator.py `DefaultPoolConfigurator._compute_cell_size` in
0.5.23), where it differs from vLLM's.

One difference so far, DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) in an fp8 KV cache: the latent
row is `calculate_mla_kv_cache_dim` elements of one byte (mem_cache/kv_cache_configurator.py, 0.5.23;
model_executor/model_runner_kv_cache_mixin.py in 0.5.10 and 0.5.14). With the TRT-LLM DSA kernels, the
default for fp8 on compute capability 10 and above from 0.5.10 (server_args.py 0.5.10 and 0.5.14
`_set_default_dsa_backends`: "fp8_e4m3 ... major >= 10 ... trtllm"; 0.5.23 arg_groups/overrides.py
`_dsa_split_backend_resolution`), and with the ROCm kernels (tilelang, triton, aiter), SGLang stores
the raw row, kv_lora_rank + qk_rope_head_dim = 576 fp8 bytes; with FlashMLA (Hopper's fp8 default,
flashmla_kv) and FlashInfer's sparse MLA (GLM-5 in fp8 on compute capability 12 from 0.5.20:
`is_glm_sm12_fp8`, absent in 0.5.14) it stores vLLM's scaled row, 512 + 512 // 128 x 4 + 64 x 2 =
656 B (`core.kinds.mla_indexer.latent_bytes`). The indexer key is 132 uint8 per layer either way
(`_compute_dsa_indexer_cell_size`: index_head_dim + index_head_dim // 128 x 4).

Not modelled: SGLang's own default KV dtype for DSA, fp8_e4m3 on compute capability 10 and above
when --kv-cache-dtype is auto (`_dsa_kv_cache_dtype_default`); gpusize's auto is the model dtype,
so on a Blackwell GPU pass --kv-dtype fp8 to get what SGLang allocates.
Nor SGLang's split of a sliding-window model's pool (Gemma 4: `HybridSWAPoolConfigurator`, full tokens =
available // (full bytes + swa_full_tokens_ratio x sliding bytes), the sliding pool that ratio of it):
the cell here is the sum of both, every layer kept for the whole context.
"""

from __future__ import annotations

from gpusize.core import kvcache
from gpusize.core.engines.sglang_defaults import release_version
from gpusize.core.gpu import GpuSpec
from gpusize.core.kinds import mixer_kind, mla_indexer
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = ["DSA_RAW_FP8_FROM", "GLM_SM12_SCALED_FROM", "TRTLLM_DSA_MIN_MAJOR", "sglang_kv_bytes_per_token"]

#: The first modelled release whose fp8 DSA default on compute capability >= 10 is TRT-LLM's raw row
#: (server_args.py 0.5.10: `nsa_prefill_backend = "trtllm"`; model_runner_kv_cache_mixin.py returns
#: kv_lora_rank + qk_rope_head_dim "when using trtllm MLA backend").
DSA_RAW_FP8_FROM = "0.5.10"
#: Compute capability major from which the fp8 DSA default is TRT-LLM (`major >= 10`).
TRTLLM_DSA_MIN_MAJOR = 10
#: GLM-5 in fp8 on compute capability 12 defaults to flashinfer_sparse_mla (the scaled row) from this
#: release (arg_groups/overrides.py `is_glm_sm12_fp8`; absent from 0.5.14's server_args.py).
GLM_SM12_SCALED_FROM = "0.5.20"
#: GLM-5's model_type (GlmMoeDsaForCausalLM, the architecture `is_glm_sm12_fp8` names).
_GLM_DSA = "glm_moe_dsa"


def _raw_fp8_row(spec: ModelSpec, gpu: GpuSpec, work: Workload) -> bool:
    """True where SGLang keeps the DSA latent as the raw 576-byte fp8 row (TRT-LLM or ROCm kernels)."""
    if work.kv_bytes != 1 or spec.mla is None or spec.mla.indexer is None:
        return False
    v = work.release.version
    if v < release_version(DSA_RAW_FP8_FROM):
        return False
    if gpu.vendor == "AMD":
        return True
    if gpu.vendor != "NVIDIA" or gpu.compute_capability is None:
        return False
    major = int(gpu.compute_capability.partition(".")[0])
    if major == 12 and spec.model_type == _GLM_DSA and v >= release_version(GLM_SM12_SCALED_FROM):
        return False
    return major >= TRTLLM_DSA_MIN_MAJOR


def sglang_kv_bytes_per_token(spec: ModelSpec, gpu: GpuSpec, work: Workload, tp: int) -> int:
    """Bytes one token takes in SGLang's KV pool on one GPU of attention TP size `tp`."""
    cell = kvcache.kv_cache_bytes_per_token(spec, work.kv_bytes, tp)
    if not _raw_fp8_row(spec, gpu, work):
        return cell
    assert spec.mla is not None
    scaled = mla_indexer.latent_bytes(spec, 1.0)
    raw = spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim
    dsa_layers = sum(
        n for layer, n in spec.attention_layer_counts if mixer_kind(spec, layer) is mla_indexer.KIND
    )
    return cell - dsa_layers * (scaled - raw)
