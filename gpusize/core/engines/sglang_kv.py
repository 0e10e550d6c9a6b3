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

SGLang's own KV dtype for DSA (`dsa_kv_default`, the engine's `model_kv_default`): with
--kv-cache-dtype auto it picks fp8_e4m3 on compute capability 10 and above and bfloat16 below it, read
in each modelled release: 0.5.3 and 0.5.4.post1 server_args.py `_handle_model_specific_adjustments`
(`if is_deepseek_nsa(hf_config)` ... `major >= 10: self.kv_cache_dtype = "fp8_e4m3"`, whatever was
asked: "for Blackwell, we support fp8 only currently"); from 0.5.4.post2 only for auto (`if
self.kv_cache_dtype == "auto": ... "fp8_e4m3" if major >= 10 else "bfloat16"`, 0.5.10
`_set_default_nsa_kv_cache_dtype`, 0.5.14 `_set_default_dsa_kv_cache_dtype`, from 0.5.16
arg_groups/overrides.py `_dsa_kv_cache_dtype_default`). The models: `is_deepseek_nsa` /
`is_deepseek_dsa` (an `index_topk` in the config; DeepSeek-V3.2 is loaded as DeepseekV3ForCausalLM
by hf_transformers_utils.py `_load_deepseek_v32_model`, GLM-5 as GlmMoeDsaForCausalLM), i.e. every
model whose MLA has an indexer here. The capability is torch's: ROCm reports gfx942/gfx950 as 9.x, so
AMD keeps bfloat16; gpusize's bf16 is the same 2 bytes. Not modelled: 0.5.20's bfloat16 for a DSA
model with `learnable_sink` (none of the DSA families gpusize parses has one).
The cell here is the sum over every layer; a sliding-window model that SGLang splits into a full and
an SWA pool (Gemma 4, gpt-oss, MiMo-V2-Flash, Llama-4) is divided by core/engines/sglang_swa.py.
"""

from __future__ import annotations

from gpusize.core import kvcache
from gpusize.core.engines.sglang_defaults import release_version
from gpusize.core.gpu import GpuSpec
from gpusize.core.kinds import mixer_kind, mla_indexer
from gpusize.core.releases import Version
from gpusize.core.spec import ModelSpec
from gpusize.core.workload import Workload

__all__ = [
    "DSA_FP8_AUTO_ONLY_FROM",
    "DSA_FP8_DEFAULT_FROM",
    "DSA_FP8_MIN_MAJOR",
    "DSA_RAW_FP8_FROM",
    "GLM_SM12_SCALED_FROM",
    "TRTLLM_DSA_MIN_MAJOR",
    "dsa_forced_fp8",
    "dsa_kv_default",
    "dsa_kv_note",
    "sglang_kv_bytes_per_token",
]

#: The first modelled release whose fp8 DSA default on compute capability >= 10 is TRT-LLM's raw row
#: (server_args.py 0.5.10: `nsa_prefill_backend = "trtllm"`; model_runner_kv_cache_mixin.py returns
#: kv_lora_rank + qk_rope_head_dim "when using trtllm MLA backend").
DSA_RAW_FP8_FROM = "0.5.10"
#: Compute capability major from which the fp8 DSA default is TRT-LLM (`major >= 10`).
TRTLLM_DSA_MIN_MAJOR = 10
#: GLM-5 in fp8 on compute capability 12 defaults to flashinfer_sparse_mla (the scaled row) from this
#: release (arg_groups/overrides.py `is_glm_sm12_fp8`; absent from 0.5.14's server_args.py).
GLM_SM12_SCALED_FROM = "0.5.20"
#: The first modelled release with SGLang's DSA KV dtype rule, the first that serves DeepSeek-V3.2
#: (server_args.py 0.5.3: `major >= 10: self.kv_cache_dtype = "fp8_e4m3"`, whatever was asked).
DSA_FP8_DEFAULT_FROM = "0.5.3"
#: From this release the rule applies to `auto` only; an explicit bf16 stays bf16 (server_args.py
#: 0.5.4.post2: `if self.kv_cache_dtype == "auto": ... "fp8_e4m3" if major >= 10 else "bfloat16"`;
#: absent from the 0.5.4.post1 wheel).
DSA_FP8_AUTO_ONLY_FROM = "0.5.4.post2"
#: Compute capability major (torch.cuda.get_device_capability) from which DSA defaults to fp8_e4m3.
DSA_FP8_MIN_MAJOR = 10
#: GLM-5's model_type (GlmMoeDsaForCausalLM, the architecture `is_glm_sm12_fp8` names).
_GLM_DSA = "glm_moe_dsa"


def _dsa(spec: ModelSpec) -> bool:
    """A DeepSeek Sparse Attention model (`is_deepseek_nsa`: the config's index_topk; here the MLA's
    indexer)."""
    return spec.mla is not None and spec.mla.indexer is not None


def _fp8_device(gpu: GpuSpec) -> bool:
    """A GPU torch reports at compute capability DSA_FP8_MIN_MAJOR or above (NVIDIA Blackwell on)."""
    if gpu.vendor != "NVIDIA" or gpu.compute_capability is None:
        return False
    return int(gpu.compute_capability.partition(".")[0]) >= DSA_FP8_MIN_MAJOR


def dsa_kv_default(spec: ModelSpec, version: Version, gpu: GpuSpec | None) -> str | None:
    """The KV dtype SGLang's `auto` means for `spec` in `version` on `gpu`: fp8 (fp8_e4m3) for a DSA
    model on compute capability 10 and above from DSA_FP8_DEFAULT_FROM; None elsewhere, and before a
    GPU is chosen (the model dtype, bfloat16 for every DSA checkpoint)."""
    if gpu is None or not _dsa(spec) or version < release_version(DSA_FP8_DEFAULT_FROM):
        return None
    return "fp8" if _fp8_device(gpu) else None


def dsa_forced_fp8(spec: ModelSpec, gpu: GpuSpec, work: Workload) -> str | None:
    """Why SGLang does not run the KV dtype asked, or None: 0.5.3 and 0.5.4.post1 set fp8_e4m3 for a
    DSA model on compute capability 10 and above whatever --kv-cache-dtype says."""
    v = work.release.version
    if work.kv_cache_dtype == "fp8" or not _dsa(spec) or not _fp8_device(gpu):
        return None
    if not release_version(DSA_FP8_DEFAULT_FROM) <= v < release_version(DSA_FP8_AUTO_ONLY_FROM):
        return None
    return (
        f"SGLang {v} runs DeepSeek Sparse Attention in an fp8_e4m3 KV cache on compute capability "
        f"{DSA_FP8_MIN_MAJOR} and above whatever --kv-cache-dtype says (server_args.py): drop --kv-dtype "
        f"{work.kv_cache_dtype}, or pass --engine-version {DSA_FP8_AUTO_ONLY_FROM} or later"
    )


def dsa_kv_note(spec: ModelSpec, work: Workload) -> str | None:
    """The assumptions' line on SGLang's DSA KV dtype when --kv-dtype is auto: which it chose, and why."""
    if work.requested_kv_dtype != "auto" or not _dsa(spec):
        return None
    if work.release.version < release_version(DSA_FP8_DEFAULT_FROM):
        return None
    return (
        f"KV {work.kv_cache_dtype}: SGLang's --kv-cache-dtype auto for DeepSeek Sparse Attention is "
        f"fp8_e4m3 on compute capability {DSA_FP8_MIN_MAJOR} and above (Blackwell), bfloat16 below "
        "(server_args.py; arg_groups/overrides.py `_dsa_kv_cache_dtype_default` from 0.5.16)"
    )


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
