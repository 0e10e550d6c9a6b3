"""`gpusize models` and `gpusize gpus` as text: grouped by family and sorted by size, digit grouping,
and each GPU's price with its own date and provider."""

from __future__ import annotations

from gpusize.render.catalogs import fmt_params, render_gpus, render_models
from gpusize.render.text import Style
from gpusize.reports.catalogs import build_gpus, build_models
from gpusize.sources.catalog import Catalogs, load_gpus

PLAIN = Style(color=False)


def test_models_are_grouped_by_family_then_size() -> None:
    report = build_models(Catalogs.with_env().parsed_models(), None)
    keys = [(m.family.lower(), m.params_total or 0) for m in report.models]
    assert keys == sorted(keys)
    text = render_models(report, 160, PLAIN)
    assert text.startswith(f"{len(report.models)} models in ")
    assert "405,853,388,800" in text and "Llama 3" in text and "Qwen3-VL" in text
    narrow = render_models(report, 80, PLAIN).splitlines()
    assert narrow[1].split()[:3] == ["family", "name", "params"]


def test_parameter_sizes_read_as_people_say_them() -> None:
    assert fmt_params(134_515_008) == "135M"
    assert fmt_params(8_190_735_360) == "8.19B"
    assert fmt_params(1_026_408_232_448) == "1,026.41B"
    assert fmt_params(None) == "-"


def test_gpus_show_price_date_and_provider_per_gpu() -> None:
    report = build_gpus(load_gpus())
    text = render_gpus(report, 200, PLAIN)
    h100 = next(line for line in text.splitlines() if line.startswith("H100-SXM "))
    assert "3.25" in h100 and "2026-08-22" in h100 and "verda" in h100 and "30,000" in h100
    t4 = next(line for line in text.splitlines() if line.startswith("T4 "))
    assert t4.split()[-4:] == ["-", "-", "-", "-"]  # unpriced, no dated purchase price
    narrow = render_gpus(report, 80, PLAIN)
    assert "price date" in narrow and "not quotes" in narrow
