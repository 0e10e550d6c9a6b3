"""The training searches reuse capacity-limited allocator replays across GPU types
(training/device.py): the suggestions and plans are identical to replaying every candidate."""

from __future__ import annotations

import pytest

from gpusize.core import allocator
from gpusize.sources.catalog import find_gpu, load_gpus
from gpusize.training import device
from gpusize.training import setup as ts
from gpusize.training.plan import evaluate
from gpusize.training.suggest import train_fixes
from tests.helpers import catalog_spec

#: A sample of models, methods and lengths whose suggestions search many GPU types near the limit.
SAMPLE = [
    ("Qwen3-8B", "full", 131072, ()),
    ("Qwen3-8B", "lora", 131072, ()),
    ("Llama-3.1-8B", "full", 32768, ("RTX4090",)),
]


def answers(model: str, method: str, seq: int, gpus: tuple[str, ...]) -> object:
    spec, job = catalog_spec(model), ts.TrainSetup(method=method, seq_tokens=seq)
    asked = tuple(find_gpu(g) for g in gpus) or load_gpus()
    plans = [evaluate(spec, job, gpu, n) for gpu in asked[:2] for n in (1, 8)]
    return plans, train_fixes(spec, job, asked[:1], load_gpus())


@pytest.mark.parametrize(("model", "method", "seq", "gpus"), SAMPLE)
def test_cached_replays_give_the_answers_of_replaying_each(
    monkeypatch: pytest.MonkeyPatch, model: str, method: str, seq: int, gpus: tuple[str, ...]
) -> None:
    device._TIGHT.clear()
    cached = answers(model, method, seq, gpus)
    replays = []

    def each(spec, setup, num_gpus, capacity=None):  # type: ignore[no-untyped-def]
        replays.append(capacity)
        sizes = device._step_sizes(spec, setup, num_gpus)
        trace = device.train_trace(spec, sizes)
        return allocator.replay(trace, expandable_segments=setup.expandable_segments, capacity=capacity)

    monkeypatch.setattr(device, "_replay", each)
    assert answers(model, method, seq, gpus) == cached
    assert replays  # the sample reaches the allocator replay
