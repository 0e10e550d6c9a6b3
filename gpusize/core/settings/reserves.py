"""Settings for memory the engine reserves beside the weights and the KV cache (pure): CPU offload,
LoRA adapter slots, multimodal item limits and vLLM's speculative decoding (core/reserves.py)."""

from __future__ import annotations

from gpusize.core.registry import EngineName
from gpusize.core.settings.declaration import setting, settings_part

__all__ = ["LORA_DTYPES", "MM_ENCODER_TP_MODES", "PAGED", "ReserveSettings"]

#: The paged engines, which share the offload and LoRA flags.
PAGED: tuple[EngineName, ...] = ("vllm", "sglang")
#: vLLM `--lora-dtype` (vllm/config/lora.py LoRADType; auto: the model's dtype).
LORA_DTYPES = ("auto", "float16", "bfloat16")
#: vLLM's MMEncoderTPMode (vllm/config/multimodal.py): Literal["weights", "data"].
MM_ENCODER_TP_MODES = ("weights", "data")


@settings_part
class ReserveSettings:
    """Offload, LoRA, multimodal and vLLM speculative settings (fields of `EngineSettings`)."""

    #: vLLM and SGLang keep this many GiB of each GPU's weights in pinned CPU memory, read over PCIe
    #: every step (the same rule in both: maybe_offload_to_cpu over the decoder layers).
    cpu_offload_gb: float | None = setting(
        default=None,
        flag="--cpu-offload-gb",
        engines=PAGED,
        help="GiB of weights per GPU kept in CPU memory (whole layers; read over PCIe every step).",
        low=0,
        high=1 << 16,
        launch="--cpu-offload-gb",
    )
    #: LoRA serving (core/engines/vllm/lora.py, core/engines/sglang_lora.py): adapter slots on the GPU.
    enable_lora: bool = setting(
        default=False,
        flag="--enable-lora",
        engines=("vllm", "sglang"),
        help="serve LoRA adapters (SGLang before 0.4.9.post3: give --lora-paths).",
        launch="--enable-lora",
        launch_since=(("sglang", "0.4.9.post3"),),
    )
    max_loras: int | None = setting(
        default=None,
        flag="--max-loras",
        engines=("vllm",),
        help="LoRA adapters in one batch: GPU slots (default 1).",
        low=1,
        high=4096,
        launch="--max-loras",
    )
    max_lora_rank: int | None = setting(
        default=None,
        flag="--max-lora-rank",
        engines=("vllm", "sglang"),
        help="largest LoRA rank served (vLLM default 16; SGLang: the adapters' largest).",
        low=1,
        high=4096,
        launch="--max-lora-rank",
        launch_since=(("sglang", "0.4.9.post3"),),
    )
    max_cpu_loras: int | None = setting(
        default=None,
        flag="--max-cpu-loras",
        engines=("vllm",),
        help="LoRA adapters cached in CPU memory (default --max-loras).",
        low=1,
        high=1 << 16,
        launch="--max-cpu-loras",
    )
    lora_dtype: str | None = setting(
        default=None,
        flag="--lora-dtype",
        engines=("vllm",),
        help="dtype of the LoRA slots: auto (the model's), float16 or bfloat16.",
        choices=LORA_DTYPES,
        launch="--lora-dtype",
    )
    lora_paths: str | None = setting(
        default=None,
        flag="--lora-paths",
        engines=("sglang",),
        help="LoRA adapters loaded at start (NAME=PATH or PATH, space-separated).",
        launch="--lora-paths",
        many=True,
    )
    max_loras_per_batch: int | None = setting(
        default=None,
        flag="--max-loras-per-batch",
        engines=("sglang",),
        help="LoRA adapters in one batch: GPU slots (default 8).",
        low=1,
        high=4096,
        launch="--max-loras-per-batch",
    )
    #: vLLM: most items of each modality per prompt, as vLLM takes it (JSON '{"image":0,"video":0}', or
    #: 'image=0,video=0' as older releases wrote it); parsed by `engines.vllm.multimodal`. Every
    #: modality at 0 serves a multimodal checkpoint text-only: no encoder profile.
    limit_mm_per_prompt: str | None = setting(
        default=None,
        flag="--limit-mm-per-prompt",
        engines=("vllm",),
        help='items per prompt per modality, e.g. \'{"image":0,"video":0}\' (0 of each: text-only).',
        launch="--limit-mm-per-prompt",
    )
    #: vLLM `--language-model-only` (vllm/config/multimodal.py MultiModalConfig.language_model_only,
    #: first in the 0.17.0 wheel's arg_utils.py; absent in 0.16.0): every modality's limit is 0, as
    #: `--limit-mm-per-prompt` with 0 of each (get_limit_per_prompt).
    language_model_only: bool = setting(
        default=False,
        flag="--language-model-only",
        engines=("vllm",),
        help="serve a multimodal checkpoint text-only (every modality limited to 0 items).",
        launch="--language-model-only",
        since="0.17.0",
    )
    #: vLLM `--mm-encoder-tp-mode` (MultiModalConfig.mm_encoder_tp_mode, "weights" by default; first in
    #: the 0.10.2 wheel's arg_utils.py, absent in 0.10.1.1; its effect read in 0.12.0 and 0.19.0): "data"
    #: keeps the whole vision tower on every tensor-parallel rank and splits the items instead, for the
    #: towers that support it (engines.vllm.multimodal.DATA_PARALLEL_TOWERS; vLLM falls back to
    #: "weights" for others).
    mm_encoder_tp_mode: str | None = setting(
        default=None,
        flag="--mm-encoder-tp-mode",
        engines=("vllm",),
        help="the vision tower across tensor-parallel ranks: weights (split, the default) or data "
        "(whole on each rank, the images split).",
        choices=MM_ENCODER_TP_MODES,
        launch="--mm-encoder-tp-mode",
        since="0.10.2",
    )
    #: vLLM `--speculative-config` JSON (method, model, num_speculative_tokens, ...), parsed and checked
    #: by core/speculative.py.
    speculative_config: str | None = setting(
        default=None,
        flag="--speculative-config",
        engines=("vllm",),
        help='speculative decoding as JSON, e.g. \'{"method":"eagle3","model":"DRAFT",'
        '"num_speculative_tokens":3}\' (eagle, eagle3, draft_model, mtp, ngram).',
        launch="--speculative-config",
        since="0.8.2",  # the first vLLM wheel whose arg_utils.py declares it
    )
