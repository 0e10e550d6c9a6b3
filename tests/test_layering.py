"""The house has floors: imports point down only, there is no cycle, an import inside a function is
kept for heavy optional dependencies and says why (one of our own modules: a "start-up:" reason), and
every module lives in a layer (STYLE.md, "Layout"). The bench scripts share
records and predictors with the tests through helper modules (tests/*_records.py), never by importing
a test module.

Read from the source with `ast`, so the test sees every arrow, including imports placed in functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "gpusize"
BENCH = ROOT / "bench"
#: Layers, bottom up; a module may import its own layer and the ones below it, never above.
#: `dataclass` (the standard library's, with precompiled methods) is below everything.
LAYERS = ["dataclass", "errors", "units", "core", "sources", "serving", "training", "reports", "render"]
LAYERS += ["cli", "api"]
#: STYLE.md's arrows: cli -> render -> reports -> {serving, training} -> core -> units -> errors, with
#: sources beside serving and training building core values: serving, training and reports never
#: import sources (the CLI resolves the model and hands reports core values), reports never import
#: render or cli, core imports nothing above it.
FORBIDDEN = {
    "core": {"sources", "serving", "training", "reports", "render", "cli", "api"},
    "sources": {"serving", "training", "reports", "render", "cli", "api"},
    "serving": {"sources", "training", "reports", "render", "cli", "api"},
    "training": {"sources", "serving", "reports", "render", "cli", "api"},
    "reports": {"sources", "render", "cli", "api"},
    "render": {"cli", "api"},
    "units": {"core", "sources", "serving", "training", "reports", "render", "cli", "api"},
    "dataclass": set(LAYERS) - {"dataclass"},
    "errors": {"units", "core", "sources", "serving", "training", "reports", "render", "cli", "api"},
}
#: Third-party modules that may be imported inside a function (optional or slow to import).
HEAVY = {"huggingface_hub", "gguf", "pynvml", "pydantic", "importlib", "typer"}
#: Standard-library modules a plain command does not need, imported where used ("start-up:" reason).
LAZY_STDLIB = {"csv", "difflib", "html", "shlex", "tempfile", "textwrap", "traceback"}


def _modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        rel = path.relative_to(package.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "package"


def _imports(path: Path, top: str = "gpusize") -> list[tuple[str, bool, int]]:
    """(imported module, inside a function?, line) for every import of a module of package `top`."""
    tree = ast.parse(path.read_text())
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inner = {id(n) for f in functions for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            found += [(n, id(node) in inner, node.lineno) for n in names if n.split(".")[0] == top]
        elif isinstance(node, ast.Import):
            found += [
                (a.name, id(node) in inner, node.lineno) for a in node.names if a.name.split(".")[0] == top
            ]
    return found


def _graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = _modules(package)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target, _, _ in _imports(path):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != module:
                graph[module].add(target)
    return graph


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every arrow of the graph that FORBIDDEN rules out, as 'module -> target'."""
    wrong = []
    for module, targets in sorted(graph.items()):
        banned = FORBIDDEN.get(_layer(module), set())
        wrong += [f"{module} -> {t}" for t in sorted(targets) if _layer(t) in banned]
    return wrong


def _test_modules_imported(path: Path) -> list[str]:
    """The test modules (tests/**/test_*.py) a script imports, as 'file:line: name'."""
    return sorted(
        {
            f"{path.name}:{line}: {name.split('.test_')[0]}.test_{name.split('.test_')[1].split('.')[0]}"
            for name, _, line in _imports(path, "tests")
            if ".test_" in name
        }
    )


def test_imports_point_down_only() -> None:
    assert _upward(_graph()) == []


def test_bench_imports_no_test_module() -> None:
    """bench/ reads the records and predictors from helper modules (tests/vllm_records.py and the
    like) that the tests import too; a test module is pytest's, not a library."""
    wrong = [hit for script in sorted(BENCH.glob("*.py")) for hit in _test_modules_imported(script)]
    assert wrong == []


def test_the_checks_catch_a_forbidden_arrow(tmp_path: Path) -> None:
    """The checkers on a synthetic tree holding each kind of wrong arrow (the reports -> sources one
    at module level, others inside functions) and a right one of every layer."""
    files = {
        "reports/fit.py": "from gpusize.sources.resolve import ResolvedModel\nimport gpusize.core.model\n",
        "reports/which.py": "def f():\n    from gpusize.render import table  # start-up: x\n",
        "serving/quote.py": "import gpusize.sources.catalog\n",
        "training/plan.py": "from gpusize.sources import hub\n",
        "core/plan.py": "from gpusize.units import GIB\nfrom gpusize.serving import quote\n",
        "sources/resolve.py": "from gpusize.core.model import ResolvedModel\n",
        "sources/catalog.py": "",
        "sources/hub.py": "",
        "render/table.py": "from gpusize.reports import fit\n",
        "cli/app.py": "from gpusize.render import table\n",
        "units.py": "from gpusize.errors import GpusizeError\n",
        "core/kvcache.py": (
            "def f():\n    import yaml\n"
            "def g():\n    from gpusize.units import GIB  # because\n"
            "def h():\n    import gguf  # optional package\n"
            "def i():\n    # start-up: loaded only when asked\n    from gpusize.core import model\n"
        ),
        "errors.py": "",
        "core/model.py": "",
        "core/__init__.py": "",
    }
    for rel, text in files.items():
        (tmp_path / "gpusize" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "gpusize" / rel).write_text(text)
    assert _upward(_graph(tmp_path / "gpusize")) == [
        "gpusize.core.plan -> gpusize.serving.quote",
        "gpusize.reports.fit -> gpusize.sources.resolve",
        "gpusize.reports.which -> gpusize.render.table",
        "gpusize.serving.quote -> gpusize.sources.catalog",
        "gpusize.training.plan -> gpusize.sources.hub",
    ]
    assert _local_import_offenders(tmp_path / "gpusize") == [
        "gpusize.core.kvcache:2: ['yaml']",
        "gpusize.core.kvcache:4: ['gpusize.units']",
    ]
    script = tmp_path / "calibrate.py"
    script.write_text(
        "from tests.vllm_records import predict\n"
        "from tests.core.test_conformance import RECORDS\n"
        "from tests.training import test_torch_training as training\n"
        "import tests.core.test_engines\n"
    )
    assert _test_modules_imported(script) == [
        "calibrate.py:2: tests.core.test_conformance",
        "calibrate.py:3: tests.training.test_torch_training",
        "calibrate.py:4: tests.core.test_engines",
    ]


def test_no_import_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    # a package importing its own submodules (`core.engines` -> `core.engines.vllm`) is not a cycle
    real = [
        c
        for c in cycles
        if not all(a.startswith(b) or b.startswith(a) for a, b in zip(c, c[1:], strict=False))
    ]
    assert real == []


def _local_import_offenders(package: Path = PACKAGE) -> list[str]:
    """Imports inside functions that are neither a heavy dependency with a reason nor one of our own
    modules with a "start-up:" reason, as 'module:line: names'."""
    offenders = []
    for module, path in sorted(_modules(package).items()):
        lines = path.read_text().splitlines()
        tree = ast.parse(path.read_text())
        for func in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(func):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                names = (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                )
                top = {n.split(".")[0] for n in names}
                reason = _reason(lines, node.lineno)
                heavy = top <= HEAVY and reason is not None
                ours = top <= {"gpusize"} | LAZY_STDLIB and reason is not None and "start-up:" in reason
                if not heavy and not ours:
                    offenders.append(f"{module}:{node.lineno}: {names}")
    return offenders


def test_function_local_imports_are_heavy_dependencies_with_a_reason() -> None:
    assert _local_import_offenders() == []


def test_a_new_concept_gets_a_module_in_its_layer() -> None:
    """No new top-level file or package: everything under gpusize/ is a layer (or the entry points)."""
    entries = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()
    }
    assert entries - {"__init__", "__main__"} == set(LAYERS)


def test_every_public_module_declares_all() -> None:
    missing = [
        m for m, p in _modules().items() if "__all__" not in p.read_text() and not m.endswith("__main__")
    ]
    missing = [m for m in missing if not _is_package_docstring_only(_modules()[m])]
    assert missing == []


def _is_package_docstring_only(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return path.name == "__init__.py" and all(isinstance(n, ast.Expr) for n in tree.body)


def _reason(lines: list[str], lineno: int) -> str | None:
    """The comment on the import's line, or the one just above the run of imports it belongs to."""
    if "#" in lines[lineno - 1]:
        return lines[lineno - 1].split("#", 1)[1]
    i = lineno - 2
    while i >= 0 and not lines[i].strip().startswith("#"):
        text = lines[i].strip()
        continuation = text.endswith((",", "(")) or text == ")"
        if not (text.startswith(("from ", "import ")) or continuation):
            return None
        i -= 1
    return lines[i].strip() if i >= 0 else None
