"""Speculative decoding (pure): the method asked for under each engine's own flags, the draft's
weights and KV cache, and the expected tokens per verification step.

vLLM takes one JSON value, `--speculative-config` (vllm/config/speculative.py SpeculativeConfig:
method, model, num_speculative_tokens, draft_tensor_parallel_size); SGLang takes separate flags
(python/sglang/srt/server_args.py: --speculative-algorithm, --speculative-draft-model-path,
--speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens). Both parse into
one `Speculation`; each engine sizes it its own way (core/engines/vllm/speculative.py,
core/engines/sglang_speculative.py). A draft model's config is read by the command line (sources are
I/O) and reaches the core parsed, as a `DraftModel` in the workload.

Methods: eagle (EAGLE-1 head: decoder layer(s) + fc 2h -> h, embeddings and lm_head taken from the
target), eagle3 (EAGLE-3 head: fc 3h -> h, a first layer whose q/k/v read 2h, its own lm_head of
draft_vocab_size rows; embeddings from the target), draft_model (a whole smaller model, nothing
shared), mtp (the checkpoint's own MTP layers, `--mtp`), ngram (prompt lookup: no weights, no KV).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from gpusize.core.params import layer_params
from gpusize.core.settings import EngineSettings
from gpusize.core.spec import ModelSpec
from gpusize.core.weights import WeightFormat, activation_dtype, weight_format, weights_bytes
from gpusize.errors import InputError

__all__ = [
    "METHODS",
    "DraftModel",
    "Speculation",
    "draft_format",
    "draft_reference",
    "draft_weights_bytes",
    "expected_tokens_per_step",
    "mtp_weights_bytes",
    "speculation",
]

#: The methods gpusize sizes, as vLLM names them.
METHODS = ("eagle", "eagle3", "draft_model", "mtp", "ngram")
#: vLLM's other spellings of those methods (SpeculativeConfig.method; "draft" as the docs write it,
#: the per-family MTP names vLLM maps to its MTP proposer).
_VLLM_ALIASES = {
    "draft": "draft_model",
    "deepseek_mtp": "mtp",
    "ernie_mtp": "mtp",
    "qwen3_next_mtp": "mtp",
    "glm4_moe_mtp": "mtp",
    "mimo_mtp": "mtp",
    "longcat_flash_mtp": "mtp",
    "pangu_ultra_moe_mtp": "mtp",
}
#: SGLang's --speculative-algorithm values and the method each is (NEXTN drafts with the checkpoint's
#: MTP layers; STANDALONE with a whole draft model).
_SGLANG_ALGORITHMS = {
    "EAGLE": "eagle",
    "EAGLE3": "eagle3",
    "NEXTN": "mtp",
    "STANDALONE": "draft_model",
    "NGRAM": "ngram",
}
#: Methods whose draft is another checkpoint (its config must be read).
_NEEDS_DRAFT = ("eagle", "eagle3", "draft_model")
#: Most speculative tokens gpusize accepts (vLLM has no bound; EAGLE papers use 1-8).
MAX_SPECULATIVE_TOKENS = 64
#: SGLang's choice of (num_steps, eagle_topk, num_draft_tokens) when none is given
#: (server_args.py auto_choose_speculative_params): (3, 1, 4) for DeepSeek-style MLA models,
#: (5, 4, 8) for Llama and every other architecture.
SGLANG_TREE_MLA = (3, 1, 4)
SGLANG_TREE_DEFAULT = (5, 4, 8)


class DraftModel(NamedTuple):  # a NamedTuple for start-up (core/settings.Setting)
    """A draft model as the command line resolved it: its reference, its parsed config, and the rows
    of its own lm_head (EAGLE-3's draft_vocab_size, else the vocabulary)."""

    reference: str
    spec: ModelSpec
    lm_head_rows: int


class Speculation(NamedTuple):  # a NamedTuple for start-up (core/settings.Setting)
    """Speculative decoding as asked: `method` (one of METHODS), the draft's reference (None: the
    target itself or no draft), `tokens` proposed per step, the draft's tensor-parallel size (None:
    the target's), the flag messages name, and SGLang's tree (steps, top-k, draft tokens; 0 in vLLM)."""

    method: str
    draft: str | None
    tokens: int
    draft_tp: int | None
    flag: str
    steps: int = 0
    topk: int = 0
    draft_tokens: int = 0

    @property
    def needs_draft(self) -> bool:
        return self.method in _NEEDS_DRAFT


def speculation(settings: EngineSettings, spec: ModelSpec | None) -> Speculation | None:
    """The speculative decoding `settings` ask for (None: none); InputError, one line naming the
    flag, on a value the engine would refuse."""
    if settings.speculative_config is not None:
        return _vllm(settings.speculative_config, spec)
    return _sglang(settings, spec)


def draft_reference(settings: EngineSettings) -> str | None:
    """The draft model `settings` name, for the command line to read (None: no draft to read);
    InputError as `speculation` on a value the engine refuses."""
    found = speculation(settings, None)
    return found.draft if found is not None else None


def _vllm(text: str, spec: ModelSpec | None) -> Speculation:
    flag = "--speculative-config"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{flag}: not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise InputError(
            f'{flag}: give a JSON object, e.g. {{"method": "ngram", "num_speculative_tokens": 3}}'
        )
    model = value.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise InputError(f"{flag}: model must be a model name, Hub id or folder")
    method = _vllm_method(value.get("method"), model, flag)
    tokens = _count(value.get("num_speculative_tokens"), "num_speculative_tokens", flag)
    if tokens is None:
        if method != "mtp":
            raise InputError(f"{flag}: num_speculative_tokens is required for method {method}")
        tokens = max(spec.num_nextn_predict_layers if spec else 1, 1)  # vLLM: the MTP config's n_predict
    if method in _NEEDS_DRAFT and model is None:
        raise InputError(f'{flag}: method {method} needs a draft model ("model": NAME)')
    draft_tp = _count(value.get("draft_tensor_parallel_size"), "draft_tensor_parallel_size", flag)
    return Speculation(method, model if method in _NEEDS_DRAFT else None, tokens, draft_tp, flag)


def _vllm_method(raw: object, model: str | None, flag: str) -> str:
    """The method as gpusize names it; without one, vLLM infers it from the draft's name."""
    if raw is None:
        if model is None:
            raise InputError(f"{flag}: give a method ({', '.join(METHODS)}) or a draft model")
        name = model.lower()
        return "eagle3" if "eagle3" in name else "eagle" if "eagle" in name else "draft_model"
    key = str(raw).strip().lower()
    method = _VLLM_ALIASES.get(key, key)
    if method not in METHODS:
        raise InputError(
            f"{flag}: method {str(raw)[:40]!r} is not modelled by gpusize; use one of {', '.join(METHODS)}"
        )
    return method


def _count(raw: object, key: str, flag: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_SPECULATIVE_TOKENS:
        raise InputError(f"{flag}: {key} must be a whole number from 1 to {MAX_SPECULATIVE_TOKENS}")
    return raw


def _sglang(settings: EngineSettings, spec: ModelSpec | None) -> Speculation | None:
    tree = (
        settings.speculative_num_steps,
        settings.speculative_eagle_topk,
        settings.speculative_num_draft_tokens,
    )
    raw = settings.speculative_algorithm
    if raw is None:  # SGLang ignores the other --speculative-* flags without an algorithm
        return None
    flag = "--speculative-algorithm"
    method = _SGLANG_ALGORITHMS.get(raw.strip().upper())
    if method is None:
        raise InputError(f"unknown {flag} {raw[:40]!r}; use one of {', '.join(_SGLANG_ALGORITHMS)}")
    draft = settings.speculative_draft_model_path
    if method in _NEEDS_DRAFT and draft is None:
        raise InputError(f"{flag} {raw.strip().upper()} needs --speculative-draft-model-path")
    default = SGLANG_TREE_MLA if spec is not None and spec.mla else SGLANG_TREE_DEFAULT
    steps, topk, drafts = (given or fallback for given, fallback in zip(tree, default, strict=True))
    if method == "ngram":
        steps, topk = 0, 0
    return Speculation(method, draft if method in _NEEDS_DRAFT else None, drafts - 1 or 1, None, flag,
                       steps, topk, drafts)  # fmt: skip


# --------------------------------------------------------------------------- the draft's weights


def draft_format(target: ModelSpec, draft: ModelSpec) -> WeightFormat:
    """The draft's weights as the engine loads them: a quantized draft in its own format, an
    unquantized one in the target's compute dtype (vLLM's draft ModelConfig takes the target's
    dtype; SGLang loads the draft with the server's --dtype)."""
    return weight_format(draft, "auto" if draft.quantization else activation_dtype(target))


def draft_weights_bytes(target: ModelSpec, draft: DraftModel, method: str, fmt: WeightFormat, tp: int) -> int:
    """Bytes of the draft's weights on one GPU at tensor-parallel size `tp`.

    draft_model: the whole draft (`weights_bytes`). EAGLE heads (vllm/model_executor/models/
    llama_eagle.py, llama_eagle3.py; vllm/v1/spec_decode/eagle.py load_model): the decoder layers
    (sharded), their norms and the final norm, fc (ReplicatedLinear: 2h -> h for EAGLE-1, 3 x the
    target's hidden -> h for EAGLE-3) on every rank, for EAGLE-3 the first layer's q/k/v reading 2h
    (h x (q + 2 kv) more) and its own lm_head of `lm_head_rows` rows (sharded); embeddings are the
    target's when their shape matches (vLLM shares them; SGLang set_embed), else the draft's own;
    EAGLE-1 takes the target's lm_head."""
    d = draft.spec
    if method == "draft_model":
        return weights_bytes(d, fmt, tp)
    h = d.hidden_size
    linear = small = 0
    for layer in d.layers:
        counts = layer_params(d, layer)
        linear, small = linear + counts.linear, small + counts.small
    eagle3 = method == "eagle3"
    if eagle3 and d.layers:
        first = d.layers[0]
        linear += h * (first.num_attention_heads + 2 * first.num_key_value_heads) * d.head_dim
    fc = (3 * target.hidden_size if eagle3 else 2 * h) * h
    shared = (d.vocab_size, h) == (target.vocab_size, target.hidden_size)
    tables = (0 if shared else d.vocab_size * h) + (draft.lm_head_rows * h if eagle3 else 0)
    sharded = linear * fmt.linear_bytes + tables * fmt.other_bytes
    return int(sharded / tp + fc * fmt.linear_bytes + (small + h) * fmt.other_bytes)


def mtp_weights_bytes(spec: ModelSpec, fmt: WeightFormat, tp: int) -> int:
    """The checkpoint's MTP layers on one GPU, as `--mtp` loads them (`weights_bytes`)."""
    return weights_bytes(spec, fmt, tp, True) - weights_bytes(spec, fmt, tp, False)


# --------------------------------------------------------------------------- the speed-up


def expected_tokens_per_step(acceptance: float, tokens: int) -> float:
    """Tokens one verification step yields on average when each of `tokens` proposed tokens is
    accepted with probability `acceptance` (independently, until the first rejection), counting the
    target's own token: (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, "Fast Inference from
    Transformers via Speculative Decoding", eq. 1; EAGLE, Li et al. 2024, reports the same mean
    acceptance length); k + 1 when a = 1."""
    if acceptance >= 1:
        return float(tokens + 1)
    return (1 - acceptance ** (tokens + 1)) / (1 - acceptance)
