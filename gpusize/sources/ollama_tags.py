"""Ollama model tags (`qwen3:32b`, `llama3.3:70b-instruct-q8_0`) resolved through data/ollama_tags.yaml.

A row names the catalog model and the GGUF file type the tag ships; a variant `<tag>-<words>-<type>`
of a listed tag takes its type from the last word (q8_0, q4_K_M, fp16). A name with a colon that
matches neither is refused with the closest tags.

A row's `source` is a checkable reference (an `https://` URL, then what it shows) or
`unverified (why)`: a row no public page was found for; sizing its tag then carries UNVERIFIED_NOTE."""

from __future__ import annotations

import difflib
import functools
import re

import yaml

from gpusize.core.gguf_quant import ftype_name
from gpusize.dataclass import dataclass
from gpusize.errors import CatalogError, UnknownNameError
from gpusize.sources.catalog import data_dir

__all__ = ["UNVERIFIED_NOTE", "OllamaTag", "find_tag", "is_tag", "load_tags"]

#: Ollama variant suffixes for unquantized files, as gpusize dtypes.
_FLOAT_SUFFIX = {"fp16": "fp16", "bf16": "bf16", "f16": "fp16"}

#: What an answer for a tag whose row is `source: unverified (...)` says (the row's dtype is a guess).
UNVERIFIED_NOTE = "Ollama tag table row not verified against ollama.com; the quantization is assumed"
#: The two forms a row's source may take: a URL, or `unverified (reason)`.
_SOURCE = re.compile(r"^(https://\S+.*|unverified \(.+\))$", re.DOTALL)


@dataclass(frozen=True)
class OllamaTag:
    """One row of the Ollama tag table: the tag, the catalog model and dtype it ships, and its source."""

    tag: str
    model: str
    dtype: str
    source: str
    #: The download size ollama.com lists for the tag (decimal GB), None for a suffix variant.
    size_gb: float | None = None
    #: The dtype comes from a row no public source was found for (`source: unverified (...)`).
    assumed: bool = False

    @property
    def notes(self) -> tuple[str, ...]:
        """What an answer for this tag says about where its quantization comes from."""
        return (UNVERIFIED_NOTE,) if self.assumed else ()


def is_tag(reference: str) -> bool:
    """Whether a MODEL argument is written as an Ollama tag (name:tag, no path or Hub id)."""
    name, colon, tag = reference.partition(":")
    return bool(colon and name and tag) and "/" not in reference and "\\" not in reference


@functools.cache
def load_tags() -> dict[str, OllamaTag]:
    path = data_dir() / "ollama_tags.yaml"
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not all(
            isinstance(row.get(k), str) for k in ("tag", "model", "dtype", "source")
        ):
            raise CatalogError(f"{path.name}: [{i}]: needs tag, model, dtype and source strings")
        size = row.get("size_gb")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int | float) or size <= 0):
            raise CatalogError(f"{path.name}: [{i}].size_gb: must be a positive number")
        source = row["source"].strip()
        if not _SOURCE.match(source):
            raise CatalogError(f"{path.name}: [{i}].source: must be an https:// URL or 'unverified (why)'")
        assumed = source.startswith("unverified")
        out[row["tag"].lower()] = OllamaTag(row["tag"], row["model"], row["dtype"], source, size, assumed)
    return out


def find_tag(reference: str) -> OllamaTag:
    """The row of a tag or of a listed tag's quantized variant; UnknownNameError with close tags."""
    tags = load_tags()
    key = reference.strip().lower()
    if key in tags:
        return tags[key]
    base, _, suffix = key.rpartition("-")
    dtype = _FLOAT_SUFFIX.get(suffix) or ftype_name(suffix)
    name = key.partition(":")[0]
    for tag, row in tags.items():
        if dtype and base.startswith(tag) and base[len(tag) : len(tag) + 1] in ("", "-"):
            return OllamaTag(reference.strip(), row.model, dtype, f"{row.source}; type from the tag's suffix")
    close = difflib.get_close_matches(key, list(tags), n=2, cutoff=0.6)
    same = [t for t in tags if t.partition(":")[0] == name]
    shown = ascii(reference[:60])[1:-1]
    raise UnknownNameError("Ollama tag", shown, close or same[:3])
