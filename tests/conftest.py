"""Shared fixtures: the real reference data in tests/data/reference (a copy of the project's shared
reference set: configs, engine logs, GPU facts, H200 measurements; read-only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
#: The reference data, copied into the repository so the tests run from any clone.
REFERENCE = Path(__file__).parent / "data" / "reference"
FIXTURES = Path(__file__).parent / "data"


def reference_configs() -> list[Path]:
    return sorted((REFERENCE / "configs").glob("*.json"))


def load_reference(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def engine_records() -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = yaml.safe_load((REFERENCE / "engine-logs.yaml").read_text())
    return records


@pytest.fixture
def llama8b_config() -> dict[str, Any]:
    return load_reference(REFERENCE / "configs" / "meta-llama__Llama-3.1-8B.json")["config"]
