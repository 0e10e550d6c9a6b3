"""Check tests/data/engine_flags.yaml against the released wheels of vLLM and SGLang on PyPI.

For every row (one era of one flag) of the vLLM and SGLang tables:
- the flag, as a quoted string ('--name' or "--name") in the files its engine declares its
  arguments in (FLAG_FILES), is in every release of [since, until);
- it is absent in the release just before `since`, when `since` is later than the first release the
  table covers (a `since` at the start of the range only says "already there");
- it is absent at `until`, when no later era of the same flag follows;
- each listed choice, as a quoted string, is in the files that declare that flag's values
  (CHOICE_FILES) in every release of the era, and a choice an era adds is not quoted there in the
  release just before the era. A choice found there may still be quoted for another
  reason; a choice missing is certain.
Environment rows are checked by the variable's name in vllm/envs.py. A row marked `generated: true` is
the `--no-` form argparse's BooleanOptionalAction builds from a switch: its switch is checked instead.

The releases: vLLM, every release gpusize models (gpusize/core/releases.py VLLM, the full list); SGLang,
every final release on PyPI between the first and the newest of core/releases.py SGLANG (its table lists
only the era boundaries). The release before a `since` is the PyPI release before it.

TensorRT-LLM is not checked: pypi.org holds only stub sdists of tensorrt-llm, and its real wheels live
on https://pypi.nvidia.com.

A dev tool (network): never imported or run by the tests. Run: python bench/verify_engine_flags.py
[vllm|sglang]; prints one line per problem and a count per engine; exit 1 when a row is wrong.
"""

from __future__ import annotations

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
from release_sources import names, read, release_versions  # noqa: E402  (a script beside this one)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gpusize.core.releases import SGLANG, VLLM  # noqa: E402

TABLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_flags.yaml"
PROJECT = {"vllm": "vllm", "sglang": "sglang"}
#: Where each engine declares its command-line flags (in the wheel).
FLAG_FILES = {
    "vllm": ("vllm/engine/arg_utils.py",),
    # 0.5.14 on: ServerArgs fields annotated in server_args.py, then (0.5.20 on) in arg_groups/fields/.
    "sglang": ("sglang/srt/server_args.py", "sglang/srt/arg_groups/"),
}
ENV_FILES = {"vllm": ("vllm/envs.py",)}
#: Where the values a flag takes are declared, over the releases (files missing in a release are skipped).
CHOICE_FILES: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "--dtype": (
            "vllm/engine/arg_utils.py",
            "vllm/config.py",
            "vllm/config/__init__.py",
            "vllm/config/model.py",
        ),
        "--quantization": ("vllm/model_executor/layers/quantization/__init__.py",),
        "--load-format": (
            "vllm/engine/arg_utils.py",
            "vllm/config.py",
            "vllm/config/load.py",
            "vllm/model_executor/model_loader/__init__.py",
        ),
        "--kv-cache-dtype": ("vllm/engine/arg_utils.py", "vllm/config.py", "vllm/config/cache.py"),
        "--lora-dtype": (
            "vllm/engine/arg_utils.py",
            "vllm/config.py",
            "vllm/config/__init__.py",
            "vllm/config/lora.py",
        ),
    },
    "sglang": {
        **{
            flag: ("sglang/srt/server_args.py", "sglang/srt/arg_groups/")
            for flag in (
                "--dtype",
                "--quantization",
                "--load-format",
                "--kv-cache-dtype",
                "--mamba-ssm-dtype",
            )
        },
        "--speculative-algorithm": (
            "sglang/srt/server_args.py",
            "sglang/srt/speculative/spec_info.py",
            "sglang/srt/arg_groups/",
        ),
    },
}


def releases(engine: str) -> list[str]:
    """The releases every row is checked in, oldest first."""
    if engine == "vllm":
        return list(VLLM.known)
    low, high = Version(SGLANG.known[0]), Version(SGLANG.known[-1])
    return [v for v in release_versions("sglang") if low <= Version(v) <= high]


def _text(engine: str, version: str, files: tuple[str, ...]) -> str:
    """The files' text in one release; a name ending in '/' stands for every .py file under it."""
    project = PROJECT[engine]
    folders = tuple(f for f in files if f.endswith("/"))
    wanted = [f for f in files if not f.endswith("/")]
    if folders:
        wanted += [n for n in names(project, version) if n.startswith(folders) and n.endswith(".py")]
    parts = (read(project, version, name) for name in wanted)
    return "\n".join(p for p in parts if p is not None)


def _quoted(text: str, word: str) -> bool:
    return f'"{word}"' in text or f"'{word}'" in text


def _declared(engine: str, text: str, flag: str) -> bool:
    """Whether `flag` is declared in `text`: as a quoted string (argparse add_argument, an alias), or,
    for SGLang from 0.5.14 (ServerArgs fields annotated `A[T, ...]`, sglang/srt/arg_groups/), as the
    field whose name it is derived from (`tp_size: A[` -> --tp-size)."""
    if _quoted(text, flag):
        return True
    field = flag.removeprefix("--").replace("-", "_")
    return engine == "sglang" and re.search(rf"^    {field}: A\[", text, re.MULTILINE) is not None


def _in(first: str | None, version: str, until: str | None) -> bool:
    v = Version(version)
    return (first is None or Version(first) <= v) and (until is None or v < Version(until))


def _before(engine: str, since: str) -> str | None:
    """The PyPI release of `engine` just before `since`."""
    older = [v for v in release_versions(PROJECT[engine]) if Version(v) < Version(since)]
    return older[-1] if older else None


def check_row(engine: str, name: str, eras: list[dict[str, Any]], index: int, env: bool) -> list[str]:
    """Problems with era `index` of flag (or environment variable) `name`."""
    era, files = eras[index], (ENV_FILES if env else FLAG_FILES)[engine]
    since, until, covers = era.get("since"), era.get("until"), releases(engine)
    out: list[str] = []
    # an argparse-generated `--no-` form (BooleanOptionalAction, `generated: true`): no source quotes it,
    # so its switch's own flag is checked in its place
    if era.get("generated"):
        name = "--" + name.removeprefix("--no-")
    inside = [v for v in covers if _in(since, v, until)]
    for version, text in zip(inside, _texts(engine, inside, files), strict=True):
        if not _declared(engine, text, name):
            out.append(f"{name} [{since}, {until}): absent in {version}")
    choice_files = CHOICE_FILES.get(engine, {}).get(name)
    if choice_files and not env:
        for version, text in zip(inside, _texts(engine, inside, choice_files), strict=True):
            missing = [c for c in era.get("choices", []) if not _quoted(text, str(c))]
            if missing:
                out.append(f"{name} [{since}, {until}): choices {missing} absent in {version}")
    if since is not None and Version(since) > Version(covers[0]) and index == 0:
        before = _before(engine, since)
        if before is not None and _declared(engine, _text(engine, before, files), name):
            out.append(f"{name}: since {since}, but present in {before}")
    if choice_files and not env and index > 0 and since is not None:
        added = [c for c in era.get("choices", []) if c not in eras[index - 1].get("choices", [])]
        before = _before(engine, since)
        text = _text(engine, before, choice_files) if before else ""
        found = [c for c in added if _quoted(text, str(c))]
        if found:
            out.append(f"{name}: choices {found} from {since}, but quoted in {before}")
    if until is not None and index == len(eras) - 1 and _declared(engine, _text(engine, until, files), name):
        out.append(f"{name}: until {until}, but present in {until}")
    return out


def _texts(engine: str, versions: list[str], files: tuple[str, ...]) -> list[str]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda v: _text(engine, v, files), versions))


def check(engine: str) -> tuple[int, list[str]]:
    """(rows checked, problems) for one engine's table."""
    spec = yaml.safe_load(TABLE.read_text())[engine]
    rows, problems = 0, []
    for env, group in ((True, spec.get("env", {})), (False, spec["flags"])):
        for name, eras in group.items():
            for index in range(len(eras)):
                rows += 1
                problems += check_row(engine, name, eras, index, env)
    return rows, problems


def main(argv: list[str]) -> int:
    failed = False
    for engine in argv or list(PROJECT):
        rows, problems = check(engine)
        print("\n".join(problems))
        print(f"{engine}: {rows} rows over {len(releases(engine))} releases, {len(problems)} problems")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
