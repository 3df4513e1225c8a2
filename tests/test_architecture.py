"""The package's import graph, read from the source with `ast`: no import cycle, no arrow uphill between the layers
of docs/architecture.md, no alias module, and a package re-exports only its own modules' names.

Every import counts, the ones inside functions too (a local import is for a heavy dependency, never for dodging a
cycle), and importing `a.b.c` from outside package `a.b` also runs `a.b/__init__.py`, so it is an edge to it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "murphy_lab"

# docs/architecture.md, "Layers": a module may import its own layer (no cycle) and the layers below it
LAYERS = [
    (
        "core",
        [
            "murphy_lab",
            "tree",
            "credit",
            "prune",
            "grpo",
            "prefix",
            "paired",
            "prompts",
            "cli",
            "examples",
            "suggest",
            "export",
            "fields",
            "lazy",
        ],
    ),
    ("tasks, executor, policy", ["executor", "policy", "tasks", "smoke"]),
    ("rollout, modes", ["rollout", "modes", "scoring", "scaffolds", "evaluate", "viz"]),
    ("toy world", ["toy"]),
    ("profiles, config", ["profiles", "config", "trl_args", "runfolder", "preflight", "models"]),
    ("trainer", ["trainer", "train", "eval_cli", "merge"]),
    ("methods", ["methods", "baselines"]),
    ("experiments", ["experiments"]),
]
LAYER = {top: i for i, (_, tops) in enumerate(LAYERS) for top in tops}


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = modules()


def _resolve(name: str) -> str:
    """The module a dotted name lives in (`murphy_lab.tree.Node` -> `murphy_lab.tree`)."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _package(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def imports(module: str) -> set[str]:
    """The modules `module` imports (every import statement), with the package __init__ files they run."""
    out = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if not name.startswith("murphy_lab"):
                continue
            target = _resolve(name)
            out.add(target)
            parent = target.rpartition(".")[0]
            while parent and not _package(module).startswith(parent):  # __init__ files run on the way in
                out.add(parent)
                parent = parent.rpartition(".")[0]
    out.discard(module)
    return out


GRAPH = {m: imports(m) for m in MODULES}


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYER[parts[1] if len(parts) > 1 else parts[0]]


def test_every_module_has_a_layer():
    missing = []
    for m in MODULES:
        try:
            layer(m)
        except KeyError:
            missing.append(m)
    assert missing == []


def test_the_import_graph_has_no_cycle():
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert cycles == []


def test_no_import_goes_uphill():
    uphill = sorted(
        f"{m} ({LAYERS[layer(m)][0]}) -> {t} ({LAYERS[layer(t)][0]})"
        for m, targets in GRAPH.items()
        for t in targets
        if layer(t) > layer(m)
    )
    assert uphill == []


def test_the_experiments_layer_imports_no_baseline():
    """Methods are found through the registry (murphy_lab.methods), not imported by the layer that runs them."""
    assert [
        (m, t)
        for m, ts in GRAPH.items()
        if m.startswith("murphy_lab.experiments")
        for t in ts
        if t.startswith("murphy_lab.baselines")
    ] == []


def test_no_module_is_an_alias_of_another():
    """A module that only imports names (or swaps itself in sys.modules) is a second import path for them."""
    aliases = []
    for m, path in MODULES.items():
        if path.name in ("__init__.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text())
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        only_imports = body and all(isinstance(n, (ast.Import, ast.ImportFrom)) or _is_all(n) for n in body)
        if only_imports or "sys.modules[__name__]" in path.read_text():
            aliases.append(m)
    assert aliases == []


def _is_all(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)


@pytest.mark.parametrize("package", sorted(m for m, p in MODULES.items() if p.name == "__init__.py"))
def test_a_package_exports_only_its_own_modules_names(package):
    tree = ast.parse(MODULES[package].read_text())
    exported = set()
    for node in tree.body:
        if _is_all(node):
            exported = {e.value for e in node.value.elts}
    foreign = sorted(
        a.asname or a.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and node.module
        and not node.module.startswith(package + ".")
        and node.module != package
        for a in node.names
        if (a.asname or a.name) in exported
    )
    assert foreign == []
