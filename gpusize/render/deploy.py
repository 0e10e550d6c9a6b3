"""Manifests as YAML: one document per object, its comment lines above it (escaped, so no name or
path can end a comment and start YAML), documents separated by `---`. `yaml.safe_dump` quotes every
string that needs it: a model id with a quote, a colon or a newline stays one string."""

from __future__ import annotations

import json

import yaml

from gpusize.render.text import safe
from gpusize.serving.deploy import Manifest

__all__ = ["manifest_text", "manifests_text"]

#: Lines this long are not folded (a launch command reads better on one line).
_WIDTH = 4096


def manifest_text(manifest: Manifest) -> str:
    """One YAML document: `# ` comment lines, then the body in the order it was built."""
    comments = "".join(f"# {safe(line, limit=2000)}\n" for line in manifest.comments)
    plain = json.loads(json.dumps(manifest.body))  # no shared objects, so no YAML anchors and aliases
    body = yaml.safe_dump(plain, sort_keys=False, default_flow_style=False, width=_WIDTH)
    return comments + body


def manifests_text(manifests: list[Manifest]) -> str:
    """Every document, separated by `---` lines (what `kubectl apply -f -` reads)."""
    return "---\n".join(manifest_text(m) for m in manifests)
