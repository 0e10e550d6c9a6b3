"""SGLang speculative decoding (--speculative-algorithm, core/speculative.py): the draft worker.

SGLang builds the target worker first: it loads the target's weights and sizes the KV pool from
mem_fraction_static as without a draft (model_runner_kv_cache_mixin.py profile_max_num_token). The
draft worker comes after (speculative/eagle_worker.py, is_draft_worker=True): it loads the draft's
weights and its own KV pool of `draft_runner_cache_size` tokens (model_runner.py init_memory_pool:
the target's pool + max_num_reqs x (num_steps x eagle_topk + num_draft_tokens) + 100, the target and
the draft sharing token indices), one cell per draft layer. Both come from the memory the static
fraction leaves, which is why the default fraction keeps 2 GiB more for EAGLE drafts and 6 GiB for a
STANDALONE draft model (server_args.py, `_handle_gpu_memory_settings`; none for NGRAM). They are
`outside` reserves here: not taken from the pool, checked against the room outside the budget.

From BUDGETED_SINCE the draft is inside --mem-fraction-static: sgl-project/sglang#23862 (merged
2026-04-27) removed the flat reservation and scales the pool's cell by the draft's layers
(pool_configurator.py DefaultPoolConfigurator: cell_size x (1 + draft layers / target layers), the
draft pool holding as many tokens as the target's), and #28855 (merged 2026-06-21) profiles the pool
after every weight is loaded, so the draft's weights come out of the budget (`draft_weights_in_budget`).
"""

from __future__ import annotations

from gpusize.core import kvcache
from gpusize.core.gpu import GpuSpec
from gpusize.core.releases import Version, parse_version
from gpusize.core.reserves import Reserve
from gpusize.core.spec import ModelSpec
from gpusize.core.speculative import (
    Speculation,
    draft_format,
    draft_weights_bytes,
    mtp_weights_bytes,
    speculation,
)
from gpusize.core.workload import Workload

__all__ = [
    "ALGORITHM_SINCE",
    "BUDGETED_SINCE",
    "DRAFT_POOL_BUFFER",
    "EAGLE_4_GIB_SINCE",
    "RESERVE_SINCE",
    "SPECULATIVE_RUNNING_REQUESTS",
    "algorithm_refusal",
    "caps_running_requests",
    "budgeted_cell",
    "draft_layers",
    "draft_notes",
    "draft_pool_tokens",
    "draft_reserves",
    "draft_weights_in_budget",
    "in_budget",
    "speculative_reserve_mib",
]

#: Tokens SGLang adds to the draft pool beyond the target's and the in-flight drafts ("buffer").
DRAFT_POOL_BUFFER = 100
#: --max-running-requests when not given with EAGLE, EAGLE3, NEXTN or STANDALONE (server_args.py:
#: "Max running requests is reset to 48 for speculative decoding").
SPECULATIVE_RUNNING_REQUESTS = 48
#: MiB the default mem_fraction_static leaves for the draft (server_args.py `reserved_mem`, read in
#: every SGLang wheel with bench/release_sources.py): 2 GiB for any algorithm from 0.4.7.post1 (none
#: before), STANDALONE 6 GiB from 0.5.2, NGRAM none (0.5.3 on), the EAGLE family 4 GiB from 0.5.10;
#: none from BUDGETED_SINCE (the flat reservation is gone from the 0.5.14 wheel).
_RESERVE_MIB = {"draft_model": 6 * 1024, "ngram": 0}
_EAGLE_RESERVE_MIB = 2 * 1024
_EAGLE_RESERVE_MIB_LATER = 4 * 1024
RESERVE_SINCE = "0.4.7.post1"
EAGLE_4_GIB_SINCE = "0.5.10"


#: The first release gpusize models with the draft inside the budget: 0.5.14 was out by 2026-06-27
#: (a deployment note, Tanguille/cluster#3516), after #23862; whether it holds #28855 (the draft's
#: weights in the budget, merged six days before) is not checked at its tag.
BUDGETED_SINCE = "0.5.14"
#: The first release whose --speculative-algorithm takes each value: the argparse choices in
#: server_args.py, read in every SGLang wheel on PyPI from 0.4.1.post4 (the first with the flag) with
#: bench/release_sources.py. From 0.5.12 the flag has no choices (algorithms are a registry) and
#: ServerArgs upper()s the value; before it only the capitalised names parse.
ALGORITHM_SINCE = {
    "EAGLE": "0.4.1.post4",
    "NEXTN": "0.4.3.post1",
    "EAGLE3": "0.4.4.post2",
    "STANDALONE": "0.5.2",
    "NGRAM": "0.5.3",
}


def algorithm_refusal(work: Workload) -> str | None:
    """Why release `work.release` cannot take the --speculative-algorithm asked for, or None."""
    raw = work.engine.speculative_algorithm
    key = raw.strip().upper() if raw else ""
    first = parse_version(ALGORITHM_SINCE.get(key, ""))
    if first is None or work.release.version >= first:
        return None
    return (
        f"SGLang {work.release.version} has no --speculative-algorithm {key}: the first release with it "
        f"is {first}; pass --engine-version {first} or later"
    )


def in_budget(version: Version) -> bool:
    """Whether release `version` sizes the draft inside --mem-fraction-static."""
    first = parse_version(BUDGETED_SINCE)
    assert first is not None
    return version >= first


def speculative_reserve_mib(algorithm: str | None, version: Version) -> int:
    """MiB SGLang's default static fraction sets aside for speculative decoding from RESERVE_SINCE to
    BUDGETED_SINCE: 6 GiB for a STANDALONE draft model, none for NGRAM, 2 GiB for the EAGLE family
    (EAGLE, EAGLE3, NEXTN; 4 GiB from EAGLE_4_GIB_SINCE); none from BUDGETED_SINCE, where the draft is
    inside the budget."""
    if algorithm is None or in_budget(version) or version < _release(RESERVE_SINCE):
        return 0
    key = algorithm.strip().upper()
    method = {"STANDALONE": "draft_model", "NGRAM": "ngram"}.get(key, "eagle")
    eagle = _EAGLE_RESERVE_MIB_LATER if version >= _release(EAGLE_4_GIB_SINCE) else _EAGLE_RESERVE_MIB
    return _RESERVE_MIB.get(method, eagle)


def _release(text: str) -> Version:
    parsed = parse_version(text)
    assert parsed is not None
    return parsed


def caps_running_requests(algorithm: str | None) -> bool:
    """Whether SGLang sets --max-running-requests to SPECULATIVE_RUNNING_REQUESTS when it is not given:
    for EAGLE, EAGLE3, NEXTN (read as EAGLE) and STANDALONE, not NGRAM."""
    return algorithm is not None and algorithm.strip().upper() in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE")


def draft_pool_tokens(s: Speculation, target_tokens: int, running: int) -> int:
    """The draft worker's KV pool in tokens (model_runner.py draft_runner_cache_size)."""
    return target_tokens + running * (s.steps * s.topk + s.draft_tokens) + DRAFT_POOL_BUFFER


def draft_cell_bytes(spec: ModelSpec, s: Speculation, work: Workload, tp: int) -> int:
    """One token of the draft's KV on one GPU: the draft's layers, or NEXTN's MTP layers (the draft
    runner counts num_nextn_predict_layers layers of the target's cell)."""
    if s.method == "mtp":
        return spec.num_nextn_predict_layers * kvcache.kv_bytes_per_token_per_layer(spec, work.kv_bytes, tp)
    assert work.draft is not None
    return kvcache.kv_cache_bytes_per_token(work.draft.spec, work.kv_bytes, tp)


def budgeted_cell(spec: ModelSpec, work: Workload, cell: int) -> int:
    """The bytes per pool token from BUDGETED_SINCE: the target's cell x (1 + draft layers / target
    attention layers), SGLang's layer-ratio rule (exact when the draft's layers cache as wide as the
    target's, as EAGLE heads do); the cell unchanged before, and without a draft."""
    s = speculation(work.engine, spec)
    if s is None or s.method == "ngram" or not in_budget(work.release.version) or not spec.attention_layers:
        return cell
    return int(cell * (1 + draft_layers(spec, s, work) / len(spec.attention_layers)))


def draft_notes(spec: ModelSpec, work: Workload) -> tuple[str, ...]:
    """What the answer assumes of SGLang's draft (the engine's notes)."""
    s = speculation(work.engine, spec)
    if s is None or s.method == "ngram":
        return ()
    if in_budget(work.release.version):
        layers = draft_layers(spec, s, work)
        return (
            f"speculative decoding: each KV pool token also holds the draft's {layers} layer(s) (SGLang's "
            "cell x (1 + draft layers / target layers)): the KV cache counts them, the per-token figure is "
            "the target's",
        )
    return ("speculative decoding: SGLang allocates the draft's weights and KV pool after its static pool, "
            "from the memory outside --mem-fraction-static",)  # fmt: skip


def draft_layers(spec: ModelSpec, s: Speculation, work: Workload) -> int:
    """The draft's attention layers (NEXTN: the checkpoint's MTP layers)."""
    if s.method == "mtp" or work.draft is None:
        return spec.num_nextn_predict_layers
    return len(work.draft.spec.attention_layers)


def _draft_weights(spec: ModelSpec, s: Speculation, work: Workload, tp: int) -> tuple[int, str]:
    if s.method == "mtp":
        weights = 0 if work.include_mtp else mtp_weights_bytes(spec, work.weights, tp)
        return weights, f"{spec.num_nextn_predict_layers} NEXTN (MTP) layer(s) of the checkpoint"
    assert work.draft is not None
    fmt = draft_format(spec, work.draft.spec)
    weights = draft_weights_bytes(spec, work.draft, s.method, fmt, tp)
    return weights, f"{s.method} draft {work.draft.reference[:60]} at {fmt.name}"


def draft_weights_in_budget(spec: ModelSpec, gpu: GpuSpec, tp: int, work: Workload) -> Reserve | None:
    """From BUDGETED_SINCE: the draft's weights, loaded before the pool is profiled (#28855)."""
    s = speculation(work.engine, spec)
    if s is None or s.method == "ngram" or not in_budget(work.release.version):
        return None
    weights, what = _draft_weights(spec, s, work, tp)
    how = f"{what}, loaded before the KV pool is sized (inside --mem-fraction-static)"
    return Reserve("draft_weights", weights, how, estimate=s.method != "draft_model") if weights else None


def draft_reserves(
    spec: ModelSpec, tp: int, work: Workload, target_tokens: int, running: int
) -> tuple[Reserve, ...]:
    """The draft worker's weights and KV pool on one GPU, allocated after the target's pool (of
    `target_tokens`) with `running` requests at most (SPECULATIVE_RUNNING_REQUESTS unless
    --max-running-requests is given); empty without a draft (or for NGRAM)."""
    s = speculation(work.engine, spec)
    if s is None or s.method == "ngram" or in_budget(work.release.version):
        return ()
    weights, what = _draft_weights(spec, s, work, tp)
    tokens = draft_pool_tokens(s, target_tokens, running)
    cell = draft_cell_bytes(spec, s, work, tp)
    after = "allocated after the KV pool, outside mem_fraction_static"
    out = [
        Reserve(
            "draft_weights", weights, f"{what}, {after}", estimate=s.method != "draft_model", outside=True
        )
    ]
    kv_how = (
        f"draft KV pool: {tokens:,} tokens (pool + {running} x ({s.steps} x {s.topk} + {s.draft_tokens}) + "
        f"{DRAFT_POOL_BUFFER}) x {cell:,} B, {after}"
    )
    out.append(Reserve("draft_kv", tokens * cell, kv_how, outside=True))
    return tuple(r for r in out if r.bytes)
