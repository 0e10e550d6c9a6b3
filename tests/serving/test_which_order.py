"""`which`: the capability order is a stated rule (newest generation, then size), every catalog entry
carries a sourced release month, `--top N` cuts the list, and thin-margin rows are marked as fit marks
them (issue 23)."""

from __future__ import annotations

import json

from gpusize.core.workload import Request
from gpusize.serving.which import SORTS, CatalogEntry, ModelFit, fit_one, generation, rank
from gpusize.sources.catalog import find_gpu, load_models
from tests.helpers import run_in_process


def run(*args: str) -> tuple[int, str]:
    r = run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "100"})
    return r.code, r.stdout


def test_every_family_has_sourced_release_months() -> None:
    """At least one dated entry per family, and every date comes with its source."""
    models = load_models()
    families = {m.family for m in models}
    dated = {m.family for m in models if m.released}
    assert families == dated, families - dated
    for m in models:
        assert bool(m.released) == bool(m.released_source), m.name
    assert sum(bool(m.released) for m in models) >= 0.9 * len(models)


def test_a_2023_model_never_outranks_a_2026_one_of_the_list() -> None:
    """RTX 5090 at 8k: the list used to open on Mixtral-8x7B (2023-12), the largest total parameters."""
    code, out = run("which", "--gpu", "RTX5090", "--json")
    assert code == 0
    rows = [m for m in json.loads(out)["models"] if m["fits"]]
    assert not rows[0]["name"].startswith("Mixtral")
    gens = [generation(m["released"]) for m in rows if m["released"]]
    assert gens == sorted(gens, reverse=True)  # newest generation first
    assert rows[0]["released"] >= "2026-01"


def test_undated_entries_follow_the_dated_ones_and_size_breaks_ties() -> None:
    def row(name: str, released: str | None, total: int) -> ModelFit:
        return ModelFit(
            name=name,
            hf_id=name,
            family=None,
            released=released,
            params_total=total,
            params_active=total,
            fits=True,
        )

    rows = [row("old-big", "2023-12", 70), row("undated", None, 400), row("new-small", "2026-02", 8)]
    rows.append(row("new-big", "2026-05", 30))
    assert [r.name for r in rank(rows)] == ["new-big", "new-small", "old-big", "undated"]
    assert "newest generation" in SORTS["capability"].rule and "no release date" in SORTS["capability"].rule


def test_the_rule_is_printed_under_the_table_and_in_json() -> None:
    _, text = run("which", "--gpu", "L4")
    assert "Order: models that fit first, newest generation first" in text
    _, out = run("which", "--gpu", "L4", "--json")
    assert "newest generation first" in json.loads(out)["assumptions"]["ordering"]


def test_top_n_lists_the_first_n_that_fit() -> None:
    code, out = run("which", "--gpu", "L4", "--top", "3", "--json")
    data = json.loads(out)
    assert code == 0 and sum(m["fits"] for m in data["models"]) == 3
    assert data["models_fitting"] > 3 and data["assumptions"]["top"] == 3
    _, text = run("which", "--gpu", "L4", "--top", "3")
    assert f"--top 3: the first 3 of {data['models_fitting']} that fit" in " ".join(text.split())
    code, _ = run("which", "--gpu", "L4", "--top", "0")
    assert code == 2


def test_thin_margin_rows_are_marked() -> None:
    """Qwen3-8B on one L4 at 25,916 tokens holds 1.01 sequences: fit says 'yes, thin margin'."""
    m = next(e for e in load_models() if e.name == "Qwen3-8B")
    entry = CatalogEntry(m.name, m.hf_id, m.config, m.family, m.released)
    r = fit_one(entry, find_gpu("L4"), 1, Request(context_tokens=25916))
    assert r.fits and r.thin_margin
    code, out = run("which", "--gpu", "L4", "--ctx", "25916", "--json")
    row = next(x for x in json.loads(out)["models"] if x["name"] == "Qwen3-8B")
    assert row["thin_margin"] is True
    _, text = run("which", "--gpu", "L4", "--ctx", "25916", "--all")
    line = next(ln for ln in text.splitlines() if ln.startswith("Qwen3-8B "))
    assert "yes, thin margin" in line
    assert "thin margin: fits by less than gpusize's error" in " ".join(text.split())
