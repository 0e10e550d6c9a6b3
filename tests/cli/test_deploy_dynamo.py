"""`serve --disaggregate --format k8s`: the split as an NVIDIA Dynamo DynamoGraphDeployment, validated
against Dynamo's own CRD schema (tests/data/schemas/dynamographdeployment-v1beta1.json, vendored from
ai-dynamo/dynamo) and the strict Kubernetes v1.33.0 PodTemplateSpec; every worker runs the printed
launch command of its pool, every engine flag of which exists in the vLLM release the Dynamo release
ships (tests/data/engine_flags.yaml)."""

from __future__ import annotations

import json
import shlex
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.validators import validator_for

from gpusize.core.releases import parse_version
from gpusize.serving.dynamo import DYNAMO_BACKENDS, DYNAMO_RELEASES
from tests.conftest import REFERENCE, ROOT
from tests.helpers import CliResult, run_in_process
from tests.serving.test_launch_flags import problems

SCHEMAS = ROOT / "tests" / "data" / "schemas"
PD = (
    "Llama-3.1-8B",
    "--users",
    "64",
    "--gpu",
    "H100",
    "--gpus",
    "8",
    "--prompt-tokens",
    "8k",
    "--ctx",
    "16k",
    "--disaggregate",
    "--engine-version",
    "0.31.0",
)


def _gpusize(*args: str) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "200"})


@cache
def _graph_validator() -> Any:
    schema = json.loads((SCHEMAS / "dynamographdeployment-v1beta1.json").read_text())
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


@cache
def _pod_validator() -> Any:
    defs = json.loads((SCHEMAS / "kubernetes-v1.33.0-strict.json").read_text())["$defs"]
    return Draft202012Validator({"$defs": defs, "$ref": "#/$defs/io.k8s.api.core.v1.PodTemplateSpec"})


def _graph(*args: str) -> dict[str, Any]:
    out = _gpusize("serve", *args, "--format", "k8s")
    assert out.code == 0, out.stderr
    (doc,) = list(yaml.safe_load_all(out.stdout))
    assert isinstance(doc, dict)
    return doc


def _components(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in doc["spec"]["components"]}


def _words(component: dict[str, Any]) -> list[str]:
    (container,) = component["podTemplate"]["spec"]["containers"]
    env = [f"{e['name']}={e['value']}" for e in container.get("env", []) if "value" in e]
    return env + container["command"] + container["args"]


def test_a_disaggregated_plan_is_a_valid_dynamo_graph_running_the_printed_commands() -> None:
    report = json.loads(_gpusize("serve", *PD, "--json").stdout)
    split, launch = report["disaggregated"], report["launch"]
    doc = _graph(*PD)
    _graph_validator().validate(doc)
    assert doc["apiVersion"] == "nvidia.com/v1beta1" and doc["kind"] == "DynamoGraphDeployment"
    assert doc["spec"]["backendFramework"] == "vllm"
    parts = _components(doc)
    assert set(parts) == {"frontend", "prefill", "decode"}
    for role in ("frontend", "prefill", "decode"):
        assert _words(parts[role]) == shlex.split(launch[role]["command"]), role
        _pod_validator().validate(parts[role]["podTemplate"])
        (container,) = parts[role]["podTemplate"]["spec"]["containers"]
        assert container["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
    for role in ("prefill", "decode"):
        pool = split[role]
        assert parts[role]["replicas"] == pool["instances"]
        (container,) = parts[role]["podTemplate"]["spec"]["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == str(pool["tensor_parallel"])
        # /dev/shm is the operator's (shared_memory.go): a mount of ours there would be dropped
        assert all(m["mountPath"] != "/dev/shm" for m in container["volumeMounts"])
        words = shlex.split(launch[role]["command"])
        assert words[:3] == ["python3", "-m", "dynamo.vllm"]
        assert words[words.index("--disaggregation-mode") + 1] == role
        assert words[words.index("--tensor-parallel-size") + 1] == str(pool["tensor_parallel"])
    assert parts["frontend"]["replicas"] == 1
    gpus = sum(split[r]["instances"] * split[r]["tensor_parallel"] for r in ("prefill", "decode"))
    assert gpus == 8


def test_the_schema_rejects_a_broken_graph() -> None:
    doc = _graph(*PD)
    for path, value in ((("type",), "prefil"), (("replicas",), "two")):
        broken = json.loads(json.dumps(doc))
        broken["spec"]["components"][1][path[0]] = value
        with pytest.raises(ValidationError):
            _graph_validator().validate(broken)
    typo = json.loads(json.dumps(doc))
    typo["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["comand"] = ["python3"]
    with pytest.raises(ValidationError):
        _pod_validator().validate(typo["spec"]["components"][1]["podTemplate"])


@pytest.mark.parametrize("release", DYNAMO_RELEASES, ids=lambda r: r.version)
def test_every_worker_flag_exists_in_the_vllm_the_dynamo_release_ships(release: Any) -> None:
    pin = release.engines["vllm"]
    args = [*PD[:-1], pin]
    launch = json.loads(_gpusize("serve", *args, "--json").stdout)["launch"]
    assert launch["frontend"]["note"].startswith(f"NVIDIA Dynamo {release.version} ")
    backend = DYNAMO_BACKENDS["vllm"]
    for role in ("prefill", "decode"):
        words = shlex.split(launch[role]["command"])
        role_words = list(backend.roles[role])
        assert words[-len(role_words) :] == role_words
        engine_words = words[3 : -len(role_words)] + role_words[2:]  # --kv-transfer-config is vLLM's
        assert engine_words[0] == "--model"
        as_vllm = shlex.join(["vllm", "serve", engine_words[1], *engine_words[2:]])
        assert problems("vllm", as_vllm, parse_version(pin)) == [], (role, as_vllm)


def test_a_vllm_release_no_dynamo_ships_has_no_graph_and_says_why() -> None:
    args = [a for a in PD if a not in ("--engine-version", "0.31.0")]  # the newest vLLM, 0.33.0
    out = _gpusize("serve", *args, "--format", "k8s")
    assert out.code == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1
    assert "no NVIDIA Dynamo release gpusize knows ships vLLM 0.33.0" in out.stderr
    assert "0.31.0 (Dynamo 1.6.1)" in out.stderr and "--engine-version" in out.stderr
    text = _gpusize("serve", *args).stdout
    assert "Launch (frontend): no NVIDIA Dynamo release" in text and "Launch (prefill)" not in text


def test_compose_of_a_disaggregated_plan_is_refused_in_one_line() -> None:
    out = _gpusize("serve", *PD, "--format", "compose")
    assert out.code == 2 and out.stdout == ""
    assert "give --format k8s" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_worker_wider_than_a_node_is_refused() -> None:
    # Llama-3.1-70B at 8k prompts: one prefill and one decode worker of TP=4 each
    wide = ("Llama-3.1-70B", "--users", "32", *PD[3:])
    split = json.loads(_gpusize("serve", *wide, "--json").stdout)["disaggregated"]
    assert split["prefill"]["tensor_parallel"] == split["decode"]["tensor_parallel"] == 4
    _graph_validator().validate(_graph(*wide, "--node-gpus", "4"))
    out = _gpusize("serve", *wide, "--format", "k8s", "--node-gpus", "2")
    assert out.code == 2 and out.stdout == ""
    assert "multi-node Dynamo worker is not expressed" in out.stderr


def test_dash_o_writes_the_graph_as_printed(tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    done = _gpusize("serve", *PD, "--format", "k8s", "-o", str(out))
    assert done.code == 0, done.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["vllm-llama-3-1-8b-dynamographdeployment.yaml"]
    assert (out / files[0]).read_text() == _gpusize("serve", *PD, "--format", "k8s").stdout


def test_a_hostile_local_path_stays_one_word_in_every_worker(tmp_path: Path) -> None:
    # quotes, a newline and a `$(...)` in the folder name: each worker's --model is the exact path
    # (`$$`, which Kubernetes reads as `$`), mounted at that path, and the comments stay comments
    config = json.loads((REFERENCE / "configs" / "Qwen__Qwen3-8B.json").read_text())["config"]
    folder = tmp_path / 'it\'s "q"\n$(touch pwned) #x'
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    args = (str(folder), *PD[1:])
    launch = json.loads(_gpusize("serve", *args, "--json").stdout)["launch"]
    out = _gpusize("serve", *args, "--format", "k8s")
    assert out.code == 0, out.stderr
    (doc,) = list(yaml.safe_load_all(out.stdout))
    _graph_validator().validate(doc)
    for role, part in _components(doc).items():
        _pod_validator().validate(part["podTemplate"])
        assert [w.replace("$$", "$") for w in _words(part)] == shlex.split(launch[role]["command"])
        if role != "frontend":
            (container,) = part["podTemplate"]["spec"]["containers"]
            assert container["args"][1].replace("$$", "$") == str(folder)
            volumes = {v["name"]: v for v in part["podTemplate"]["spec"]["volumes"]}
            assert volumes["model"]["hostPath"]["path"] == str(folder)
    comments = [line for line in out.stdout.splitlines() if line.startswith("#")]
    assert any("\\x0a$(touch pwned)" in line for line in comments)


def test_an_engine_without_a_dynamo_worker_has_no_graph_and_says_so() -> None:
    args = [a for a in PD if a not in ("--engine-version", "0.31.0")]
    out = _gpusize("serve", *args, "--engine", "sglang", "--format", "k8s")
    assert out.code == 2 and out.stdout == "" and len(out.stderr.strip().splitlines()) == 1
    assert "no NVIDIA Dynamo worker for SGLang" in out.stderr and "drop --disaggregate" in out.stderr
    launch = json.loads(_gpusize("serve", *args, "--engine", "sglang", "--json").stdout)["launch"]
    assert not {"frontend", "decode"} & set(launch)  # no command to run; the split's note says why
    assert launch["prefill"]["command"] is None and "not for SGLang" in launch["prefill"]["note"]


def test_an_environment_word_of_the_command_is_each_worker_s_environment() -> None:
    launch = json.loads(_gpusize("serve", *PD, "--flashinfer-sampler", "--json").stdout)["launch"]
    parts = _components(_graph(*PD, "--flashinfer-sampler"))
    for role in ("prefill", "decode"):
        words = shlex.split(launch[role]["command"])
        assert words[0] == "VLLM_USE_FLASHINFER_SAMPLER=1" and words[1:4] == ["python3", "-m", "dynamo.vllm"]
        (container,) = parts[role]["podTemplate"]["spec"]["containers"]
        assert {"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "1"} in container["env"]
        assert _words(parts[role]) == words
