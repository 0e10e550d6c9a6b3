"""The house has floors: imports point down only, there is no cycle, and an import inside a function
is kept for heavy optional dependencies and says why (STYLE.md, "Layout").

Read from the source with `ast`, so the test sees every arrow, including imports placed in functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "gpusize"
#: Layers, bottom up; a module may import its own layer and the ones below it, never above.
LAYERS = ["errors", "units", "core", "sources", "serving", "training", "reports", "render", "cli", "api"]
FORBIDDEN = {
    "core": {"sources", "serving", "training", "reports", "render", "cli", "api"},
    "sources": {"serving", "training", "reports", "render", "cli", "api"},
    "serving": {"sources", "training", "reports", "render", "cli", "api"},
    "training": {"sources", "serving", "reports", "render", "cli", "api"},
    "reports": {"render", "cli", "api"},
    "render": {"cli", "api"},
    "units": {"core", "sources", "serving", "training", "reports", "render", "cli", "api"},
    "errors": {"units", "core", "sources", "serving", "training", "reports", "render", "cli", "api"},
}
#: Third-party modules that may be imported inside a function (optional or slow to import).
HEAVY = {"huggingface_hub", "gguf", "pynvml", "pydantic", "importlib"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "package"


def _imports(path: Path) -> list[tuple[str, bool, int]]:
    """(imported gpusize module, inside a function?, line) for every import of a gpusize module."""
    tree = ast.parse(path.read_text())
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    inner = {id(n) for f in functions for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            found += [(n, id(node) in inner, node.lineno) for n in names if n.startswith("gpusize")]
        elif isinstance(node, ast.Import):
            found += [
                (a.name, id(node) in inner, node.lineno) for a in node.names if a.name.startswith("gpusize")
            ]
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target, _, _ in _imports(path):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != module:
                graph[module].add(target)
    return graph


def test_imports_point_down_only() -> None:
    wrong = []
    for module, targets in _graph().items():
        banned = FORBIDDEN.get(_layer(module), set())
        wrong += [f"{module} -> {t}" for t in targets if _layer(t) in banned]
    assert wrong == []


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


def test_function_local_imports_are_heavy_dependencies_with_a_reason() -> None:
    offenders = []
    for module, path in _modules().items():
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
                reason = _explained(lines, node.lineno)
                heavy = top <= HEAVY or (
                    isinstance(node, ast.ImportFrom) and node.module == "gpusize.sources" and reason
                )
                if not heavy or not reason:
                    offenders.append(f"{module}:{node.lineno}: {names}")
    assert offenders == []


def test_every_public_module_declares_all() -> None:
    missing = [
        m for m, p in _modules().items() if "__all__" not in p.read_text() and not m.endswith("__main__")
    ]
    missing = [m for m in missing if not _is_package_docstring_only(_modules()[m])]
    assert missing == []


def _is_package_docstring_only(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return path.name == "__init__.py" and all(isinstance(n, ast.Expr) for n in tree.body)


def _explained(lines: list[str], lineno: int) -> bool:
    """A comment on the import's line, or just above the run of imports it belongs to."""
    if "#" in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and not lines[i].strip().startswith("#"):
        text = lines[i].strip()
        continuation = text.endswith((",", "(")) or text == ")"
        if not (text.startswith(("from ", "import ")) or continuation):
            return False
        i -= 1
    return i >= 0
