"""`which --quiet` plans only until a model fits (issue 24, `serving.which.any_fits`): its exit code
and its warnings are those of the full answer, for a sweep of queries through the CLI and, as a
property (hypothesis), for any part of the catalog on any GPU, count and context: the verdict never
says no where the exact evaluation of every model finds one that fits, nor yes where it finds none."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusize.core.settings import EngineSettings
from gpusize.core.workload import Request
from gpusize.reports.which import build_which, which_verdict
from gpusize.serving.which import CatalogEntry, any_fits, models_that_fit
from gpusize.sources.catalog import Catalogs, find_gpu
from tests.helpers import cli
from tests.serving.test_which_index import SWEEP

#: Queries the sweep of test_which_index.py lacks: one that no model fits (a 1M context on a T4)
#: and an FP8 KV cache on four cards.
MORE: list[tuple[str, ...]] = [
    ("--gpu", "T4", "--ctx", "1m"),
    ("--gpu", "RTX3060", "--gpus", "4", "--ctx", "4k", "--kv-dtype", "fp8"),
]


@pytest.mark.parametrize("args", SWEEP + MORE, ids=lambda a: " ".join(a))
def test_quiet_answers_the_exit_code_and_warnings_of_the_full_answer(args: tuple[str, ...]) -> None:
    full, quiet = cli("which", *args), cli("which", *args, "-q")
    assert (quiet.code, quiet.stdout, quiet.stderr) == (full.code, "", full.stderr)
    assert full.code in (0, 1)


def test_quiet_over_a_user_catalog_warns_of_each_unreadable_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Unreadable configs (under two names, out of name order) are warned of in the full answer's
    order; a shadowed bundled name is said too; a query none fits exits 1 with the same warnings."""
    base = Catalogs().find_model("Qwen3-8B").config
    configs = [{**base, "hidden_size": -1}, base, {**base, "num_attention_heads": 0}, base]
    names = ["z-broken", "Qwen3-8B", "a-broken", "u-3"]
    entries = [
        {"name": n, "hf_id": f"acme/{n}", "source": "test", "config": c}
        for n, c in zip(names, configs, strict=True)
    ]
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump(entries))
    monkeypatch.setenv("GPUSIZE_CACHE_DIR", str(tmp_path / "cache"))
    for ctx in ("16k", "1m"):
        args = ("--gpu", "T4", "--models-file", str(models), "--ctx", ctx)
        for _ in range(2):  # parsed, then from the cached specs
            full, quiet = cli("which", *args), cli("which", *args, "-q")
            assert (quiet.code, quiet.stderr) == (full.code, full.stderr)
            assert full.stderr.count("skipped ") == 2 and "replaces the bundled" in full.stderr
            assert full.stderr.index("skipped a-broken") < full.stderr.index("skipped z-broken")


def test_quiet_still_refuses_two_formats() -> None:
    r = cli("which", "--gpu", "T4", "-q", "--json", "--format", "csv")
    assert r.code == 2 and "ask for two formats" in r.stderr


_MODELS = Catalogs().parsed_models()
_GPUS = ["T4", "RTX4090", "L4", "A100-80GB", "H100", "MI300X", "RTX3060"]
_CONTEXTS = [4_096, 32_768, 131_072, 262_144, 1_048_576]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picked=st.lists(st.integers(0, len(_MODELS) - 1), min_size=1, max_size=12),
    gpu=st.sampled_from(_GPUS),
    count=st.integers(1, 8),
    ctx=st.sampled_from(_CONTEXTS),
    engine=st.sampled_from(["vllm", "sglang"]),
)
def test_the_verdict_is_the_exact_evaluations(
    picked: list[int], gpu: str, count: int, ctx: int, engine: str
) -> None:
    """Any part of the catalog (repeats included: shared specs), parsed or with its configs to parse."""
    request = Request(context_tokens=ctx, engine=EngineSettings(name=engine))  # type: ignore[arg-type]
    models = tuple(_MODELS[i] for i in picked)
    exact = build_which(models, find_gpu(gpu), count, request)
    assert which_verdict(models, find_gpu(gpu), count, request) == (exact.fits, exact.skipped)
    plain = [CatalogEntry(m.name, m.hf_id, m.config, m.family, m.released) for m in models]
    rows = models_that_fit(plain, find_gpu(gpu), count, request)
    assert any_fits(plain, find_gpu(gpu), count, request)[0] == any(r.fits for r in rows) == exact.fits
