"""Byte-for-byte identity of `quote` (and `serve`, which shares its layouts) between a git rev and this
checkout: stdout, stderr and exit code of each command, with the sources of REV (`git archive`) and
with this checkout, over 1,000 copies of one GPU, 1,000 distinct GPU types (memory, bandwidth and
price each their own), copies of several bundled GPUs, the bundled catalog, --users, --nodes,
--json, SGLang and a MoE model (issue 24, bench/RESULTS.md).

Usage: python bench/quote_identity.py REV     (exit 1 when any command differs)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Catalog entries of each generated GPU file.
GPUS = 1_000
#: Bundled GPUs copied under new names into mixed.yaml (different hardware, some in the SM table).
MIXED = ("H100-SXM", "H200-SXM", "A100-80GB", "L40S", "RTX4090", "MI300X", "B200", "RTX-PRO-6000")


def write_catalogs(folder: Path) -> dict[str, list[str]]:
    """copies.yaml (GPUS copies of H100-SXM), varied.yaml (GPUS distinct types), mixed.yaml (copies of
    MIXED); returns each file's GPU names."""
    import yaml

    bundled = {g["name"]: g for g in yaml.safe_load((ROOT / "data" / "gpus.yaml").read_text())}
    h100 = bundled["H100-SXM"]
    copies = [{**h100, "name": f"Card-{i}", "aliases": [f"card{i}-alt"]} for i in range(GPUS)]
    varied = [
        {
            **h100,
            "name": f"Var-{i}",
            "aliases": [],
            "memory_mib": 40_000 + 97 * i,
            "cuda_visible_gib": None,  # estimated from each one's own total
            "bandwidth_gbps": 1_500 + 3 * i,
            "price_usd_per_hour": round(1.0 + 0.01 * i, 2),
        }
        for i in range(GPUS)
    ]
    mixed = [{**bundled[name], "name": f"{name}-copy{k}", "aliases": []} for name in MIXED for k in range(25)]
    files = {"copies": copies, "varied": varied, "mixed": mixed}
    for stem, entries in files.items():
        (folder / f"{stem}.yaml").write_text(yaml.safe_dump(entries, sort_keys=False))
    return {stem: [e["name"] for e in entries] for stem, entries in files.items()}


def commands(folder: Path, names: dict[str, list[str]]) -> dict[str, list[str]]:
    from gpusize.sources.catalog import Catalogs

    def gpus(stem: str) -> list[str]:
        return ["--gpus-file", str(folder / f"{stem}.yaml"), *(a for n in names[stem] for a in ("--gpu", n))]

    # every bundled GPU that runs every engine (Apple and other one-engine devices run llama.cpp only)
    bundled = [a for g in Catalogs().gpus() if not g.engines for a in ("--gpu", g.name)]
    real = [a for n in ("H100", "H200", "A100-80GB", "L40S", "RTX4090", "MI300X") for a in ("--gpu", n)]
    llama = ["quote", "Llama-3.3-70B", "--ctx", "32k"]
    moe = ["quote", "Qwen3-30B-A3B", "--ctx", "16k"]
    out: dict[str, list[str]] = {}
    for stem in names:
        out[f"llama {stem}"] = [*llama, *gpus(stem)]
        out[f"llama {stem} --json"] = [*llama, *gpus(stem), "--json"]
        out[f"llama {stem} --users 40"] = [*llama, *gpus(stem), "--users", "40"]
        out[f"moe {stem} --json"] = [*moe, *gpus(stem), "--json"]
    out["llama --users 300 --json (varied)"] = [*llama, *gpus("varied"), "--users", "300", "--json"]
    out["llama bundled"] = [*llama, *bundled]
    out["llama bundled --json"] = [*llama, *bundled, "--json"]
    out["moe bundled --users 25"] = [*moe, *bundled, "--users", "25"]
    out["moe bundled sglang --json"] = [*moe, *bundled, "--engine", "sglang", "--json"]
    out["llama default"] = llama
    out["llama real --users 100"] = [*llama, *real, "--users", "100"]
    out["llama real --json"] = [*llama, *real, "--json"]
    out["llama real trtllm"] = [*llama, *real, "--engine", "trtllm"]
    out["mig and unified"] = ["quote", "Qwen3-8B", "--gpu", "H100-SXM-MIG-3g.40gb", "--gpu", "DGX-Spark"]
    out["deepseek --nodes 2"] = ["quote", "DeepSeek-V3", "--gpu", "H100", "--gpu", "H200", "--nodes", "2"]
    out["llama --nodes 2 --json"] = [*llama, "--gpu", "H100", "--gpu", "B200", "--nodes", "2", "--json"]
    copies = ["--gpus-file", str(folder / "copies.yaml")]
    out["unknown name among copies"] = [
        *llama,
        *copies,
        "--gpu",
        "Card-1",
        "--gpu",
        "Card-1000",
        "--gpu",
        "Card-2",
    ]
    out["MIG slice and alias with copies"] = [
        *[
            "quote",
            "Qwen3-8B",
            *copies,
            "--gpu",
            "card7-alt",
            "--gpu",
            "H100-SXM-MIG-3g.40gb",
            "--gpu",
            "h100",
        ]
    ]
    out["serve"] = ["serve", "Qwen3-32B", "--gpu", "H100", "--users", "20"]
    out["serve --json"] = [
        "serve",
        "Llama-3.3-70B",
        "--gpu",
        "A100-80GB",
        "--gpus",
        "8",
        "--users",
        "30",
        "--json",
    ]
    return out


def run(argv: list[str], src: Path, cache: Path) -> tuple[int, bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(src), "GPUSIZE_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    env["COLUMNS"] = "100"
    proc = subprocess.run(
        [sys.executable, "-m", "gpusize", *argv], env=env, capture_output=True, cwd=tempfile.gettempdir()
    )
    return proc.returncode, proc.stdout, proc.stderr


def main() -> None:
    rev = sys.argv[1]
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder, base, cache = Path(tmp), Path(tmp) / "base", Path(tmp) / "cache"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        for name, argv in commands(folder, write_catalogs(folder)).items():
            before, after = run(argv, base, cache), run(argv, ROOT, cache)
            same = before == after
            differ += not same
            print(f"{'same   ' if same else 'DIFFERS'} exit {after[0]} {len(after[1]):>9,} B  {name}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
