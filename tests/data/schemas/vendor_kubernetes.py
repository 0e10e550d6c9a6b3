"""Derive tests/data/schemas/kubernetes-v1.33.0-strict.json from the v1.33.0-local-strict folder of
the kubernetes-validate 1.37.0 wheel (PyPI; kubernetes_validate/kubernetes-json-schema/, generated
from the Kubernetes v1.33.0 OpenAPI): the Deployment and Service schemas as `$defs/kind.<Kind>` with
every definition they reach, `$ref`s made local, `$id`/`$schema` of each part and descriptions dropped
(neither validates anything). Usage: python vendor_kubernetes.py FOLDER OUT.json"""

import json
import sys
from pathlib import Path

PREFIX = "/api/_definitions.json#/$defs/"


def strip(node: object, todo: list[str], seen: set[str]) -> object:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in ("description", "$id", "$schema") and isinstance(value, str):
                continue
            if key == "$ref":
                name = value[len(PREFIX) :] if value.startswith(PREFIX) else value.rsplit("/", 1)[-1]
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
                out[key] = "#/$defs/" + name
                continue
            out[key] = strip(value, todo, seen)
        return out
    if isinstance(node, list):
        return [strip(x, todo, seen) for x in node]
    return node


src = Path(sys.argv[1])
defs = json.loads((src / "_definitions.json").read_text())["$defs"]
todo: list[str] = []
seen: set[str] = set()
out = {}
for kind, name in (("Deployment", "deployment-apps-v1.json"), ("Service", "service-v1.json")):
    out["kind." + kind] = strip(json.loads((src / name).read_text()), todo, seen)
while todo:
    name = todo.pop()
    out[name] = strip(defs[name], todo, seen)
doc = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": dict(sorted(out.items()))}
Path(sys.argv[2]).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
