"""A pytest test file as plain cases: pytest's own collection rules, spelled out, so no test is dropped.

KodCode checks a solution by running its pytest file. Our executor runs test cases (statements) against a program
in another process, so each test pytest would collect becomes one case, and the pytest features that KodCode files
use are expanded into plain Python:

- ``def test_*()`` at module level: the case ``test_x()``;
- ``@pytest.mark.parametrize(names, values)`` (stacked: their product; ``pytest.param(...)`` unwrapped): one case per
  parameter set when ``values`` is a literal list or tuple, or a module-level name bound once to one
  (``test_x(a=1, b=2)``), else one case that loops over the values at run time;
- fixtures the file defines (``@pytest.fixture``, also ones that use other fixtures, and generator fixtures: their
  first ``yield``; teardown code after it does not run): the argument is the fixture function's value
  (``test_x(data=data())``);
- ``class Test*`` without ``__init__`` (pytest's rule): one case per ``test*`` method on a fresh instance, after
  ``setup_method``/``setup_class`` where the class defines them; ``unittest.TestCase`` classes as unittest runs
  them (``setUpClass``, ``setUp``);
- ``@pytest.mark.skip``: not collected, as pytest skips it (counted); ``@pytest.mark.skipif(<expression>)``: the case
  runs the test when the expression is false (when it is true the case passes empty, where pytest reports a skip:
  the one difference, and only in the pass fraction).

What cannot run this way is refused with its reason (the loader counts it; nothing is dropped silently): pytest's
built-in fixtures (``capsys``, ``tmp_path``, ``monkeypatch``, ...: they act on the test process, and the program
runs in another one), ``xfail``, other decorators on tests, ``setup_module``-style hooks, ``import solution``.
`pytest_suite` returns the suite and a census (`PytestCensus`) of what it expanded.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from murphy_lab.executor.types import TestSuite

BUILTIN_FIXTURES = frozenset(
    "capsys capfd capsysbinary capfdbinary caplog tmp_path tmpdir tmp_path_factory tmpdir_factory monkeypatch "
    "request recwarn pytestconfig cache record_property record_testsuite_property doctest_namespace mocker "
    "benchmark subtests".split()
)
HOOKS = ("setup_module", "teardown_module", "setup_function", "teardown_function")
# run-time helpers put at the end of the setup (test-side code)
HELPERS = '''

def _pytest_value(value):
    """A fixture's value: a generator fixture's first yield (its teardown does not run)."""
    import types as _types

    return next(value) if isinstance(value, _types.GeneratorType) else value


def _pytest_row(value, n):
    """One parameter set of a parametrize list as a tuple of n values (pytest.param unwrapped)."""
    if type(value).__name__ == "ParameterSet":
        value = value.values
    return (value,) if n == 1 else tuple(value)
'''


class Unrunnable(ValueError):
    """A pytest file (or one of its tests) that cannot run as plain cases; the message is the reason."""


@dataclass
class PytestCensus:
    """What a file needed: tests by kind, cases made, tests pytest would skip."""

    plain: int = 0  # module-level test functions without arguments or decorators
    parametrized: int = 0  # tests with parametrize (each gives one case per parameter set)
    fixtures: int = 0  # tests that take fixtures of the file
    in_classes: int = 0  # test methods of Test* / unittest classes
    skipped: int = 0  # @pytest.mark.skip: pytest does not run them either
    cases: int = 0

    @property
    def needs_pytest(self) -> bool:
        """Whether any test needed pytest's semantics (the tests the old reader dropped)."""
        return bool(self.parametrized or self.fixtures or self.in_classes or self.skipped)


def _name(node: ast.expr) -> str:
    """The dotted name of a decorator (its call's function), e.g. "pytest.mark.parametrize"."""
    return ast.unparse(node.func if isinstance(node, ast.Call) else node)


def _is(node: ast.expr, *suffixes: str) -> bool:
    name = _name(node)
    return any(name == s or name.endswith("." + s) for s in suffixes)


def _arg(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _param_names(node: ast.expr | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [n.strip() for n in node.value.split(",") if n.strip()]
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]
    raise Unrunnable("a parametrize whose argument names are not a literal")


def _literal_rows(values: ast.expr, names: list[str]) -> list[dict[str, str]] | None:
    """The parameter sets of a literal list/tuple as {name: source}; None when the values are computed."""
    if not isinstance(values, (ast.List, ast.Tuple)):
        return None
    rows = []
    for elt in values.elts:
        if isinstance(elt, ast.Call) and _is(elt, "param"):
            marks = next((k.value for k in elt.keywords if k.arg == "marks"), None)
            if marks is not None and "xfail" in ast.unparse(marks):
                raise Unrunnable("a parameter set marked xfail")
            if marks is not None and "skip" in ast.unparse(marks):
                continue  # pytest skips that set
            items = list(elt.args)
        elif len(names) == 1:
            items = [elt]
        elif isinstance(elt, (ast.Tuple, ast.List)):
            items = list(elt.elts)
        else:
            return None  # a computed row: split it at run time
        if len(items) != len(names) or any(isinstance(i, ast.Starred) for i in items):
            return None
        rows.append({n: ast.unparse(i) for n, i in zip(names, items)})
    return rows


class _File:
    def __init__(self, module: ast.Module) -> None:
        self.fixtures = {
            n.name: n
            for n in module.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(_is(d, "fixture") for d in n.decorator_list)
        }
        assigned: dict[str, list[ast.expr]] = {}
        for n in module.body:
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                assigned.setdefault(n.targets[0].id, []).append(n.value)
        # module-level names bound once to a literal list/tuple (``cases = [...]`` used by a parametrize)
        self.literals = {
            k: v[0] for k, v in assigned.items() if len(v) == 1 and isinstance(v[0], (ast.List, ast.Tuple))
        }
        for hook in HOOKS:
            if any(isinstance(n, ast.FunctionDef) and n.name == hook for n in module.body):
                raise Unrunnable(f"a module hook ({hook})")

    def fixture_value(self, name: str, seen: tuple[str, ...] = ()) -> str:
        """The expression that computes fixture `name` (its own fixtures first)."""
        if name in BUILTIN_FIXTURES:
            raise Unrunnable(
                f"pytest's built-in fixture {name!r} (it acts on the test process, not the program's)"
            )
        fn = self.fixtures.get(name)
        if fn is None:
            raise Unrunnable(f"an argument {name!r} that is neither a parameter nor a fixture of the file")
        if name in seen:
            raise Unrunnable(f"fixture {name!r} depends on itself")
        args = _arguments(fn)
        inner = ", ".join(f"{a}={self.fixture_value(a, (*seen, name))}" for a in args)
        return f"_pytest_value({name}({inner}))"


def _arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool = False) -> list[str]:
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs:
        raise Unrunnable(f"test {fn.name!r} takes *args/**kwargs or positional-only arguments")
    names = [x.arg for x in a.args] + [x.arg for x in a.kwonlyargs]
    return names[1:] if method else names


def _cases(
    file: _File, fn: ast.FunctionDef, target: str, before: list[str], census: PytestCensus, method: bool
) -> list[str]:
    """The cases of one test function or method (`target`: how to reach it; `before`: lines run first)."""
    if isinstance(fn, ast.AsyncFunctionDef):
        raise Unrunnable(f"an async test ({fn.name})")
    params: list[tuple[list[str], ast.expr]] = []
    condition = None
    for d in fn.decorator_list:
        if _is(d, "parametrize") and isinstance(d, ast.Call):
            values = _arg(d, 1, "argvalues")
            if values is None:
                raise Unrunnable("a parametrize without values")
            params.append((_param_names(_arg(d, 0, "argnames")), values))
        elif _is(d, "skipif"):
            cond = _arg(d, 0, "condition") if isinstance(d, ast.Call) else None
            if cond is None or (isinstance(cond, ast.Constant) and isinstance(cond.value, str)):
                raise Unrunnable("a skipif without a Python condition")
            condition = f"({condition}) or ({ast.unparse(cond)})" if condition else ast.unparse(cond)
        elif _is(d, "usefixtures") and isinstance(d, ast.Call):
            before = before + [file.fixture_value(a.value) for a in d.args if isinstance(a, ast.Constant)]
        elif _is(d, "timeout", "flaky", "filterwarnings"):
            pass  # no effect on the verdict of a test that passes here
        else:
            raise Unrunnable(f"a test decorator pytest would apply ({_name(d)})")
    names = [n for ns, _ in params for n in ns]
    args = _arguments(fn, method)
    fixture_args = {a: file.fixture_value(a) for a in args if a not in names}
    sets: list[dict[str, str]] = [{}]  # the product of the literal parameter lists: one case each
    loops: list[tuple[list[str], str]] = []  # computed parameter lists: looped over inside each case
    for ns, values in reversed(params):  # the decorator nearest the function applies first
        if isinstance(values, ast.Name) and values.id in file.literals:
            values = file.literals[values.id]
        rows = _literal_rows(values, ns)
        if rows is None:
            loops.append((ns, ast.unparse(values)))
        else:
            sets = [{**s, **r} for s in sets for r in rows]
    if params:
        census.parametrized += 1
    if fixture_args:
        census.fixtures += 1
    cases = []
    for s in sets:
        call_args = {**s, **fixture_args}
        body = [f"{target}({', '.join(f'{k}={v}' for k, v in call_args.items())})"]
        for k, (ns, source) in enumerate(loops):  # computed parameter lists: every set, one case
            row = f"_row{k}"
            body = [f"for {row} in {source}:", f"    {', '.join(ns)}, = _pytest_row({row}, {len(ns)})"] + [
                "    " + line for line in body
            ]
            body[-1] = body[-1].replace(f"{target}(", f"{target}(" + "".join(f"{n}={n}, " for n in ns), 1)
        lines = list(before) + body
        if condition:
            lines = [f"if not ({condition}):"] + ["    " + line for line in lines]
        cases.append("\n".join(lines))
    return cases


def _class_cases(file: _File, cls: ast.ClassDef, census: PytestCensus) -> list[str]:
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    unittest = any(ast.unparse(b).endswith("TestCase") for b in cls.bases)
    if "__init__" in methods and not unittest:
        return []  # pytest does not collect a test class with __init__
    if cls.decorator_list:
        raise Unrunnable(f"a decorated test class ({cls.name})")
    if any(any(_is(d, "fixture") for d in m.decorator_list) for m in methods.values()):
        raise Unrunnable(f"a fixture defined in test class {cls.name}")
    cases = []
    for name, fn in methods.items():
        if not name.startswith("test"):
            continue
        census.in_classes += 1
        if any(_is(d, "skip") for d in fn.decorator_list):
            census.skipped += 1
            continue
        if unittest:
            before = [f"{cls.name}.setUpClass()", f"_self = {cls.name}({name!r})", "_self.setUp()"]
        else:
            before = [f"{cls.name}.setup_class()"] if "setup_class" in methods else []
            before.append(f"_self = {cls.name}()")
            if "setup_method" in methods:
                before.append(f"_self.setup_method({cls.name}.{name})")
        cases += _cases(file, fn, f"_self.{name}", before, census, method=True)
    return cases


def pytest_suite(test_code: str, setup: str) -> tuple[TestSuite, PytestCensus]:
    """The cases pytest would collect from `test_code`, and `setup` (the file without its ``from solution``
    imports) with the decorators that the cases now spell out removed; raises `Unrunnable` (a ValueError) with the
    reason when some test cannot run this way or none is collected."""
    module = ast.parse(setup)
    file = _File(module)
    census = PytestCensus()
    cases: list[str] = []
    for node in module.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            if any(_is(d, "skip") for d in node.decorator_list):
                census.skipped += 1
                continue
            made = _cases(file, node, node.name, [], census, method=False)
            if not node.decorator_list and not _arguments(node):
                census.plain += 1
            cases += made
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            cases += _class_cases(file, node, census)
    if not cases:
        raise Unrunnable("test code has no runnable test (none that pytest would collect and run)")
    for node in ast.walk(module):  # the decorators the cases spell out; pytest.raises etc. stay
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.decorator_list = [
                d
                for d in node.decorator_list
                if not _is(d, "fixture", "parametrize", "skip", "skipif", "usefixtures")
            ]
    census.cases = len(cases)
    return TestSuite(cases=tuple(cases), setup=ast.unparse(module) + "\n" + HELPERS), census
