"""The KV cache line of `fit` multiplies out to the table's KV figure: batch x tokens x bytes a token
where the total is that product, else the total's average a token beside the figure before sliding
windows, recurrent state and the engine's own layout (gemma-4-31B at 128k: 17.0 GiB, not the
110 GiB that 901,120 B a token would give)."""

from __future__ import annotations

import json
import re

from gpusize.render.fit import _kv_how
from gpusize.reports.fit import MemoryBreakdown
from tests.helpers import cli as run


def _memory(kv: int, per_token: int) -> MemoryBreakdown:
    return MemoryBreakdown(
        weights_bytes=0,
        kv_cache_bytes=kv,
        kv_cache_bytes_per_token=per_token,
        activations_bytes=0,
        overhead_bytes=0,
        total_bytes=kv,
        outside_budget_bytes=0,
    )


def test_a_plain_total_keeps_the_product() -> None:
    average = _memory(2 * 8192 * 147_456, 147_456).kv_average_per_token(2 * 8192)
    assert average is None
    assert _kv_how(2, 8192, 147_456, average, "bf16") == "2 x 8,192 tokens x 147,456 B (bf16)"


def test_a_windowed_total_says_its_average_and_the_figure_before_windows() -> None:
    average = _memory(18_300_272_640, 901_120).kv_average_per_token(131_072)
    assert average == 139_620
    line = _kv_how(1, 131_072, 901_120, average, "bf16")
    assert line.startswith("1 x 131,072 tokens x 139,620 B on average (bf16;")
    assert "901,120 B a token before them" in line


def test_the_printed_line_multiplies_out_to_the_table() -> None:
    memory = json.loads(run("fit", "gemma-4-31B-it", "--gpu", "H100", "--ctx", "128k", "--json").stdout)[
        "memory"
    ]
    text = run("fit", "gemma-4-31B-it", "--gpu", "H100", "--ctx", "128k").stdout.replace("\n  ", " ")
    (average,) = re.findall(r"131,072 tokens x ([\d,]+) B on average", text)
    assert abs(int(average.replace(",", "")) * 131_072 - memory["kv_cache_bytes"]) < 131_072
