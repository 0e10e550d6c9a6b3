"""SGLang's own engine settings: memory share, scheduler, state pool, DP attention and speculative
decoding, under SGLang's flag names (pure)."""

from __future__ import annotations

from gpusize.core.settings.declaration import setting, settings_part

__all__ = [
    "SGLANG_EXPERT_PARALLEL",
    "SGLANG_MAMBA",
    "SGLANG_MULTIMODAL",
    "SGLANG_SPECULATIVE",
    "SGLANG_SWA",
    "SglangSettings",
]

#: SGLang's speculative decoding flags came with EAGLE (sgl-project/sglang#2150, merged 2025-01-02):
#: first in the 0.4.1.post4 wheel's server_args.py (absent in 0.4.1.post3; read with
#: bench/release_sources.py). Which algorithms a release takes: core/engines/sglang_speculative.py.
SGLANG_SPECULATIVE = "0.4.1.post4"
#: SGLang's state pool flags (--max-mamba-cache-size, --mamba-ssm-dtype from sgl-project/sglang#10258):
#: both first in the 0.5.2 wheel's server_args.py (absent in 0.5.1.post3).
SGLANG_MAMBA = "0.5.2"
#: SGLang's --enable-multimodal: first in the 0.4.6 wheel's server_args.py (absent in 0.4.5.post3;
#: bench/release_sources.py). The VLM fraction reduction it gates came later (0.4.9.post3,
#: core/engines/sglang_defaults.py).
SGLANG_MULTIMODAL = "0.4.6"
#: SGLang's --swa-full-tokens-ratio (the hybrid SWA pool, sgl-project/sglang#7367): first in the
#: 0.4.9.post3 wheel's server_args.py (absent in 0.4.9.post2; bench/release_sources.py).
SGLANG_SWA = "0.4.9.post3"
#: SGLang's --expert-parallel-size / --ep-size: first in the 0.4.1 wheel's server_args.py (absent in
#: 0.4.0). It enables expert parallel by itself from 0.4.10.post2, where --enable-ep-moe (which set
#: ep_size = tp_size) became "(Deprecated)" (0.5.3: "Please set `--ep-size` to the same value as
#: `--tp-size` instead"); gpusize sizes it from there (core/engines/sglang.py EXPERT_PARALLEL_SINCE).
SGLANG_EXPERT_PARALLEL = "0.4.1"


@settings_part
class SglangSettings:
    """SGLang's settings (fields of `EngineSettings`)."""

    mem_fraction_static: float | None = setting(
        default=None,
        flag="--mem-fraction-static",
        engines=("sglang",),
        help="static memory fraction (default from GPU and TP).",
        low=0,
        high=0.999,
    )
    chunked_prefill_size: int | None = setting(
        default=None,
        flag="--chunked-prefill-size",
        engines=("sglang",),
        help="tokens per prefill chunk (enters its reserve); -1: no chunking (SGLang's own meaning).",
        low=1,
        high=1 << 24,
        off=-1,
        launch="--chunked-prefill-size",
    )
    max_running_requests: int | None = setting(
        default=None,
        flag="--max-running-requests",
        engines=("sglang",),
        help="most requests running at once.",
        low=1,
        high=1 << 20,
        launch="--max-running-requests",
    )
    #: SGLang's hybrid SWA pool of sliding-window models (core/engines/sglang_swa.py).
    swa_full_tokens_ratio: float | None = setting(
        default=None,
        flag="--swa-full-tokens-ratio",
        engines=("sglang",),
        help="SWA-pool tokens per full-pool token of a sliding-window model's two KV pools (default 0.8).",
        low=0,
        high=1,
        launch="--swa-full-tokens-ratio",
        since=SGLANG_SWA,
    )
    #: SGLang's state pool of recurrent hybrids (core/engines/sglang_mamba.py).
    max_mamba_cache_size: int | None = setting(
        default=None,
        flag="--max-mamba-cache-size",
        engines=("sglang",),
        help="state slots of a recurrent hybrid's state pool (default: 0.9 / 1.9 of the memory left "
        "after the weights).",
        low=1,
        high=1 << 20,
        launch="--max-mamba-cache-size",
        since=SGLANG_MAMBA,
    )
    mamba_ssm_dtype: str | None = setting(
        default=None,
        flag="--mamba-ssm-dtype",
        engines=("sglang",),
        help="dtype of a recurrent hybrid's state (default float32, or the config's mamba_ssm_dtype).",
        choices=("float32", "bfloat16"),
        launch="--mamba-ssm-dtype",
        since=SGLANG_MAMBA,
    )
    #: SGLang `--enable-multimodal` (ServerArgs.enable_multimodal, None by default): SGLang serves
    #: Gemma 3 and Llama 4 checkpoints text-only unless it is given (configs/model_config.py
    #: mm_disabled_models), and only a model it serves as multimodal has its default
    #: mem_fraction_static lowered (core/engines/sglang_vlm.py; from 0.4.9.post3). Taken from the
    #: flag's first release (SGLANG_MULTIMODAL).
    enable_multimodal: bool = setting(
        default=False,
        flag="--enable-multimodal",
        engines=("sglang",),
        help="serve Gemma 3 / Llama 4 with their vision tower (SGLang serves them text-only by default).",
        launch="--enable-multimodal",
        since=SGLANG_MULTIMODAL,
    )
    #: SGLang data-parallel attention: attention (and the KV cache) split into dp_size groups of
    #: tp_size // dp_size GPUs, each serving its own requests; the MoE and MLP layers stay on all tp.
    enable_dp_attention: bool = setting(
        default=False,
        flag="--enable-dp-attention",
        engines=("sglang",),
        help="data-parallel attention (with --dp-size): each group of TP / DP GPUs attends to its own "
        "requests with its own KV pool; the MoE stays tensor parallel (DeepSeek, MLA models).",
        launch="--enable-dp-attention",
    )
    dp_size: int | None = setting(
        default=None,
        flag="--dp-size",
        engines=("sglang",),
        help="data-parallel attention groups (with --enable-dp-attention; must divide the TP size).",
        low=1,
        high=8,
        launch="--dp-size",
    )
    #: SGLang expert parallel (`--expert-parallel-size` / `--ep-size`; core/engines/sglang.py): whole
    #: experts, num_experts / ep a GPU, where tensor parallel slices each. Sized equal to the TP size.
    expert_parallel_size: int | None = setting(
        default=None,
        flag="--expert-parallel-size",
        engines=("sglang",),
        help="expert parallel (SGLang's --ep-size): 1, or the TP size (whole experts, num_experts / TP "
        "a GPU, as its MoE layer deals them).",
        low=1,
        high=8,
        launch="--ep-size",
        since=SGLANG_EXPERT_PARALLEL,
    )
    #: SGLang speculative decoding (core/speculative.py): the algorithm, its draft and its tree.
    speculative_algorithm: str | None = setting(
        default=None,
        flag="--speculative-algorithm",
        engines=("sglang",),
        help="EAGLE, EAGLE3, NEXTN (the model's MTP layers), STANDALONE (a draft model) or NGRAM.",
        launch="--speculative-algorithm",
        since=SGLANG_SPECULATIVE,
        upper=True,
    )
    speculative_draft_model_path: str | None = setting(
        default=None,
        flag="--speculative-draft-model-path",
        engines=("sglang",),
        help="the draft model (a catalog name, Hub id or local folder).",
        launch="--speculative-draft-model-path",
        since=SGLANG_SPECULATIVE,
    )
    speculative_num_steps: int | None = setting(
        default=None,
        flag="--speculative-num-steps",
        engines=("sglang",),
        help="draft steps per decode step.",
        low=1,
        high=64,
        launch="--speculative-num-steps",
        since=SGLANG_SPECULATIVE,
    )
    speculative_eagle_topk: int | None = setting(
        default=None,
        flag="--speculative-eagle-topk",
        engines=("sglang",),
        help="branches kept per draft step.",
        low=1,
        high=64,
        launch="--speculative-eagle-topk",
        since=SGLANG_SPECULATIVE,
    )
    speculative_num_draft_tokens: int | None = setting(
        default=None,
        flag="--speculative-num-draft-tokens",
        engines=("sglang",),
        help="draft tokens verified per step.",
        low=1,
        high=1024,
        launch="--speculative-num-draft-tokens",
        since=SGLANG_SPECULATIVE,
    )
