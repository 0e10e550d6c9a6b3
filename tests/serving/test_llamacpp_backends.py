"""llama.cpp's builds (CUDA, ROCm, Vulkan, Metal): which GPUs each runs on, which one a plan runs by
default, the speed constants each is estimated with, and how an answer names it.

The rules have no logged figure of their own (the fitted constants are checked by
tests/serving/test_throughput_conformance.py): they follow llama.cpp's build docs (docs/build.md:
GGML_CUDA needs an NVIDIA GPU, GGML_HIP AMD's ROCm, GGML_METAL Apple silicon; Vulkan any GPU with a
Vulkan driver) and its images (docs/docker.md: server-cuda, server-rocm, server-vulkan)."""

from __future__ import annotations

import pytest

from gpusize.core.engines import engine
from gpusize.core.engines.llamacpp import BACKENDS, backend, backend_problem
from gpusize.core.settings.local import LLAMACPP_BACKENDS
from gpusize.dataclass import replace
from gpusize.serving import calibrated, load, throughput
from gpusize.serving.launch import llamacpp_command
from gpusize.sources.catalog import find_gpu
from tests.helpers import catalog_spec, run_in_process, workload

SPEC = catalog_spec("Llama-3.1-8B")


def _work(build: str | None = None):  # type: ignore[no-untyped-def]
    return workload(SPEC, 4096, engine_name="llamacpp", backend=build)


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        ("H100-SXM", "cuda"),
        ("RTX4090", "cuda"),
        ("MI300X", "rocm"),
        ("Strix-Halo-128GB", "rocm"),
        ("M2-Ultra-192GB", "metal"),
    ],
)
def test_a_plan_runs_the_gpu_vendors_own_build_by_default(gpu: str, expected: str) -> None:
    assert backend(_work().engine, find_gpu(gpu)) == expected


def test_the_engines_backends_are_the_settings_choices() -> None:
    """One table (`BACKENDS`) holds each build's label, vendor and how it is made; its names are the
    choices --backend takes."""
    assert tuple(BACKENDS) == LLAMACPP_BACKENDS


def test_a_vendor_without_a_build_of_its_own_runs_vulkan() -> None:
    other = replace(find_gpu("RTX4090"), name="Arc-X", full_name="Intel Arc X", vendor="Intel")
    assert backend(_work().engine, other) == "vulkan"
    assert backend_problem(other, _work("vulkan")) is None
    assert "--backend vulkan" in (backend_problem(other, _work("cuda")) or "")


@pytest.mark.parametrize("build", sorted(BACKENDS))
@pytest.mark.parametrize("gpu", ["H100-SXM", "MI300X", "M2-Ultra-192GB"])
def test_a_build_runs_only_on_its_vendors_gpus(build: str, gpu: str) -> None:
    card = find_gpu(gpu)
    problem = backend_problem(card, _work(build))
    runs = BACKENDS[build].vendor in (None, card.vendor)
    assert (problem is None) == runs
    if problem:  # the message names the build, the GPU and what runs there
        assert card.full_name in problem and "vulkan" in problem


def test_a_refused_build_is_a_refused_plan_before_any_arithmetic() -> None:
    cand = engine("llamacpp").evaluate(SPEC, find_gpu("H100-SXM"), 1, _work("metal"))
    assert not cand.fits and "Metal build runs on Apple GPUs" in (cand.reason or "")


def test_each_build_is_estimated_with_its_own_constants() -> None:
    strix = find_gpu("Strix-Halo-128GB")
    rocm = throughput.decode_step(SPEC, _work(), strix, 1, 1, 512)
    vulkan = throughput.decode_step(SPEC, _work("vulkan"), strix, 1, 1, 512)
    assert rocm is not None and vulkan is not None and rocm.step_s != vulkan.step_s
    assert throughput.speed_on(_work("vulkan"), strix) is calibrated.engine_speed("llamacpp", "vulkan")
    assert throughput.speed_on(_work(), find_gpu("H100-SXM")) is calibrated.ENGINE_SPEED["llamacpp"]
    assert throughput.speed_on(_work(), find_gpu("M2-Ultra-192GB")).build == "metal"


def test_the_rocm_floor_factor_scales_only_the_nvidia_fitted_floors() -> None:
    """ROCM_KERNEL_FLOOR_FACTOR is vLLM's and SGLang's ROCm builds' (fitted over their NVIDIA floors):
    llama.cpp's ROCm and Vulkan floors are fitted on AMD GPUs themselves."""
    amd = find_gpu("MI300X")
    assert throughput.kernel_floor_factor(amd) == calibrated.ROCM_KERNEL_FLOOR_FACTOR
    assert throughput.kernel_floor_factor(amd, calibrated.engine_speed("llamacpp", "rocm")) == 1.0
    assert (
        throughput.kernel_floor_factor(amd, calibrated.engine_speed("vllm"))
        == calibrated.ROCM_KERNEL_FLOOR_FACTOR
    )


def test_a_build_without_constants_borrows_the_engines_and_says_so() -> None:
    built = replace(_work(), engine=replace(_work().engine, backend="vulkan"))
    saved = calibrated.ENGINE_SPEED.pop("llamacpp/vulkan")
    try:
        gpu = find_gpu("RTX4090")
        assert throughput.speed_on(built, gpu) is calibrated.ENGINE_SPEED["llamacpp"]
        assert "no Vulkan record: the CUDA build's constants" in throughput.assumptions(SPEC, gpu, built)
    finally:
        calibrated.ENGINE_SPEED["llamacpp/vulkan"] = saved
    assert "Vulkan build" in throughput.assumptions(SPEC, find_gpu("RTX4090"), built)


@pytest.mark.parametrize(
    ("engine_name", "vendor", "build", "group"),
    [
        ("llamacpp", "NVIDIA", "cuda", "llamacpp"),
        ("llamacpp", "NVIDIA", "vulkan", "llamacpp/vulkan"),
        ("llamacpp", "AMD", "rocm", "llamacpp/rocm"),
        ("llamacpp", "Apple", "metal", "llamacpp/metal"),
        ("vllm", "AMD", None, "vllm/AMD"),
        ("vllm", "NVIDIA", None, "vllm"),
    ],
)
def test_an_answers_range_is_its_builds_group(
    engine_name: str, vendor: str, build: str | None, group: str
) -> None:
    assert load.speed_group(engine_name, vendor, build) == group


def test_the_launch_line_names_the_build_asked_and_takes_no_backend_flag() -> None:
    line = llamacpp_command("/m/model.gguf", "gguf", _work("vulkan"), 33)
    assert line.command is not None and "--backend" not in line.command
    assert "server-vulkan" in (line.note or "") and "GGML_VULKAN" in (line.note or "")
    assert llamacpp_command("/m/model.gguf", "gguf", _work(), 33).note is None


def test_cli_backend_on_the_wrong_gpu_says_which_build_runs_there() -> None:
    proc = run_in_process(
        "fit", "Llama-3.1-8B", "--engine", "llamacpp", "--backend", "cuda", "--gpu", "MI300X"
    )
    assert proc.code == 1
    assert "--backend rocm or vulkan" in " ".join(proc.stdout.split())


def test_cli_backend_is_refused_for_other_engines() -> None:
    proc = run_in_process("fit", "Llama-3.1-8B", "--backend", "vulkan", "--gpu", "H100")
    assert proc.code == 2 and proc.stderr.count("\n") == 1


def test_manifests_ask_each_vendor_s_resource_and_refuse_a_gpu_without_one() -> None:
    """The manifests request the GPU vendor's device resource and run the engine's image for it
    (serving/devices.py): amd.com/gpu and the ROCm image on an AMD GPU; an Apple GPU has neither, so
    its plan is refused (one line) rather than written as a deployment that never schedules."""
    proc = run_in_process("serve", "Llama-3.1-8B", "--gpu", "MI300X", "--users", "4", "--format", "k8s")
    assert proc.code == 0 and "amd.com/gpu" in proc.stdout and "nvidia.com/gpu" not in proc.stdout
    apple = run_in_process("serve", "qwen3:8b", "--gpu", "M3-Ultra-256GB", "--users", "1", "--format", "k8s")
    assert apple.code == 2 and "Apple GPUs" in apple.stderr and apple.stderr.count("\n") == 1


def test_which_takes_llamacpps_settings_and_refuses_another_engines_once() -> None:
    """`which --engine llamacpp --backend vulkan` plans the Vulkan build; a flag of another engine is
    bad input for the whole query (exit 2, one line), not a miss of every catalog model."""
    vulkan = run_in_process(
        "which", "--gpu", "Strix-Halo-128GB", "--engine", "llamacpp", "--backend", "vulkan"
    )
    assert vulkan.code == 0 and "llama.cpp's Vulkan build" in " ".join(vulkan.stdout.split())
    wrong = run_in_process("which", "--gpu", "H100", "--backend", "vulkan")
    assert wrong.code == 2 and wrong.stderr.count("\n") == 1 and "--engine llamacpp" in wrong.stderr


def test_a_build_fitted_on_the_device_drops_the_devices_uncalibrated_caveat() -> None:
    """The GPU's caveat ("fitted on NVIDIA discrete GPUs only") is not said where llama.cpp's build has
    constants of its own measured on that memory (Strix Halo under ROCm); it still is for llama.cpp's
    CUDA build on a DGX Spark (its constants are the discrete GPUs'). llama.cpp's ROCm build on an
    MI300X says its constants were measured on other memory; vLLM on an AMD Instinct GPU names the
    ROCm floors' fit and the GPUs it was made on (`reports.common.speed_note`)."""
    from gpusize.reports.common import device_notes

    strix, spark, mi300x = find_gpu("Strix-Halo-128GB"), find_gpu("DGX-Spark"), find_gpu("MI300X")
    assert strix.speed_caveat and spark.speed_caveat
    assert strix.speed_caveat not in device_notes([strix], _work().engine)
    assert spark.speed_caveat in device_notes([spark], _work().engine)
    rocm_on_hbm = device_notes([mi300x], replace(_work().engine, backend="rocm"))
    assert rocm_on_hbm == [
        f"speed figures for {mi300x.full_name} are uncalibrated: the constants of this build were fitted "
        f"on {calibrated.ENGINE_SPEED['llamacpp/rocm'].fitted_on}, none on HBM3 memory"
    ]
    vllm = workload(SPEC, 4096).engine
    (on_mi300x,) = device_notes([mi300x], vllm)
    assert "the NVIDIA fit with ROCm's kernel floors" in on_mi300x and on_mi300x.endswith("on MI300X records")
    (on_mi355x,) = device_notes([find_gpu("MI355X")], vllm)
    assert on_mi355x.endswith("fitted on MI300X records, none on MI355X")
    assert strix.speed_caveat not in device_notes([strix])  # no speed shown: no caveat
