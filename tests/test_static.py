"""The house rules that a reader cannot see at a glance, checked on every run (issue 13):

- ruff (the classic default rules plus bugbear and blind-except) and mypy (check_untyped_defs on the whole
  package, strict on cards, rules, the log I/O and the statistics), both from pyproject.toml, report nothing;
- the layers of ARCHITECTURE.md hold (import-linter, `.importlinter`): no module imports a layer above its own;
- no import cycle at all between modules, no import of another module's private (`_name`) names, and no
  function-local import of the package's own modules (the way a cycle hides) outside the command line, which
  imports its stages lazily so that `auditor --help` starts fast.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "auditor"
LAZY_OK = {"auditor.cli", "auditor.__main__"}  # the CLI imports each command's stages when the command runs


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(module: str, node: ast.ImportFrom, is_pkg: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path) -> list[tuple[str, ast.AST, bool]]:
    """(imported module, node, inside a function) of every import of the package's own modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    out: list[tuple[str, ast.AST, bool]] = []

    def visit(node: ast.AST, in_func: bool, in_type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            f = in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            tc = in_type_checking or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            if isinstance(child, ast.ImportFrom):
                target = _resolve(module, child, is_pkg)
                if target.startswith("auditor") and not in_type_checking:
                    out.append((target, child, in_func))
            elif isinstance(child, ast.Import):
                for a in child.names:
                    if a.name.startswith("auditor") and not in_type_checking:
                        out.append((a.name, child, in_func))
            visit(child, f, tc)

    visit(tree, False, False)
    return out


def test_no_function_local_import_of_the_package():
    mods = _modules()
    bad = [f"{mods[m].relative_to(ROOT)}:{node.lineno} imports {target} inside a function"
           for m in mods if m not in LAZY_OK
           for target, node, in_func in _imports(m, mods[m]) if in_func]
    assert not bad, "\n".join(bad)


def test_no_import_of_another_modules_private_names():
    mods = _modules()
    bad = []
    for m, path in mods.items():
        for target, node, _ in _imports(m, path):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and target != m:
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}.{a.name}")
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_modules():
    """Tarjan's strongly connected components over the module-level imports (type-only imports excluded)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for target, node, _ in _imports(m, path):
            names = [target]
            if isinstance(node, ast.ImportFrom):  # `from pkg import module` imports the submodule
                names += [f"{target}.{a.name}" for a in node.names]
            for t in names:
                if t in mods and t != m:
                    graph[m].add(t)
    # a package's own __init__ importing its submodules is not a cycle of theirs: drop package -> child edges
    for m in graph:
        graph[m] = {t for t in graph[m] if not t.startswith(m + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    found = str(exe) if exe.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: `pip install -e '.[test]'` installs it")
    return found


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    r = _run([_tool("ruff"), "check", "auditor", "tests", "bench"])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_mypy_is_clean():
    r = _run([_tool("mypy"), "--cache-dir", str(ROOT / ".mypy_cache")])
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]


def test_layers_hold():
    r = _run([_tool("lint-imports"), "--no-cache"])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
