"""Derive tests/data/schemas/leaderworkerset-v1.json from the LeaderWorkerSet CRD
(kubernetes-sigs/lws config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml):
spec.versions[0].schema.openAPIV3Schema, descriptions dropped (they do not validate anything)."""

import json
import sys
from pathlib import Path

import yaml


def strip(node: object) -> object:
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if not (k == "description" and isinstance(v, str))}
    if isinstance(node, list):
        return [strip(x) for x in node]
    return node


crd = yaml.safe_load(Path(sys.argv[1]).read_text())
version = crd["spec"]["versions"][0]
assert version["name"] == "v1", version["name"]
schema = strip(version["schema"]["openAPIV3Schema"])
Path(sys.argv[2]).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
