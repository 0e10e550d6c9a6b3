"""Engine settings, each declared once (pure), as vLLM declares its config fields.

An `EngineSettings` field carries a `Setting`: the engine's own flag name, the engines that read it,
the help, and its bounds or choices. Everything else is derived from that declaration: the
command-line options (`cli.options.engine_options`), the range checks (`settings_from`), the flag a
refusal names (`SETTING_FLAGS`), the settings an engine accepts (`settings_of`), the JSON workload
keys (the field names) and the flags a launch command prints (`launch_flag`). A new engine flag is
the field in its part (`vllm`, `reserves`, `sglang`, `local`, `trtllm`) and its use in the engine.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from dataclasses import Field, fields
from typing import Any

from gpusize.core.registry import ENGINE_LABELS, ENGINE_NAMES, EngineName
from gpusize.core.releases import Version, parse_version
from gpusize.core.settings.declaration import Setting, assemble_settings, checked, setting, settings_part
from gpusize.core.settings.local import (
    ATTN_IMPLEMENTATIONS,
    SPLIT_MODES,
    TRANSFORMERS_VERSIONS,
    LocalSettings,
)
from gpusize.core.settings.reserves import LORA_DTYPES, PAGED, ReserveSettings
from gpusize.core.settings.sglang import SglangSettings
from gpusize.core.settings.trtllm import TrtllmSettings
from gpusize.core.settings.vllm import VllmSettings
from gpusize.dataclass import kept_hash

__all__ = [
    "ATTN_IMPLEMENTATIONS",
    "ENGINE_LABELS",
    "ENGINE_NAMES",
    "EngineChoice",
    "LORA_DTYPES",
    "SETTING_FLAGS",
    "SPLIT_MODES",
    "TRANSFORMERS_VERSIONS",
    "EngineName",
    "EngineSettings",
    "Setting",
    "declared",
    "launch_env",
    "launch_flag",
    "launch_words",
    "settings_from",
    "setting_of",
    "settings_of",
    "taken_by",
]


@settings_part
class EngineChoice:
    """The engine and its release: the first settings, read by every other."""

    name: EngineName = setting(
        default="vllm",
        flag="--engine",
        engines=ENGINE_NAMES,
        help="vllm (default), sglang, llamacpp (default for .gguf files), transformers, ollama (default for "
        "Ollama tags), trtllm (TensorRT-LLM's PyTorch backend).",
        choices=ENGINE_NAMES,
    )
    #: The engine release to model (None: the newest gpusize models).
    version: str | None = setting(
        default=None,
        flag="--engine-version",
        engines=(*PAGED, "trtllm"),
        help="Engine release to model (default the newest).",
    )


@assemble_settings
class EngineSettings(  # the parts in reverse field order
    TrtllmSettings, LocalSettings, SglangSettings, ReserveSettings, VllmSettings, EngineChoice
):
    """The engine and the settings passed under its own flag names; None means the engine's default.

    Its fields are the parts' in reverse base order: the engine choice, vLLM, the reserves, SGLang,
    the local engines, TensorRT-LLM (the order of the command options and the JSON keys)."""

    #: One value serves every row of a batch that gives the same settings: JSON Lines write its text
    #: once (`reports.serialize.json_lines`).
    __json_shared__ = True

    def given(self) -> tuple[str, ...]:
        """The settings the user set (not left to the engine's default); the engine itself excluded.
        Computed once per settings value (kept in its __dict__, as ModelSpec keeps its hash): one
        request's settings are read for every model `which` plans."""
        known: tuple[str, ...] | None = self.__dict__.get("_given")
        if known is None:
            known = tuple(f.name for f in _DECLARED[1:] if getattr(self, f.name) != f.default)
            object.__setattr__(self, "_given", known)
        return known

    def __hash__(self) -> int:
        """The hash of the fields (the dataclass's own), computed once per value and kept beside
        `_given`: a fit's evaluation cache and its levers hash the settings of every workload they
        see, some twenty-five times a row of a batch (bench/RESULTS.md). Equal settings hash equal."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _VALUES) if known is None else known


_DECLARED: tuple[Field[Any], ...] = tuple(fields(EngineSettings))
_VALUES = operator.attrgetter(*(f.name for f in _DECLARED))


_DECLARED_SETTINGS: tuple[tuple[str, Setting], ...] = tuple(
    (f.name, f.metadata["setting"]) for f in _DECLARED
)


def declared() -> tuple[tuple[str, Setting], ...]:
    """Every setting (the engine first) with its declaration, in declaration order (built once: every
    workload prepared reads it)."""
    return _DECLARED_SETTINGS


#: The command-line flag of each engine setting and the engines it belongs to, for messages.
SETTING_FLAGS: dict[str, tuple[str, str]] = {name: (s.flag, " or ".join(s.engines)) for name, s in declared()}


@functools.cache
def settings_of(engine: EngineName) -> frozenset[str]:
    """The settings `engine` reads: those whose declaration names it (the engine choice aside); once
    per engine."""
    return frozenset(name for name, s in declared()[1:] if engine in s.engines)


def launch_flag(name: str, engine: str | None = None, release: str | None = None) -> str | None:
    """The flag a launch command carries the setting under, None when the command line has none (or,
    given the engine and its release, when the flag came later than that release)."""
    setting = setting_of(name)
    for owner, since in setting.launch_since:
        if owner == engine and release is not None and _before(release, since):
            return None
    return setting.launch


def taken_by(name: str, version: Version) -> bool:
    """Whether release `version` of the setting's engine has its flag (its declaration's `since`)."""
    since = setting_of(name).since
    first = parse_version(since) if since else None
    return first is None or version >= first


def setting_of(name: str) -> Setting:
    """The declaration of the setting `name`."""
    setting: Setting = EngineSettings.__dataclass_fields__[name].metadata["setting"]
    return setting


def launch_env(settings: EngineSettings, version: Version) -> list[str]:
    """The environment assignments a launch command for release `version` starts with: each given
    setting declared with `env` that the release still reads (`env_until`), a boolean as 1 / 0
    (VLLM_USE_V1=0)."""
    out = []
    for name in settings.given():
        env, until = setting_of(name).env, setting_of(name).env_until
        value = getattr(settings, name)
        if env and not (until and not _before(str(version), until)):
            out.append(f"{env}={int(value) if isinstance(value, bool) else value}")
    return out


def launch_words(name: str, value: object) -> list[str]:
    """The value's words on a command line: several for a `many` setting, else one."""
    setting: Setting = EngineSettings.__dataclass_fields__[name].metadata["setting"]
    if isinstance(value, float) and value.is_integer():  # SGLang's --cpu-offload-gb takes an int
        return [str(int(value))]
    text = str(value).upper() if setting.upper else str(value)
    return text.split() if setting.many else [text]


def _before(release: str, since: str) -> bool:
    old, new = parse_version(release), parse_version(since)
    return old is not None and new is not None and old < new


def settings_from(values: Mapping[str, Any], default_engine: EngineName = "vllm") -> EngineSettings:
    """EngineSettings from values as typed (None: not given), each checked against its declaration;
    `default_engine` when the engine is not given. Raises InputError naming the flag and its range."""
    given: dict[str, Any] = {}
    for name, declaration in declared():
        value = values.get(name)
        if value is None:
            continue
        given[name] = checked(value, declaration)
    given.setdefault("name", default_engine)
    return EngineSettings(**given)
