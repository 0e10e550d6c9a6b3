"""Derive tests/data/schemas/dynamographdeployment-v1beta1.json from NVIDIA Dynamo's
DynamoGraphDeployment CRD (ai-dynamo/dynamo
deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml): the `v1beta1` version's
spec.versions[].schema.openAPIV3Schema (the served and stored version; v1alpha1 is marked deprecated
in the same file), descriptions dropped (they do not validate anything).

    git -C DYNAMO show COMMIT:deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml > crd.yaml
    python tests/data/schemas/vendor_dynamo.py crd.yaml tests/data/schemas/dynamographdeployment-v1beta1.json
"""

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
assert crd["spec"]["names"]["kind"] == "DynamoGraphDeployment", crd["spec"]["names"]
(version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
assert version["served"] and version["storage"], version["name"]
schema = strip(version["schema"]["openAPIV3Schema"])
Path(sys.argv[2]).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
