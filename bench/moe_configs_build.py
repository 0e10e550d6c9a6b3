"""Generate gpusize/serving/moe_config_files.py: the tuned fused-MoE Triton configs each release ships.

vLLM ships `vllm/model_executor/layers/fused_moe/configs/E=<E>,N=<N>,device_name=<GPU>[,dtype=...]
[,block_shape=[n,k]].json` and SGLang `sglang/srt/layers/moe/fused_moe_triton/configs/triton_<ver>/...`
under the same rule (`get_config_file_name` in vLLM's fused_moe.py and SGLang's
fused_moe_triton_config.py; SGLang writes the block shape with a space, "[128, 128]", and looks in
every triton_<ver> folder it supports). Without a file for the layer's shape the kernel runs
`get_default_config`'s tiles. The file names are read out of the release wheels on PyPI (central
directory only: `release_sources.names`), for the releases the throughput records ran (RELEASES,
with the record each stands for) and the newest release gpusize models; kept are the files for the
GPUs of `moe_config.DEVICE_NAME` (the rest are never looked up).

Run (network):  python bench/moe_configs_build.py   then ruff format the module it writes.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import release_sources  # noqa: E402

from gpusize.serving.moe_config import DEVICE_NAME, normalise  # noqa: E402

#: Where each engine keeps the files (SGLang moved them to moe_runner/triton_utils/ after 0.5.9).
FOLDER = {
    "vllm": ("vllm/model_executor/layers/fused_moe/configs/",),
    "sglang": (
        "sglang/srt/layers/moe/fused_moe_triton/configs/",
        "sglang/srt/layers/moe/moe_runner/triton_utils/configs/",
    ),
}
#: The releases read, and why: the throughput records' releases (the wheel nearest a record that ran a
#: main-branch build), and each engine's newest release in core/releases.py.
RELEASES = {
    "vllm": (
        "0.10.1",  # vllm-issue22331 (the gpt-oss image of Aug 2025)
        "0.10.2",  # gpustack gpt-oss-120b H100
        "0.11.0",  # gpustack GLM-4.6, DeepSeek-R1 (H200), gpt-oss (A100)
        "0.17.0",  # InferenceX PR 1061 / 1092 (MI300X)
        "0.19.1",  # vLLM blog gpt-oss-20b
        "0.33.0",  # newest release gpusize models
    ),
    "sglang": (
        "0.5.2",  # lm-sys gpt-oss (Aug 2025 main, >= 0.5.2)
        "0.5.3",  # first release holding PR 10404's H200 Qwen3-Next configs (main of 2025-09-13)
        "0.5.4.post2",  # gpustack gpt-oss-20b
        "0.5.8",  # last release before main of 2026-02-03 (PR 18195, before its config)
        "0.5.9",  # InferenceX PR 870 (v0.5.x, Mar 2026)
        "0.5.23",  # newest release gpusize models
    ),
}
OUT = Path(__file__).resolve().parent.parent / "gpusize" / "serving" / "moe_config_files.py"


def shipped(engine: str, version: str) -> list[str]:
    folders = FOLDER[engine]
    devices = set(DEVICE_NAME.values())
    keys = set()
    for name in release_sources.names(engine, version):
        if not name.startswith(folders) or not name.endswith(".json"):
            continue
        key = normalise(name.rsplit("/", 1)[1].removesuffix(".json"))
        fields = dict(part.split("=", 1) for part in key.split(",") if "=" in part)
        if fields.get("device_name") in devices:
            keys.add(key)
    return sorted(keys)


def main() -> int:
    found = {(engine, v): shipped(engine, v) for engine, versions in RELEASES.items() for v in versions}
    names = sorted({k for keys in found.values() for k in keys})
    index = {k: i for i, k in enumerate(names)}
    lines = [
        '"""Tuned fused-MoE Triton config files each engine release ships (generated data).',
        "",
        "Written by bench/moe_configs_build.py from the release wheels on PyPI (file names of",
        "vllm/model_executor/layers/fused_moe/configs/ and sglang/srt/layers/moe/fused_moe_triton/configs/",
        "triton_*/), kept for the GPUs of `moe_config.DEVICE_NAME`; keys as `moe_config.normalise` writes",
        'them. Do not edit by hand."""',
        "",
        "",
        '__all__ = ["NAMES", "SHIPPED"]',
        "",
        "#: Every file name read, once; each release lists the indices of its files.",
        "NAMES: tuple[str, ...] = (",
        *(f"    {k!r}," for k in names),
        ")",
        "_FILES: dict[tuple[str, str], str] = {",
    ]
    for (engine, version), keys in found.items():
        print(f"{engine} {version}: {len(keys)} files", file=sys.stderr)
        row = " ".join(str(index[k]) for k in keys) + " "
        chunks = textwrap.wrap(row, 96, drop_whitespace=False)
        lines.append(f"    ({engine!r}, {version!r}): (")
        lines.extend(f"        {c!r}" for c in chunks)
        lines.append("    ),")
    lines += [
        "}",
        "#: (engine, release) -> the config files it ships (normalised names).",
        "SHIPPED: dict[tuple[str, str], frozenset[str]] = {",
        "    key: frozenset(NAMES[int(i)] for i in row.split()) for key, row in _FILES.items()",
        "}",
    ]
    OUT.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
