"""A layer without a token mixer (DeciLM no-op attention, Nemotron-H MLP-only blocks)."""

from __future__ import annotations

from gpusize.core.spec import LayerSpec, Mixer, ModelSpec, ParamCounts

__all__ = ["KIND"]


class _NoMixer:
    #: A class constant: a kind is a stateless singleton (no dataclass machinery at start-up).
    per_token_kv = False
    attention_projections = False
    parts: tuple[Mixer, ...] = ()

    def params(self, spec: ModelSpec, layer: LayerSpec) -> ParamCounts:
        return ParamCounts()

    def kv_width(self, spec: ModelSpec, layer: LayerSpec, kv_heads: int) -> int:
        return 0

    def state_elements(self, spec: ModelSpec, layer: LayerSpec) -> int:
        return 0

    def tp_problem(self, spec: ModelSpec, layer: LayerSpec, tp: int) -> str | None:
        return None

    def state_bytes(
        self, spec: ModelSpec, layer: LayerSpec, tp: int, conv_bytes: float, ssm_bytes: float
    ) -> int:
        return 0


KIND = _NoMixer()
