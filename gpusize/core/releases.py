"""Engine releases gpusize models, and how a version the user names maps onto one (pure).

The behaviour of each release was read from its published source: every vLLM and SGLang wheel on
PyPI between the first and the newest release of its table below (`vllm/_version.py` names the
upstream commit of each vLLM wheel). Help text and README show the ranges from these tables
(`Releases.span`), never typed by hand. A version inside a supported range that is not a known
release (a patch or a nightly build) is modelled by the newest known release before it, and the
answer says so; a version outside the ranges is refused with the ranges named.
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import field

from gpusize.dataclass import dataclass, kept_hash
from gpusize.errors import InputError

__all__ = ["SGLANG", "TRTLLM", "VLLM", "Release", "Releases", "Version", "parse_version"]

_VERSION = re.compile(r"^v?(\d{1,3})\.(\d{1,3})(?:\.(\d{1,4}))?(?:\.(\d{1,4}))?(?:\.?post(\d{1,3}))?$")


@dataclass(frozen=True, order=True)
class Version:
    """A release number: (major, minor, patch, build), then the .postN number."""

    parts: tuple[int, int, int, int]
    post: int = 0
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.text

    def __hash__(self) -> int:
        """The compared fields' hash, kept (`kept_hash`): each vLLM evaluation looks its release's
        behaviour up by version (bench/RESULTS.md, batch)."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _VERSION_VALUES) if known is None else known


_VERSION_VALUES = operator.attrgetter("parts", "post")


@functools.lru_cache(maxsize=256)
def parse_version(text: str) -> Version | None:
    """'0.19.1' -> Version((0, 19, 1, 0)); '0.10.1.1', '0.4.6.post2' too; None when not a version.
    Cached: the engine models compare releases on every evaluation."""
    match = _VERSION.match(text.strip())
    if not match:
        return None
    major, minor, patch, build, post = (int(g) if g else 0 for g in match.groups())
    return Version((major, minor, patch, build), post, text.strip().removeprefix("v"))


@dataclass(frozen=True)
class Release:
    """The release a plan follows: the version modelled, and a note when it differs from the one named."""

    version: Version
    label: str
    note: str | None = None
    #: The engine's name ("vLLM"); empty for engines whose releases gpusize does not tell apart.
    engine: str = ""

    def __hash__(self) -> int:
        """The fields' hash, kept (`kept_hash`): every workload of a fit holds one, hashed with it."""
        known: int | None = self.__dict__.get("_hash")  # kept: no call
        return kept_hash(self, _RELEASE_VALUES) if known is None else known


_RELEASE_VALUES = operator.attrgetter("version", "label", "note", "engine")


@dataclass(frozen=True)
class Releases:
    """The releases of one engine gpusize models: a closed range, and the known release numbers."""

    engine: str
    known: tuple[str, ...]
    #: True when `known` lists every release (vLLM); False when it lists only the releases where the
    #: modelled behaviour changes (SGLang), so any version in the range is a release.
    exhaustive: bool = True
    #: The release modelled when none is named; None: the newest listed. A release newer than it is
    #: modelled from its source and named with --engine-version until a published start-up log of it
    #: checks the model.
    default: str | None = None

    @functools.cached_property
    def versions(self) -> tuple[Version, ...]:
        out = [parse_version(v) for v in self.known]
        return tuple(sorted(v for v in out if v is not None))

    @property
    def newest(self) -> Version:
        return self.versions[-1]

    @property
    def default_version(self) -> Version:
        """The release modelled when none is named (`default`, else the newest)."""
        found = parse_version(self.default) if self.default else None
        return found if found is not None else self.newest

    @property
    def bounds(self) -> tuple[str, str]:
        """The first release modelled and the newest minor line `resolve` accepts: ('0.10.0', '0.33.x')."""
        high = self.newest
        return str(self.versions[0]), f"{high.parts[0]}.{high.parts[1]}.x"

    @property
    def span(self) -> str:
        """The accepted range as help and README show it: '0.10.0-0.33.x'."""
        return "-".join(self.bounds)

    def last_before(self, first_without: str) -> Version:
        """The newest known release before `first_without` (the last that still has what it removed)."""
        cut = parse_version(first_without)
        assert cut is not None
        return max(v for v in self.versions if v < cut)

    def resolve(self, text: str | None) -> Release:
        """The release to model for `text` (None: the newest modelled): one Release value per text,
        kept on the releases (up to RESOLVED_KEPT), so the rows of a batch share it and its hash; a
        text refused is refused again."""
        kept = self._resolved
        found = kept.get(text)
        if found is None:
            found = self._resolve(text)
            if len(kept) < RESOLVED_KEPT:
                kept[text] = found
        return found

    @functools.cached_property
    def _resolved(self) -> dict[str | None, Release]:
        return {}

    def _resolve(self, text: str | None) -> Release:
        if text is None:
            default = self.default_version
            newer = (
                f"{self.engine} {self.newest}, newer than this default, is modelled from its source and not "
                f"yet checked on a published start-up log: --engine-version {self.newest} if you run it"
                if self.newest != default
                else None
            )
            return Release(default, f"{self.engine} {default}", newer, engine=self.engine)
        wanted = parse_version(text)
        low, high = self.versions[0], self.versions[-1]
        if wanted is None or wanted < low or wanted.parts[:2] > high.parts[:2]:
            shown = text.strip()[:30]
            raise InputError(
                f"--engine-version {shown!r} is not a {self.engine} release gpusize models: "
                f"supported {' to '.join(self.bounds)} (default {self.default_version})"
            )
        if not self.exhaustive or any(v == wanted for v in self.versions):
            return Release(wanted, f"{self.engine} {wanted}", engine=self.engine)
        older = max(v for v in self.versions if v < wanted)
        return Release(
            older,
            f"{self.engine} {older}",
            f"{self.engine} {wanted.text} is not a release gpusize knows: modelled as {older}, the newest "
            "known release before it",
            self.engine,
        )


#: Release values `Releases.resolve` keeps per engine (one per --engine-version text asked).
RESOLVED_KEPT = 256


#: Every vLLM release on PyPI from the first to the newest listed (the wheels read for the behaviour
#: table). 0.34.0 (2026-11-16: its extensible KV cache sizes the pool from the memory free after
#: warmup, `core/engines/vllm/extensible.py`) is modelled from its source and named with
#: --engine-version 0.34.0; the default stays 0.33.0, the newest checked on published start-up logs.
VLLM = Releases(
    "vLLM",
    (
        "0.7.0", "0.7.1", "0.7.2", "0.7.3", "0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.8.4", "0.8.5",
        "0.8.5.post1", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2",
        "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0",
        "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1",
        "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0",
        "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0",
        "0.31.0", "0.32.0", "0.33.0", "0.34.0",
    ),
    default="0.33.0",
)  # fmt: skip

#: SGLang releases on PyPI whose memory settings changed (the era boundaries), from the first to the
#: newest listed; any release between two of them behaves as the older one.
SGLANG = Releases(
    "SGLang",
    (
        "0.4.0", "0.4.0.post1", "0.4.4", "0.4.5.post3", "0.4.6.post2", "0.4.7", "0.4.7.post1",
        "0.4.9.post3", "0.4.10.post2", "0.5.1", "0.5.3", "0.5.4.post1", "0.5.10", "0.5.14", "0.5.16",
        "0.5.20", "0.5.23",
    ),
    exhaustive=False,
)  # fmt: skip

#: TensorRT-LLM releases on PyPI from the first 1.x to the newest (pip index versions tensorrt-llm:
#: 1.2.1, 1.2.0, 1.1.0, 1.0.0 as of 2026-04; the PyTorch backend is the default of trtllm-serve from
#: 1.0). Every release in it, so a patch gpusize does not know is modelled as the one before it.
TRTLLM = Releases("TensorRT-LLM", ("1.0.0", "1.1.0", "1.2.0", "1.2.1"))
