"""`serve --format k8s|compose [-o DIR]` (issue 22, deployment output): every manifest validates
against the real schemas vendored in tests/data/schemas/ (Kubernetes v1.33.0 Deployment and Service,
the LeaderWorkerSet CRD, the compose specification), and the container runs the launch command that
`serve` prints, word for word. In-process (tests.helpers.run_in_process)."""

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

from gpusize.errors import InputError
from gpusize.serving.deploy import SERVER_IMAGES, DeployPlan, kubernetes_manifests
from gpusize.serving.devices import ACCELERATORS, ROCM_IMAGES
from tests.conftest import REFERENCE, ROOT
from tests.gguf_files import llama31_8b_q4_k_m
from tests.helpers import CliResult, run_in_process

SCHEMAS = ROOT / "tests" / "data" / "schemas"
QWEN = ("Qwen3-4B", "--users", "64", "--gpu", "L40S", "--gpus", "4")
DEEPSEEK = ("DeepSeek-V3", "--users", "16", "--gpu", "H200", "--gpus", "8")
#: The same model on AMD GPUs: a replica of 4 MI300X, over nodes of 2 with --node-gpus 2.
DEEPSEEK_AMD = ("DeepSeek-V3", "--users", "16", "--gpu", "MI300X", "--gpus", "8")


def _gpusize(*args: str, cwd: Path | None = None) -> CliResult:
    return run_in_process(*args, env={"NO_COLOR": "1", "COLUMNS": "200"}, cwd=cwd)


@cache
def _validator(kind: str) -> Any:
    """A validator of one object kind against its vendored schema."""
    if kind in ("Deployment", "Service"):
        defs = json.loads((SCHEMAS / "kubernetes-v1.33.0-strict.json").read_text())["$defs"]
        return Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/kind.{kind}"})
    name = {"LeaderWorkerSet": "leaderworkerset-v1.json", "compose": "compose-spec.json"}[kind]
    schema = json.loads((SCHEMAS / name).read_text())
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _valid(doc: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    _validator(kind or doc["kind"]).validate(doc)
    return doc


def _manifests(*args: str, code: int = 0, cwd: Path | None = None) -> list[dict[str, Any]]:
    out = _gpusize("serve", *args, cwd=cwd)
    assert out.code == code, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout)]


def _launch_words(*args: str, cwd: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    out = _gpusize("serve", *args, "--json", cwd=cwd)
    report = json.loads(out.stdout)
    name = report["workload"]["engine"]["name"]
    return report, shlex.split(report["launch"][name]["command"])


def _container(doc: dict[str, Any], template: str = "template") -> dict[str, Any]:
    spec = doc["spec"] if template == "template" else doc["spec"]["leaderWorkerTemplate"]
    containers: list[dict[str, Any]] = spec[template]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def test_the_validators_reject_a_broken_manifest() -> None:
    # the schemas validate for real: a wrong type, an unknown field (strict) and a missing GPU
    # reservation capability each fail
    deployment, service = _manifests(*QWEN, "--format", "k8s")
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["replicas"] = "four"
    with pytest.raises(ValidationError):
        _valid(broken)
    typo = json.loads(json.dumps(deployment))
    typo["spec"]["template"]["spec"]["containers"][0]["comand"] = ["vllm"]
    with pytest.raises(ValidationError):
        _valid(typo)
    (compose,) = _manifests(*QWEN, "--format", "compose")
    first = next(iter(compose["services"].values()))
    first["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] = "gpu"
    with pytest.raises(ValidationError):
        _valid(compose, "compose")
    lws = _manifests(*DEEPSEEK, "--format", "k8s", "--node-gpus", "4")[0]
    lws["spec"]["leaderWorkerTemplate"]["size"] = "two"
    with pytest.raises(ValidationError):
        _valid(lws)


def test_single_node_vllm_is_a_deployment_running_the_printed_command() -> None:
    report, words = _launch_words(*QWEN)
    deployment, service = _manifests(*QWEN, "--format", "k8s")
    _valid(deployment), _valid(service)
    pick = report["recommendation"]
    assert deployment["spec"]["replicas"] == pick["replicas"] == 4
    container = _container(deployment)
    assert container["command"] + container["args"] == words
    assert container["image"] == f"vllm/vllm-openai:v{report['workload']['engine_version']}"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == str(pick["gpus_per_replica"])
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory"}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": 8000}
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"] == labels and service["spec"]["ports"][0]["targetPort"] == 8000


def _gguf(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / "llama.gguf"
    llama31_8b_q4_k_m(path)
    return path


#: Each engine's image on each vendor's GPU, as the engines publish them (serving/devices.py sources).
IMAGES = {
    ("vllm", "H100"): "vllm/vllm-openai:v{version}",
    ("sglang", "H100"): "lmsysorg/sglang:v{version}",
    ("llamacpp", "H100"): "ghcr.io/ggml-org/llama.cpp:server-cuda",
    ("vllm", "MI300X"): "vllm/vllm-openai-rocm:v{version}",
    ("sglang", "MI300X"): "lmsysorg/sglang:v{version}-rocm700-mi30x",
    ("llamacpp", "MI300X"): "ghcr.io/ggml-org/llama.cpp:server-rocm",
    ("vllm", "MI355X"): "vllm/vllm-openai-rocm:v{version}",
    ("sglang", "MI355X"): "lmsysorg/sglang:v{version}-rocm700-mi35x",
    ("llamacpp", "MI355X"): "ghcr.io/ggml-org/llama.cpp:server-rocm",
}


def _program(engine: str, gpu: str, words: list[str]) -> str:
    """Where the image keeps the launch command's first word."""
    rocm = ROCM_IMAGES[engine].program if gpu.startswith("MI") else None
    return rocm or SERVER_IMAGES[engine].program or words[0]


@pytest.mark.parametrize(("engine", "gpu"), sorted(IMAGES))
def test_every_engine_gets_a_valid_deployment_with_its_port_image_and_command(
    engine: str, gpu: str, tmp_path: Path
) -> None:
    model = str(_gguf(tmp_path)) if engine == "llamacpp" else "Qwen3-8B"
    args = (model, "--engine", engine, "--users", "8", "--gpu", gpu, "--gpus", "2")
    report, words = _launch_words(*args)
    deployment, service = [_valid(d) for d in _manifests(*args, "--format", "k8s")]
    container = _container(deployment)
    server = SERVER_IMAGES[engine]
    expected = [_program(engine, gpu, words), *words[1:], *server.listen]
    assert container["command"] + container["args"] == expected
    assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": server.port}
    assert service["spec"]["ports"][0]["port"] == server.port
    version = report["workload"]["engine_version"]
    assert container["image"] == IMAGES[engine, gpu].format(version=version)
    resource = "amd.com/gpu" if gpu.startswith("MI") else "nvidia.com/gpu"
    assert container["resources"]["limits"] == {resource: str(report["recommendation"]["gpus_per_replica"])}
    unconfined = {"seccompProfile": {"type": "Unconfined"}}  # the ROCm device plugin's pod examples
    assert container.get("securityContext") == (unconfined if gpu.startswith("MI") else None)
    assert deployment["spec"]["replicas"] == report["recommendation"]["replicas"]
    if engine == "llamacpp":  # the GGUF file is mounted from the node at the path the command names
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert volumes["model"]["hostPath"] == {"path": model, "type": "File"}
        assert {"name": "model", "mountPath": model, "readOnly": True} in container["volumeMounts"]
        assert words[words.index("-m") + 1] == model
    else:  # a Hub id is the engine's model argument; the token comes from an optional Secret
        assert report["model"]["id"] in words
        assert container["env"][-1]["valueFrom"]["secretKeyRef"]["optional"] is True


def test_multi_node_vllm_is_a_leaderworkerset_started_through_ray() -> None:
    args = (*DEEPSEEK, "--format", "k8s", "--node-gpus", "4")
    report, words = _launch_words(*DEEPSEEK)
    lws, service = [_valid(d) for d in _manifests(*args)]
    template = lws["spec"]["leaderWorkerTemplate"]
    assert report["recommendation"]["gpus_per_replica"] == 8
    assert template["size"] == 2 and lws["spec"]["replicas"] == report["recommendation"]["replicas"]
    leader, worker = _container(lws, "leaderTemplate"), _container(lws, "workerTemplate")
    assert leader["command"] == ["sh"] and leader["args"][0] == "-c"
    script = leader["args"][1]
    assert "multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE)" in script
    assert shlex.split(script.split("; exec ", 1)[1]) == words
    assert "worker --ray_address=$(LWS_LEADER_ADDRESS)" in worker["args"][1]
    assert leader["resources"]["limits"]["nvidia.com/gpu"] == worker["resources"]["limits"]["nvidia.com/gpu"]
    assert leader["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert service["spec"]["selector"]["role"] == "leader"
    assert template["leaderTemplate"]["metadata"]["labels"]["role"] == "leader"


def test_multi_node_sglang_passes_its_own_node_flags() -> None:
    args = (*DEEPSEEK, "--engine", "sglang")
    report, words = _launch_words(*args)
    lws, service = [_valid(d) for d in _manifests(*args, "--format", "k8s", "--node-gpus", "2")]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 4
    dist = ["--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000", "--nnodes", "$(LWS_GROUP_SIZE)"]
    dist += ["--node-rank", "$(LWS_WORKER_INDEX)"]
    leader, worker = _container(lws, "leaderTemplate"), _container(lws, "workerTemplate")
    assert leader["command"] + leader["args"] == [*words, *dist, "--host", "0.0.0.0"]
    assert worker["command"] + worker["args"] == [*words, *dist]
    assert "readinessProbe" in leader and "readinessProbe" not in worker


def test_multi_node_sglang_on_amd_is_a_leaderworkerset_of_rocm_pods() -> None:
    args = (*DEEPSEEK_AMD, "--engine", "sglang")
    report, words = _launch_words(*args)
    lws, service = [_valid(d) for d in _manifests(*args, "--format", "k8s", "--node-gpus", "2")]
    assert report["recommendation"]["gpus_per_replica"] == 4
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    dist = ["--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000", "--nnodes", "$(LWS_GROUP_SIZE)"]
    dist += ["--node-rank", "$(LWS_WORKER_INDEX)"]
    leader, worker = _container(lws, "leaderTemplate"), _container(lws, "workerTemplate")
    assert words[0] == "python"  # run as python3 in the ROCm image, as SGLang's AMD docs start it
    assert leader["command"] + leader["args"] == ["python3", *words[1:], *dist, "--host", "0.0.0.0"]
    assert worker["command"] + worker["args"] == ["python3", *words[1:], *dist]
    version = report["workload"]["engine_version"]
    for pod in (leader, worker):
        assert pod["image"] == f"lmsysorg/sglang:v{version}-rocm700-mi30x"
        assert pod["resources"]["limits"] == {"amd.com/gpu": "2"}
        assert pod["securityContext"] == {"seccompProfile": {"type": "Unconfined"}}
    assert service["spec"]["selector"]["role"] == "leader"
    defs = json.loads((SCHEMAS / "kubernetes-v1.33.0-strict.json").read_text())["$defs"]
    strict = Draft202012Validator({"$defs": defs, "$ref": "#/$defs/io.k8s.api.core.v1.PodTemplateSpec"})
    for name in ("leaderTemplate", "workerTemplate"):
        strict.validate(lws["spec"]["leaderWorkerTemplate"][name])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp"])
def test_compose_on_amd_maps_the_rocm_devices_and_picks_each_service_s_gpus(
    engine: str, tmp_path: Path
) -> None:
    model = str(_gguf(tmp_path)) if engine == "llamacpp" else "Qwen3-8B"
    args = (model, "--engine", engine, "--users", "64", "--gpu", "MI300X", "--gpus", "2")
    report, words = _launch_words(*args)
    (compose,) = _manifests(*args, "--format", "compose")
    _valid(compose, "compose")
    services = list(compose["services"].values())
    pick = report["recommendation"]
    assert len(services) == pick["replicas"]
    amd, rocm = ACCELERATORS["AMD"], ROCM_IMAGES[engine]
    program = [_program(engine, "MI300X", words), *words[1:], *SERVER_IMAGES[engine].listen]
    for i, service in enumerate(services):
        gpus = range(i * pick["gpus_per_replica"], (i + 1) * pick["gpus_per_replica"])
        assert service["entrypoint"] == program
        assert service["devices"] == ["/dev/kfd", "/dev/dri"] == list(amd.devices)
        assert service["security_opt"] == ["seccomp=unconfined"]
        assert service["group_add"] == list(rocm.groups)
        assert f"ROCR_VISIBLE_DEVICES={','.join(map(str, gpus))}" in service["environment"]
        assert "deploy" not in service and service["ipc"] == "host"
    if engine == "llamacpp":  # the image names no groups: the host's ids, asked for when unset
        assert services[0]["group_add"][0].startswith("${VIDEO_GID:?")
    else:
        assert services[0]["group_add"] == ["video"]


def test_compose_is_one_service_per_replica_with_its_own_gpus() -> None:
    report, words = _launch_words(*QWEN)
    (compose,) = _manifests(*QWEN, "--format", "compose")
    _valid(compose, "compose")
    services = list(compose["services"].values())
    assert len(services) == report["recommendation"]["replicas"] == 4
    devices = [s["deploy"]["resources"]["reservations"]["devices"][0] for s in services]
    assert [d["device_ids"] for d in devices] == [["0"], ["1"], ["2"], ["3"]]
    assert all(d["capabilities"] == ["gpu"] for d in devices)
    assert all(s["entrypoint"] == words and s["ipc"] == "host" for s in services)
    assert [s["ports"] for s in services] == [[f"{8000 + i}:8000"] for i in range(4)]


def test_compose_of_replicas_over_servers_is_one_server_s_share() -> None:
    # serve --nodes 2 --gpus 4: four 2-GPU replicas spread over two 4-GPU servers; compose runs on one
    # machine, so the file is one server's two replicas on its GPUs 0-3, to run on each server (it
    # was four services on GPUs 0-7 of a machine the plan does not have)
    args = ("Qwen3-8B", "--users", "64", "--gpu", "L40S", "--nodes", "2", "--gpus", "4")
    report, words = _launch_words(*args)
    assert (report["recommendation"]["replicas"], report["recommendation"]["gpus_per_replica"]) == (4, 2)
    out = _gpusize("serve", *args, "--format", "compose")
    assert out.code == 0, out.stderr
    (compose,) = list(yaml.safe_load_all(out.stdout))
    _valid(compose, "compose")
    services = list(compose["services"].values())
    devices = [s["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] for s in services]
    assert devices == [["0", "1"], ["2", "3"]]
    assert all(s["entrypoint"] == words for s in services)
    assert (
        "run this file on each of the 2 servers of 4 GPUs: the plan's 4 replicas, 2 per server" in out.stdout
    )


def test_dash_o_writes_one_file_per_object(tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    done = _gpusize("serve", *QWEN, "--format", "k8s", "-o", str(out))
    assert done.code == 0, done.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["vllm-qwen3-4b-deployment.yaml", "vllm-qwen3-4b-service.yaml"]
    printed = _gpusize("serve", *QWEN, "--format", "k8s").stdout
    assert printed == "---\n".join((out / name).read_text() for name in files)
    assert done.stdout.count("\n") == 2 and str(out) in done.stdout
    compose = _gpusize("serve", *QWEN, "--format", "compose", "-o", str(out))
    assert compose.code == 0 and _valid(yaml.safe_load((out / "compose.yaml").read_text()), "compose")
    (out / "compose.yaml").chmod(0o444)  # a file the user made read-only is not replaced
    again = _gpusize("serve", *QWEN, "--format", "compose", "-o", str(out))
    assert again.code == 2 and again.stdout == "" and "read-only" in again.stderr


def test_a_hostile_local_path_stays_one_word_and_one_string(tmp_path: Path) -> None:
    # quotes, a newline, a `$(...)`, a `#` and a YAML indicator in the folder name: the YAML still
    # parses to the exact path, each comment stays a comment, and Kubernetes / compose read `$$`
    # as the `$` the engine must get
    config = json.loads((REFERENCE / "configs" / "Qwen__Qwen3-8B.json").read_text())["config"]
    folder = tmp_path / 'it\'s "q"\n$(touch pwned) #x - [y]'
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    args = (str(folder), "--users", "8", "--gpu", "H100", "--gpus", "1")
    _, words = _launch_words(*args)
    assert str(folder) in words
    out = _gpusize("serve", *args, "--format", "k8s")
    assert out.code == 0, out.stderr
    deployment, service = [_valid(d) for d in yaml.safe_load_all(out.stdout)]
    container = _container(deployment)
    assert [w.replace("$$", "$") for w in container["command"] + container["args"]] == words
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["model"]["hostPath"]["path"] == str(folder)
    (compose,) = _manifests(*args, "--format", "compose")
    _valid(compose, "compose")
    service_ = next(iter(compose["services"].values()))
    assert [w.replace("$$", "$") for w in service_["entrypoint"]] == words
    assert service_["volumes"][0]["source"].replace("$$", "$") == str(folder)
    comments = [line for line in out.stdout.splitlines() if line.startswith("#")]
    assert any("\\x0a$(touch pwned)" in line for line in comments)  # the newline is escaped in it


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((*QWEN, "-o", "x"), "--format k8s"),
        ((*QWEN, "--format", "compose", "--node-gpus", "4"), "--format k8s"),
        ((*QWEN, "--format", "k8s", "--json"), "two formats"),
        ((*QWEN, "--format", "k8s", "--node-gpus", "0"), "--node-gpus"),
        ((*DEEPSEEK, "--format", "k8s", "--node-gpus", "3"), "divisor"),
        (("DeepSeek-V3", "--users", "16", "--gpu", "L4", "--gpus", "1", "--format", "k8s"), "no plan"),
        (("Qwen3-8B", "--engine", "llamacpp", "--users", "1", "--gpu", "H100", "--format", "k8s"), "GGUF"),
        ((*DEEPSEEK_AMD, "--format", "k8s", "--node-gpus", "2"), "installs no Ray"),
        (
            ("Qwen3-8B", "--users", "8", "--gpu", "MI300X", "--engine-version", "0.13.0", "--format", "k8s"),
            "0.14.0",
        ),
        (("Qwen3-8B", "--users", "8", "--gpu", "MI250", "--engine", "sglang", "--format", "k8s"), "gfx90a"),
        (
            (
                "Qwen3-8B",
                "--users",
                "8",
                "--gpu",
                "MI300X",
                "--engine",
                "sglang",
                "--engine-version",
                "0.5.4.post1",
            )
            + ("--format", "compose"),
            "0.5.10",
        ),
        (
            ("Llama-3.1-8B", "--users", "64", "--gpu", "MI300X", "--gpus", "8", "--prompt-tokens", "8k")
            + ("--ctx", "16k", "--disaggregate", "--format", "k8s"),
            "CUDA builds",
        ),
    ],
)
def test_nothing_to_deploy_is_one_line_and_exit_2(args: tuple[str, ...], says: str, tmp_path: Path) -> None:
    out = _gpusize("serve", *args, cwd=tmp_path)
    assert out.code == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and says in out.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("gpu", "backend", "fmt", "says"),
    [
        ("M3-Ultra-256GB", None, "k8s", "no container device resource for Apple GPUs"),
        ("M3-Ultra-256GB", None, "compose", "no container device resource for Apple GPUs"),
        ("MI300X", "vulkan", "k8s", "not its Vulkan build"),
        ("MI300X", "vulkan", "compose", "not its Vulkan build"),
        ("H100", "vulkan", "k8s", "server-cuda, not its Vulkan build"),
    ],
)
def test_llamacpp_builds_and_gpus_without_an_image_are_refused(
    gpu: str, backend: str | None, fmt: str, says: str, tmp_path: Path
) -> None:
    # an Apple GPU has no device resource; a Vulkan build has no device facts sourced (its image
    # exists: server-vulkan), so neither is written as a deployment that would not start
    model = str(_gguf(tmp_path))
    args = (model, "--engine", "llamacpp", "--users", "1", "--gpu", gpu, "--format", fmt)
    out = _gpusize("serve", *args, *(("--backend", backend) if backend else ()))
    assert out.code == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and says in out.stderr


def test_llamacpp_over_nodes_and_a_relative_path_are_refused(tmp_path: Path) -> None:
    plan = DeployPlan("llamacpp", "llama.cpp", None, ("llama-server", "-m", "/m.gguf"), 1, 2, 1, "x")
    with pytest.raises(InputError, match="one machine"):
        kubernetes_manifests(plan)
    _gguf(tmp_path)
    base = ("--engine", "llamacpp", "--users", "8", "--gpu", "RTX4090", "--gpus", "2", "--format", "k8s")
    relative = _gpusize("serve", "llama.gguf", *base, cwd=tmp_path)
    assert relative.code == 2 and "absolute" in relative.stderr and relative.stdout == ""


def test_a_batch_row_asking_for_manifests_gets_the_serve_report(tmp_path: Path) -> None:
    # a batch row prints nothing of its own: --format k8s answers with the report, -o is refused
    base = {"command": "serve", "model": "Qwen3-4B", "users": 64, "gpu": "L40S", "gpus": 4}
    rows = [{**base, "format": "k8s"}, {**base, "format": "compose", "output": str(tmp_path / "d")}]
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = _gpusize("batch", str(path), "--json")
    first, second = json.loads(out.stdout)["rows"]
    assert first["exit_code"] == 0 and first["result"]["recommendation"]["replicas"] == 4
    assert first["answer"].startswith("Qwen3-4B on 4x NVIDIA L40S")  # serve's own summary
    assert second["exit_code"] == 2 and "-o DIR" in second["error"]
    assert not (tmp_path / "d").exists()


def test_an_environment_word_of_the_command_is_the_container_s_environment() -> None:
    args = (*QWEN, "--flashinfer-sampler")
    _, words = _launch_words(*args)
    assert words[0] == "VLLM_USE_FLASHINFER_SAMPLER=1"
    deployment, _ = _manifests(*args, "--format", "k8s")
    container = _container(_valid(deployment))
    assert container["command"] + container["args"] == words[1:]
    assert {"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "1"} in container["env"]
    (compose,) = _manifests(*args, "--format", "compose")
    service = next(iter(_valid(compose, "compose")["services"].values()))
    assert service["entrypoint"] == words[1:] and "VLLM_USE_FLASHINFER_SAMPLER=1" in service["environment"]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_leaderworkerset_pod_templates_are_strict_kubernetes_pod_templates(engine: str) -> None:
    # the CRD's embedded PodTemplateSpec keeps unknown fields (a structural schema prunes them), so
    # each template is also checked against Kubernetes v1.33.0's strict PodTemplateSpec
    lws, _ = _manifests(*DEEPSEEK, "--engine", engine, "--format", "k8s", "--node-gpus", "4")
    defs = json.loads((SCHEMAS / "kubernetes-v1.33.0-strict.json").read_text())["$defs"]
    strict = Draft202012Validator({"$defs": defs, "$ref": "#/$defs/io.k8s.api.core.v1.PodTemplateSpec"})
    for name in ("leaderTemplate", "workerTemplate"):
        strict.validate(lws["spec"]["leaderWorkerTemplate"][name])


@pytest.mark.parametrize(
    ("args", "image", "port"),
    [
        (("qwen3:8b", "--users", "4", "--gpu", "L4", "--gpus", "1"), "ollama/ollama:0.12.3", 11434),
        (
            ("Llama-3.1-8B", "--engine", "trtllm", "--users", "4", "--gpu", "H100", "--gpus", "1"),
            "nvcr.io/nvidia/tensorrt-llm/release:1.2.1",
            8000,
        ),
    ],
)
def test_ollama_and_tensorrt_llm_deploy_with_their_images(
    args: tuple[str, ...], image: str, port: int
) -> None:
    """Every serving engine deploys: Ollama's image pinned to the release whose estimate gpusize models,
    TensorRT-LLM's NGC release image with trtllm-serve told to listen beyond localhost."""
    docs = [_valid(d) for d in _manifests(*args, "--format", "k8s")]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = _container(deployment)
    assert container["image"] == image
    assert container["ports"][0]["containerPort"] == port
    if "trtllm" in args:
        assert container["args"][-2:] == ["--host", "0.0.0.0"]
    (compose,) = _manifests(*args, "--format", "compose")
    _valid(compose, "compose")
    assert next(iter(compose["services"].values()))["image"] == image


#: `serve --nodes 2` plans whose one engine spans both servers (the recommendation of each).
LLAMA_405B_NODES = ("Llama-3.1-405B", "--gpu", "H100", "--nodes", "2", "--users", "50")
#: 200 users: where DP x EP over the 16 GPUs is the recommendation (at 50, two TP=8 replicas are)
DEEPSEEK_NODES = ("DeepSeek-R1", "--gpu", "H200", "--nodes", "2", "--users", "200")


def test_a_pipeline_across_servers_is_launched_and_deployed_with_its_stages() -> None:
    # vLLM's pipeline stages are --pipeline-parallel-size (engine/arg_utils.py); the plan is TP=8 x PP=2
    # over two servers of 8 GPUs, so the manifest is a LeaderWorkerSet of two 8-GPU pods started
    # through Ray running exactly the printed command (it was one 16-GPU pod at TP=8 before)
    report, words = _launch_words(*LLAMA_405B_NODES)
    pick = report["recommendation"]
    assert (pick["tensor_parallel"], pick["pipeline_parallel"], pick["gpus_per_replica"]) == (8, 2, 16)
    assert words[words.index("--tensor-parallel-size") + 1] == "8"
    assert words[words.index("--pipeline-parallel-size") + 1] == "2"
    lws, _service = [_valid(d) for d in _manifests(*LLAMA_405B_NODES, "--format", "k8s")]
    assert lws["kind"] == "LeaderWorkerSet" and lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    leader, worker = _container(lws, "leaderTemplate"), _container(lws, "workerTemplate")
    assert shlex.split(leader["args"][1].split("; exec ", 1)[1])[: len(words)] == words
    for pod in (leader, worker):
        assert pod["resources"]["limits"] == {"nvidia.com/gpu": "8"}


def test_data_parallel_experts_across_servers_launch_every_rank_and_write_no_manifest() -> None:
    # vLLM's DP attention with expert parallel: --data-parallel-size 16 --enable-expert-parallel at
    # TP=1, and per server --data-parallel-size-local / --data-parallel-start-rank / --headless
    # (docs/serving/data_parallel_deployment.md); a LeaderWorkerSet's Ray start runs none of that,
    # so the manifest is refused in one line rather than written as one 16-GPU pod at TP=1
    report, words = _launch_words(*DEEPSEEK_NODES)
    pick = report["recommendation"]
    assert (pick["expert_parallel"], pick["tensor_parallel"]) == (16, 1)
    assert words[words.index("--data-parallel-size") + 1] == "16" and "--enable-expert-parallel" in words
    note = report["launch"]["nodes"]["note"]
    for flag in (
        "--data-parallel-size-local 8",
        "--data-parallel-start-rank <8 x server index>",
        "--headless",
    ):
        assert flag in note
    out = _gpusize("serve", *DEEPSEEK_NODES, "--format", "k8s")
    assert out.code == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "no manifest for 1 x DP=16 x EP=16 across servers" in out.stderr


def test_sglang_data_parallel_attention_across_servers_is_not_written() -> None:
    # SGLang runs it with --tp over the whole group (--tp 16 --dp 16 --enable-dp-attention) and sizes
    # --mem-fraction-static for that --tp: not the one-GPU budget the layout was sized with, so the
    # launch says so instead of printing a TP=1 command, and there is nothing to deploy
    out = _gpusize("serve", *DEEPSEEK_NODES, "--engine", "sglang", "--json")
    report = json.loads(out.stdout)
    assert report["recommendation"]["expert_parallel"] == 16
    launch = report["launch"]["sglang"]
    assert launch["command"] is None and launch["note"].startswith("not written: SGLang runs")
    assert "--enable-dp-attention" in report["launch"]["nodes"]["note"]
    refused = _gpusize("serve", *DEEPSEEK_NODES, "--engine", "sglang", "--format", "k8s")
    assert refused.code == 2 and refused.stderr.count("\n") == 1


def test_sglang_tensor_parallel_across_servers_deploys_its_node_flags() -> None:
    args = (*LLAMA_405B_NODES, "--engine", "sglang")
    report, words = _launch_words(*args)
    pick = report["recommendation"]
    assert (pick["tensor_parallel"], pick["gpus_per_replica"], pick["pipeline_parallel"]) == (16, 16, 1)
    assert words[words.index("--tp-size") + 1] == "16"
    # exit 1: SGLang's TP=16 holds fewer than the 50 users at once (the load queues)
    lws, _service = [_valid(d) for d in _manifests(*args, "--format", "k8s", code=1)]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    leader = _container(lws, "leaderTemplate")
    assert (leader["command"] + leader["args"])[: len(words)] == words
    assert leader["resources"]["limits"] == {"nvidia.com/gpu": "8"}
