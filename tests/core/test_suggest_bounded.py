"""The bounded suggestion searches (issue 24) answer as the searches that try everything: other GPU
types from the cheapest possible answer up, a lever's later variants only below its fewest GPUs,
llama.cpp's -ngl search on running sums, a full-attention pool's largest context as a quotient; and
they evaluate less (issue 22: `gpusize batch` over all-distinct rows)."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.core import kvcache, runtime
from gpusize.core import releases as releases_module
from gpusize.core.engines import engine, llamacpp, prepare
from gpusize.core.engines.llamacpp_families import layer_cache_bytes, layer_devices
from gpusize.core.gpu import GpuSpec
from gpusize.core.parse import parse_config
from gpusize.core.plan import Candidate
from gpusize.core.spec import ModelSpec
from gpusize.core.suggest import Scope, Suggestion, fewer_gpus, fixes, one_card
from gpusize.core.suggest.evaluate import evaluated, first_fit_of
from gpusize.core.weights import StoredLayers
from gpusize.core.workload import EngineSettings, Request, Workload
from gpusize.dataclass import replace
from gpusize.errors import InputError
from gpusize.sources.catalog import find_gpu, find_model, load_gpus, load_models
from tests.helpers import catalog_spec

#: The module (the package exports a function of the same name).
variants = importlib.import_module("gpusize.core.suggest.variants")

#: (model, GPU, context, engine): one GPU enough, several, none at all, and llama.cpp's own levers.
CASES = [
    ("Qwen3-32B", "L40S", 8192, "vllm"),
    ("Qwen3-32B", "RTX4090", 16384, "vllm"),
    ("Llama-3.3-70B", "H100", 4096, "vllm"),
    ("Llama-3.3-70B", "A100-80GB", 12288, "vllm"),
    ("Qwen3-30B-A3B", "RTX4090", 2048, "vllm"),
    ("DeepSeek-V3", "H100", 1024, "vllm"),
    ("DeepSeek-V3", "L40S", 16384, "vllm"),
    ("Qwen3-32B", "L4", 32768, "sglang"),
    ("Qwen3-8B", "L4", 40960, "sglang"),
    ("Llama-3.3-70B", "RTX4090", 32768, "llamacpp"),
]


def _work(name: str, ctx: int, engine_name: str) -> tuple[ModelSpec, Workload]:
    spec = catalog_spec(name)
    return spec, prepare(spec, Request(context_tokens=ctx, engine=EngineSettings(name=engine_name)))


def _every_variant(
    spec: ModelSpec, work: Workload, model: object, gpu: GpuSpec, counts: list[int], count: int | None
) -> list[Suggestion]:
    """The levers as they were searched before issue 24: every variant at every count."""
    m = engine(work.engine.name)
    out: list[Suggestion] = []
    for variant in (*variants.variants(spec, work, m, gpu), *m.levers.settings(work, gpu)):
        out += first_fit_of(spec, gpu, counts, variant, m, count)
    return out


@pytest.mark.parametrize(("name", "gpu_name", "ctx", "engine_name"), CASES)
def test_the_bounded_searches_suggest_what_trying_everything_does(
    name: str, gpu_name: str, ctx: int, engine_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, work = _work(name, ctx, engine_name)
    model, gpu = engine(engine_name), find_gpu(gpu_name)
    others = tuple(g for g in load_gpus() if g.name != gpu.name)
    scopes = [Scope(gpus=(gpu,), others=others), Scope(gpus=(gpu,), count=1, max_count=1)]
    bounded = [fixes(spec, work, model, s) for s in scopes] + [one_card(spec, work, model, gpu)]
    monkeypatch.setattr(variants, "other_types", variants._every_type)
    monkeypatch.setattr(variants, "_per_lever", _every_variant)
    monkeypatch.setattr("gpusize.core.suggest.other_types", variants._every_type)
    everything = [fixes(spec, work, model, s) for s in scopes] + [one_card(spec, work, model, gpu)]
    assert bounded == everything


def test_other_gpu_types_are_tried_from_the_cheapest_possible_answer_up() -> None:
    """DeepSeek-V3 fits on no number of H100s: the other types are tried from the cheapest answer
    each could give, and the search stops once three answers rank before the rest; trying every type
    evaluated each of them at every count its weights allow (issue 24)."""
    spec, work = _work("DeepSeek-V3", 4096, "vllm")
    calls: list[str] = []
    model = engine("vllm")

    def counted(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
        calls.append(gpu.name)
        return model.evaluate(spec, gpu, n, work)

    counting = dataclasses.replace(model, evaluate=counted)
    scope = Scope(gpus=(find_gpu("H100"),), others=load_gpus())
    found = variants.other_types(spec, work, counting, scope)
    bounded = len(calls)
    calls.clear()
    assert variants._every_type(spec, work, counting, scope) == found
    assert len(found) == 3
    assert bounded <= len(calls) // 2, (bounded, len(calls))


def test_an_answer_below_its_bound_falls_back_to_trying_every_type() -> None:
    """An engine that priced a plan below n x the GPU's price would break the bound: the search
    notices and tries every type."""
    spec, work = _work("Llama-3.3-70B", 4096, "vllm")
    model = engine("vllm")

    def cheap(spec: ModelSpec, gpu: GpuSpec, n: int, work: Workload) -> Candidate:
        c = model.evaluate(spec, gpu, n, work)
        return dataclasses.replace(c, usd_per_hour=0.01) if c.fits else c

    odd = dataclasses.replace(model, evaluate=cheap)
    scope = Scope(gpus=(find_gpu("H100"),), others=load_gpus())
    assert variants.other_types(spec, work, odd, scope) == variants._every_type(spec, work, odd, scope)


def _split_by_loop(
    spec: ModelSpec, layer_bytes: list[int], output: int, ngl: int, n_ctx: int, num_gpus: int
) -> tuple[tuple[int, int], ...]:
    """Each GPU's (weights, KV) layer by layer, as llamacpp_split summed them before issue 24."""
    n_layer = len(layer_bytes)
    devices = layer_devices(n_layer, max(0, min(ngl, n_layer + 1)), num_gpus)
    cache = [kv + state for kv, state in layer_cache_bytes(spec, n_ctx, "f16", 1)]
    weights, kv = [0] * num_gpus, [0] * num_gpus
    for il, device in enumerate(devices[:n_layer]):
        if device is not None:
            weights[device] += layer_bytes[il]
            kv[device] += cache[il]
    if devices[n_layer] is not None:
        weights[devices[n_layer]] += output
    return tuple(zip(weights, kv, strict=True))


def test_llamacpp_split_sums_each_gpus_layers_as_the_layer_by_layer_loop() -> None:
    spec = catalog_spec("Llama-3.1-8B")
    pick = random.Random(24)
    for _ in range(300):
        layer_bytes = [pick.randrange(1, 1 << 30) for _ in range(spec.num_hidden_layers)]
        ngl, gpus, n_ctx = (
            pick.randrange(0, 40),
            pick.choice([1, 2, 3, 4, 8]),
            pick.choice([512, 8192, 40000]),
        )
        split = llamacpp.llamacpp_split(spec, layer_bytes, 7, 11, ngl, n_ctx, "f16", True, 1, gpus)
        assert split.per_gpu == _split_by_loop(spec, layer_bytes, 11, ngl, n_ctx, gpus)


def test_the_offload_search_finds_the_count_trying_every_count_finds() -> None:
    spec, work = _work("Llama-3.3-70B", 8192, "llamacpp")
    for gpu_name in ("RTX4090", "L40S", "H100"):
        gpu = find_gpu(gpu_name)
        found = llamacpp.offload_variant(spec, work, gpu, 1)
        fitting = [
            n
            for n in range(1, spec.num_hidden_layers + 1)
            if llamacpp.evaluate(
                spec, gpu, 1, replace(work, engine=replace(work.engine, n_gpu_layers=n))
            ).fits
        ]
        assert found is not None and found.work.engine.n_gpu_layers == max(fitting)


#: Every bundled model parsed once (the one-step -ngl search is held to the bisection over them all).
_SPECS = {m.name: parse_config(m.config) for m in load_models()}


@functools.cache
def _llamacpp_work(name: str, ctx: int, batch: int, kv: str, fa: bool | None, ngl: int | None) -> Workload:
    settings = EngineSettings(name="llamacpp", flash_attn=fa, n_gpu_layers=ngl)
    return prepare(_SPECS[name], Request(context_tokens=ctx, batch=batch, kv_dtype=kv, engine=settings))


@settings(max_examples=400, deadline=None)
@given(
    name=st.sampled_from(sorted(_SPECS)),
    gpu=st.sampled_from(load_gpus()),
    ctx=st.integers(256, 140_000),
    batch=st.sampled_from([1, 1, 2, 7]),
    kv=st.sampled_from(["auto", "q8_0", "q4_0", "f32"]),
    fa=st.sampled_from([None, True, False]),
    ngl=st.sampled_from([None, None, 1, 5, 40, 200]),
    stored=st.none() | st.lists(st.integers(0, 1 << 31), min_size=1, max_size=130),
)
def test_the_one_step_offload_search_finds_the_count_the_bisection_finds(
    name: str,
    gpu: GpuSpec,
    ctx: int,
    batch: int,
    kv: str,
    fa: bool | None,
    ngl: int | None,
    stored: list[int] | None,
) -> None:
    """On one GPU the -ngl search is one bisect on the layers' running sums: the count it finds is the
    bisection's over `_fits`, for every bundled model and GPU type, contexts, batches, cache types,
    flash attention on and off, an -ngl cap, and stored layers as a GGUF gives them (a block count
    other than the config's, empty blocks)."""
    spec = _SPECS[name]
    try:
        work = _llamacpp_work(name, ctx, batch, kv, fa, ngl)
    except (InputError, ValueError):  # a combination llama.cpp refuses (a quantized V cache, fa off)
        return
    if stored is not None:
        work = replace(work, stored_layers=StoredLayers(tuple(stored), stored[0] // 3, stored[-1] // 2))
    layers = spec.num_hidden_layers + 1
    top = min(work.engine.n_gpu_layers or layers, layers) - 1
    assert llamacpp.most_layers_on_one(spec, gpu, work, top) == llamacpp.most_layers(spec, gpu, 1, work, top)


def test_the_one_step_offload_search_finds_the_bisections_count_for_every_bundled_model() -> None:
    """Every bundled model on a 24, 48, 80 and 141 GB card, at a context drawn per model: most such
    models fit partly (between no layer and all), where a wrong sum or an off-by-one would show."""
    pick, between = random.Random(22), 0
    for name in sorted(_SPECS):
        for gpu in (find_gpu(g) for g in ("RTX4090", "L40S", "H100", "H200")):
            try:
                work = _llamacpp_work(name, pick.choice([2048, 8192, 32768]), 1, "auto", None, None)
            except (InputError, ValueError):
                continue
            top = _SPECS[name].num_hidden_layers
            found = llamacpp.most_layers_on_one(_SPECS[name], gpu, work, top)
            assert found == llamacpp.most_layers(_SPECS[name], gpu, 1, work, top), (name, gpu.name)
            between += 0 < found < top
    assert between > 100


def test_the_one_step_offload_search_counts_a_gpu_filled_to_the_byte_as_fitting() -> None:
    """A card whose memory is exactly what -ngl k needs fits k layers in both searches (the bisect's
    boundary: at or below the capacity fits)."""
    spec = _SPECS["Llama-3.1-70B"]
    work = _llamacpp_work("Llama-3.1-70B", 8192, 1, "auto", None, None)
    for k in (1, 2, 17, 40, spec.num_hidden_layers):
        split = llamacpp._split(spec, 1, work, k)
        need = sum(split.per_gpu[0]) + split.compute_bytes + runtime.CUDA_CONTEXT_TP1
        gpu = replace(find_gpu("H100"), cuda_visible_gib=need / (1 << 30))
        assert gpu.visible_bytes == need
        found = llamacpp.most_layers_on_one(spec, gpu, work, spec.num_hidden_layers)
        assert found == k == llamacpp.most_layers(spec, gpu, 1, work, spec.num_hidden_layers)


def _largest_by_bisection(layout: kvcache.KvLayout, blocks: int, batch: int, batched: int, limit: int) -> int:
    lo, hi = 0, limit // layout.block_size
    while lo < hi:
        mid = (lo + hi + 1) // 2
        need = batch * kvcache.blocks_per_request(layout, mid * layout.block_size, batched)
        lo, hi = (mid, hi) if need <= blocks else (lo, mid - 1)
    return lo * layout.block_size


def test_the_largest_context_is_the_one_the_bisection_reaches() -> None:
    pick = random.Random(22)
    for _ in range(3000):
        block = pick.choice([16, 64, 256])
        groups = tuple(
            kvcache.KvGroup(
                pick.choice(["full", "full", "sliding", "chunked", "state"]),
                pick.choice([None, 128, 4096]),
                pick.choice([0, 0, block, 32]),
            )
            for _ in range(pick.randint(1, 4))
        )
        layout = kvcache.KvLayout(4096, block, pick.randint(1, 3), groups)
        args = (layout, pick.randint(-5, 100_000), pick.randint(0, 8), pick.choice([2048, 8192]))
        limit = pick.randint(-100, 200_000)
        assert kvcache.largest_context(*args, limit) == _largest_by_bisection(*args, limit)


@dataclasses.dataclass(frozen=True)
class _Plain:
    a: int
    b: str = "x"

    @functools.cached_property
    def twice(self) -> int:
        return 2 * self.a


@dataclasses.dataclass(frozen=True)
class _Checked:
    a: int

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("a < 0")


def test_replace_copies_the_fields_and_nothing_kept_beside_them() -> None:
    plain = _Plain(3)
    assert plain.twice == 6
    changed = replace(plain, a=5)
    assert changed == dataclasses.replace(plain, a=5) and changed.twice == 10
    settings = EngineSettings(max_num_seqs=8)
    assert settings.given() == ("max_num_seqs",)
    assert replace(settings, max_num_seqs=None).given() == ()
    with pytest.raises(ValueError, match="a < 0"):  # a class that checks itself goes the standard way
        replace(_Checked(1), a=-1)
    with pytest.raises(TypeError):
        replace(plain, c=1)


def test_a_model_parsed_again_is_the_same_spec_unless_written_otherwise() -> None:
    config = find_model("Qwen3-8B").config
    assert parse_config(dict(config)) is parse_config(dict(config))
    scaled = {
        **config,
        "rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 32768},
    }
    as_float = {**scaled, "rope_scaling": {**scaled["rope_scaling"], "factor": 4.0}}
    assert parse_config(scaled) == parse_config(as_float)
    assert repr(parse_config(scaled)) == repr(parse_config(as_float))  # the parser writes 4 as 4.0


def test_a_kept_hash_is_the_hash_of_the_fields_and_a_copy_hashes_its_own() -> None:
    """Workload and EngineSettings keep their hash (the evaluation cache hashes them for every plan
    tried): it is the hash of their fields, as the dataclass's own was, and a changed copy has its
    own."""
    spec, work = _work("Qwen3-8B", 4096, "vllm")
    for value in (work, work.engine):
        assert hash(value) == hash(tuple(getattr(value, f.name) for f in dataclasses.fields(value)))
    longer = replace(work, context_tokens=8192)
    assert hash(longer) == hash(dataclasses.replace(work, context_tokens=8192)) != hash(work)
    seqs = replace(work.engine, max_num_seqs=64)
    assert hash(seqs) == hash(dataclasses.replace(work.engine, max_num_seqs=64)) != hash(work.engine)


def test_gpus_weight_formats_and_releases_keep_the_hash_of_their_compared_fields() -> None:
    """GpuSpec, WeightFormat and Release keep their hash too (issue 22): the hash of the fields their
    equality compares (not a GPU's measured free memory or catalog file), taken once, and a changed
    copy hashes its own; a GPU keeps its visible bytes, and its catalog row copies only its fields."""
    _, work = _work("Qwen3-8B", 4096, "vllm")
    h100 = find_gpu("H100")
    for value in (h100, work.weights, work.release):
        compared = tuple(getattr(value, f.name) for f in dataclasses.fields(value) if f.compare)
        assert hash(value) == hash(compared) and value.__dict__["_hash"] == hash(compared)
    local = replace(h100, free_mib=1000, catalog_file="mine.yaml")
    assert local == h100 and hash(local) == hash(h100)
    smaller = replace(h100, memory_mib=h100.memory_mib // 2, cuda_visible_gib=None)
    assert hash(smaller) != hash(h100) and smaller.visible_bytes == smaller._visible_bytes()
    assert h100.visible_bytes == h100._visible_bytes() == h100.__dict__["_visible"]
    fp8 = replace(work.weights, linear_bytes=1.0)
    assert hash(fp8) == hash(dataclasses.replace(work.weights, linear_bytes=1.0)) != hash(work.weights)


def test_a_release_resolved_again_is_the_same_value_and_a_refused_one_is_refused_again() -> None:
    """`Releases.resolve` keeps one Release per text asked (issue 22): the value the resolution gives,
    the same object for every row of a batch; a text it refuses is refused every time, never kept."""
    for texts in ((None, "0.19.1", "0.19.9", "0.10.1.1"), (None, "0.5.0")):
        releases = releases_module.VLLM if texts[1] == "0.19.1" else releases_module.SGLANG
        for text in texts:
            assert releases.resolve(text) is releases.resolve(text) == releases._resolve(text)
    for _ in range(2):
        with pytest.raises(InputError):
            releases_module.VLLM.resolve("0.0.1")
    assert "0.0.1" not in releases_module.VLLM._resolved


#: Chains where some values fit and some do not (a draw of 3,000 found 5 of ~2,200): the cases the
#: order matters for, kept as examples of the property below.
_MIXED_CHAINS = [
    ("gemma-4-31B-it", "H100-SXM", 1, 67511),
    ("Kimi-K2-Instruct", "B300", 4, 13778),
    ("DeepSeek-R1-Distill-Llama-70B", "L4", 8, 78436),
]


@pytest.mark.parametrize(("name", "gpu_name", "n", "ctx"), _MIXED_CHAINS)
def test_a_chain_that_fits_from_some_value_down_is_found_from_there(
    name: str, gpu_name: str, n: int, ctx: int
) -> None:
    spec, model, gpu = _SPECS[name], engine("vllm"), find_gpu(gpu_name)
    work = prepare(spec, Request(context_tokens=ctx, engine=EngineSettings(name="vllm")))
    chain = [v for v in model.levers.settings(work, gpu) if v.lever in model.levers.chained]
    fits = [evaluated(spec, gpu, n, v, model, None) is not None for v in chain]
    assert fits == sorted(fits) and any(fits) and not all(fits)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(sorted(_SPECS)),
    gpu=st.sampled_from(load_gpus()),
    n=st.sampled_from([1, 2, 4, 8]),
    ctx=st.integers(256, 140_000),
    batch=st.sampled_from([1, 1, 3, 40]),
    seqs=st.sampled_from([None, None, 64, 1024]),
    dtype=st.sampled_from(["auto", "auto", "fp8", "int4"]),
    kv=st.sampled_from(["auto", "fp8"]),
)
def test_a_chained_lever_fits_on_every_later_variant_where_one_fits(
    name: str, gpu: GpuSpec, n: int, ctx: int, batch: int, seqs: int | None, dtype: str, kv: str
) -> None:
    """vLLM's --max-num-seqs halvings are a chain (`Levers.chained`): where one value fits as a
    suggestion (the engine's fit and its thin margin, `evaluated`), every smaller value fits too, for
    every bundled model and GPU type, counts, contexts, batches, weight and KV formats. So a search
    may try the smallest first and skip the lever where that one does not fit (`chain_floors`)."""
    spec, model = _SPECS[name], engine("vllm")
    settings = EngineSettings(name="vllm", max_num_seqs=seqs)
    try:
        work = prepare(
            spec, Request(context_tokens=ctx, batch=batch, dtype=dtype, kv_dtype=kv, engine=settings)
        )
    except InputError:  # a context or format the model or vLLM refuses: no plan to suggest from
        return
    chain = [v for v in model.levers.settings(work, gpu) if v.lever in model.levers.chained]
    fits = [evaluated(spec, gpu, n, v, model, None) is not None for v in chain]
    assert fits == sorted(fits), [v.summary for v in chain]  # no fit, then only fits


@pytest.mark.parametrize(("name", "gpu_name", "ctx", "engine_name"), CASES)
def test_the_setting_that_saves_gpus_is_the_one_trying_every_variant_finds(
    name: str, gpu_name: str, ctx: int, engine_name: str
) -> None:
    """`fewer_gpus` skips a chained lever on n GPUs where its last variant does not fit; its answer is
    the first (count, variant) that fits, as trying every variant at every count gives."""
    spec, work = _work(name, ctx, engine_name)
    model, gpu = engine(engine_name), find_gpu(gpu_name)
    for needed in (2, 4, 8):
        every = (
            evaluated(spec, gpu, n, v, model, None)
            for n in (1, 2, 4)
            if n < needed
            for v in model.levers.settings(work, gpu)
        )
        assert fewer_gpus(spec, work, model, gpu, needed) == next((s for s in every if s), None)
