"""The event-built safe load (`sources.yaml_events`) gives exactly what `yaml.load` with the same safe
loader gives, or raises the same error class, on every construct a catalog may hold; what it does not
build itself (merge keys, tags, complex keys, several documents) goes to PyYAML."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusize.sources import catalog, yaml_events

DOCUMENTS = [
    "",
    "# only a comment\n",
    "- 1\n- 0o17\n- 0x1f\n- 1_000\n- -3\n- +4\n- 1.5\n- 1e3\n- .inf\n- -.Inf\n- .nan\n",
    "- yes\n- No\n- on\n- OFF\n- true\n- ~\n- null\n- ''\n- '1'\n- \"true\"\n- !!str 12\n- ! 12\n",
    "- 2026-08-22\n- 2026-08-22 10:00:00\n- 2026-13-45\n- !!binary aGVsbG8=\n- !!int '7'\n- !!float 3\n",
    "a: &x {b: 1, c: [1, 2]}\nd: *x\ne: &s hello\nf: *s\n",
    "base: &b {x: 1, y: 2}\nmerged:\n  <<: *b\n  y: 3\n",
    "- &r [1, *r]\n",
    "? [1, 2]\n: v\n",
    "? &k [1]\n: v\nk2: *k\n",
    "a: 1\na: 2\n",
    "1: int key\n2026-01-01: date key\nnull: none key\n",
    "--- 1\n--- 2\n",
    "- !!python/object:os.system 'echo hi'\n",
    "- !!set {a, b}\n- !!omap [a: 1]\n- !!seq [1]\n- !!map {a: 1}\n",
    "- *undefined\n",
    "- &a 1\n- &a 2\n- *a\n",
    "- &a [1]\n- &a {x: 2}\n",
    "[1, 2\n",
    "a: b: c\n",
    "- =\n- {=: 1}\n",
    "just a scalar\n",
    "key: 'quoted: with colon'\nlong: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
    "\ufeff- bom\n",
]


def _outcome(load: Any, text: str | bytes) -> Any:
    try:
        return ("value", repr(load(text)))  # repr: nan == nan, and types (1 vs 1.0 vs True) differ
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: PyYAML's own, for 2026-13-45
        return ("error", type(exc).__name__, str(exc).splitlines()[0])


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_same_value_or_error_as_pyyaml(text: str) -> None:
    def library(t: str | bytes) -> Any:
        return yaml.load(t, Loader=yaml_events.Loader)  # noqa: S506 - the safe loader only

    for form in (text, text.encode()):
        assert _outcome(yaml_events.safe_load, form) == _outcome(library, form)


def test_the_bundled_catalogs_load_as_pyyaml_loads_them() -> None:
    for name in ("gpus.yaml", "models.yaml"):
        raw = (catalog.data_dir() / name).read_bytes()
        assert yaml_events.safe_load(raw) == yaml.load(raw, Loader=yaml_events.Loader)  # noqa: S506


def test_aliases_share_one_object_so_the_expansion_check_stays_linear(tmp_path: Path) -> None:
    data = yaml_events.safe_load("a: &x [1, 2]\nb: *x\n")
    assert data["a"] is data["b"]
    bad = yaml_events.safe_load("- .nan\n")
    assert math.isnan(bad[0])


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.dates()
    | st.text(max_size=12)
    | st.sampled_from(
        ["yes", "no", "on", "~", "1e3", "0x1f", "0o7", ".inf", "2026-01-01", "<<", "=", "&a", "*a"]
    )
)


@settings(max_examples=150, deadline=None)
@given(
    value=st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_SCALARS, inner, max_size=4),
        max_leaves=24,
    ),
    flow=st.sampled_from([None, True, False]),
)
def test_any_dumped_document_loads_as_pyyaml_loads_it(value: Any, flow: bool | None) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True)
    library = yaml.load(text, Loader=yaml_events.Loader)  # noqa: S506 - the safe loader only
    assert repr(yaml_events.safe_load(text)) == repr(library)
    assert repr(yaml_events.safe_load(text.encode())) == repr(library)
