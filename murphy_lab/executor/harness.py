"""The test side: run test cases against the program's names, which are proxies; report the verdicts.

This file is loaded by the test worker (`worker.py`) by path, and runs there; it stands on the standard library
and `wire.py`. The worker never runs program code: the test's source, its expected values and the comparison
live there, the program lives in another process (`server.py`) and answers calls over the channel with plain
data only (`wire.py`). So no object, patch, trace hook or memory read of the program can reach what decides the
verdict.

How a verdict is made (the rules the feedback and the tests rely on):

- The program's names (dunders left out) arrive in a hello: plain values as values, modules by name (imported
  here), the rest (functions, classes, instances) as `wire.Remote` handles; module ``solution`` holds them too.
- The test code (``setup`` then the case) runs in a fresh namespace with those names and clean builtins; setup
  names override program names (HumanEval's ``check`` and the prompt helpers belong to the tests).
- Every ``assert`` is rewritten with `ast` into a call to `Check`, which compares by `plain` value and reports
  the left side's value for feedback. A handle compares equal only to a handle (the program's own ``__eq__``).
- ``passed`` is reported only after the case finished and the channel saw no fault (a stop, a lost program
  process, a message that is not plain data): a test that could not run this way fails closed.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.util
import linecache
import operator
import reprlib
import sys
import traceback
import types

PROGRAM_FILE = "solution.py"  # the name the program's frames carry in tracebacks
PROGRAM_MODULE = "solution"  # `from solution import f` works in test code (KodCode/pytest style)
TEST_FILE = "test.py"
SETUP_FILE = "test_setup.py"
CHECK = "__murphy_check__"  # the one name the rewritten asserts call
MAX_DETAIL = 2000  # characters of a detail sent back (feedback.py truncates further)
wire = None  # the channel module, set by the worker that loads this file

# --- captured before any program runs -------------------------------------------------------------------------
_type, _id, _len, _bool, _issubclass, _getattr = type, id, len, bool, issubclass, getattr
_type_getattr = type.__getattribute__
_CLEAN_BUILTINS = dict(builtins.__dict__)
_CLEAN_BUILTINS["isinstance"] = lambda obj, cls: issubclass(type(obj), cls)  # `__class__` cannot lie to tests
_OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}
_AST_OPS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_ARITH = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "neg": operator.neg,
    "pos": operator.pos,
}
_AST_ARITH = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.USub: "neg",
    ast.UAdd: "pos",
}
_ATOMS = {id(t) for t in (bool, int, float, complex, str, bytes, type(None), type(...))}
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: classes created by `class` statements (not C types)
_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = _repr.maxlong = 300
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = _repr.maxfrozenset = 40
_repr.maxlevel = 5


class _Untrusted(Exception):
    """A value holds an object whose class the program (or the test) defined: its methods could lie."""


class _AssertFailed(Exception):
    def __init__(self, assertion: str, value: str):
        self.assertion, self.value = assertion, value


# --- plain values ----------------------------------------------------------------------------------------------
def _trusted(t) -> bool:
    """A class we did not get from the program: a C type, or a class an imported module really exports."""
    if not _type_getattr(t, "__flags__") & _HEAPTYPE:
        return True
    mod, qual = _type_getattr(t, "__module__"), _type_getattr(t, "__qualname__")
    if mod in (PROGRAM_MODULE, "__main__") or not isinstance(mod, str) or not isinstance(qual, str):
        return False
    obj = sys.modules.get(mod)
    for part in qual.split("."):
        obj = _getattr(obj, part, None)
    return obj is t


def plain(x, memo=None):
    """`x` with every builtin subclass reduced to its builtin base (the same object when nothing changes).

    Raises `_Untrusted` when `x` holds an object of a class the program defined. Comparisons then use builtin
    code only, which the program cannot override.
    """
    t = _type(x)
    if _id(t) in _ATOMS:
        return x
    memo = {} if memo is None else memo
    if _id(x) in memo:
        return memo[_id(x)]
    if _issubclass(t, bool) or _issubclass(t, int):
        return int.__int__(x)  # IntEnum, int subclasses -> exact int
    if _issubclass(t, float):
        return float.__float__(x)
    if _issubclass(t, complex):
        return complex.__complex__(x)
    if _issubclass(t, str):
        return str.__str__(x)
    if _issubclass(t, bytes):
        return bytes.__bytes__(x)
    if _issubclass(t, (list, tuple)):
        base = list if _issubclass(t, list) else tuple
        memo[_id(x)] = x
        items = base.__getitem__(x, slice(None))
        out = [plain(v, memo) for v in items]
        same = t is base and all(a is b for a, b in zip(out, items))
        memo[_id(x)] = x if same else base(out)
        return memo[_id(x)]
    if _issubclass(t, dict):
        memo[_id(x)] = x
        items = list(dict.items(x))
        out = [(plain(k, memo), plain(v, memo)) for k, v in items]
        same = t is dict and all(a is c and b is d for (a, b), (c, d) in zip(out, items))
        memo[_id(x)] = x if same else dict(out)
        return memo[_id(x)]
    if _issubclass(t, (set, frozenset)):
        base = set if _issubclass(t, set) else frozenset
        items = list(base.__iter__(x))
        out = [plain(v, memo) for v in items]
        same = t is base and all(a is b for a, b in zip(out, items))
        return x if same else base(out)
    if _trusted(t):
        return x
    raise _Untrusted(t)


def show(x) -> str:
    """A short, safe repr of a value for feedback (the program's own `__repr__` only for its own classes)."""
    try:
        return _repr.repr(plain(x))[:MAX_DETAIL]
    except _Untrusted:
        try:
            return f"{x!r}"[:MAX_DETAIL]  # the program's own class: its __repr__ is what the model wrote
        except BaseException:  # noqa: BLE001 - a broken __repr__ must not break the verdict
            return f"<{_type_getattr(_type(x), '__qualname__')} object>"
    except BaseException:  # noqa: BLE001
        return f"<{_type_getattr(_type(x), '__name__')} object>"


class Check:
    """The functions rewritten asserts call (bound in the test namespace as `__murphy_check__`)."""

    @staticmethod
    def value(x):
        """A call's result inside an assert, reduced to plain values where possible."""
        try:
            return plain(x)
        except _Untrusted:
            return x

    @staticmethod
    def cmp(left, op: str, right, src: str):
        """`left <op> right` by plain value; the program's own objects only ==/!= against the very same class.

        Returns what the operator returns (a bool, or e.g. a numpy array for `(a == b).all()`).
        """
        if op in ("is", "is not"):
            return (left is right) == (op == "is")
        try:
            return _OPS[op](plain(left), plain(right))
        except _Untrusted:
            if op in ("==", "!=") and _type(left) is _type(right) and not _trusted(_type(left)):
                return _bool(_OPS[op](left, right))
            raise _AssertFailed(src, show(left)) from None

    @staticmethod
    def compare(left, op: str, right, src: str, negate: bool = False) -> None:
        """A top-level `assert left <op> right` (or `assert not ...`): fails with the left side's value."""
        if _bool(Check.cmp(left, op, right, src)) == negate:
            raise _AssertFailed(src, show(left))

    @staticmethod
    def chain(ops: tuple, values: list, src: str) -> bool:
        return all(_bool(Check.cmp(values[i], op, values[i + 1], src)) for i, op in enumerate(ops))

    @staticmethod
    def arith(op: str, src: str, *args):
        """Arithmetic inside an assert: only on plain or trusted values (no `__sub__` tricks)."""
        vals = []
        for x in args:
            try:
                vals.append(plain(x))
            except _Untrusted:
                raise _AssertFailed(src, show(x)) from None
        return _ARITH[op](*vals)

    @staticmethod
    def truthy(x, src: str, want: bool = True) -> None:
        try:
            ok = _bool(plain(x)) == want
        except _Untrusted:
            # an object of a C type in the program process (e.g. re.Match): its truth, computed there. A lie
            # about the type gains nothing: `return True` passes the same test.
            ok = _type(x) is wire.Remote and object.__getattribute__(x, "_native") and _bool(x) == want
        if not ok:
            raise _AssertFailed(src, show(x))


def _abs(x):
    """`abs` as tests see it: a program object's `__abs__` is not consulted."""
    try:
        return abs(plain(x))
    except _Untrusted:
        raise TypeError("abs() of an object of the program's own class is not allowed in a test") from None


_CLEAN_BUILTINS["abs"] = _abs


# nodes the rewrite leaves as they are (lambdas: their bodies run later, outside the assert)
_LEAVES = (ast.Lambda, ast.Constant, ast.Name, ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)

_LEAF_TYPES = frozenset(k for base in _LEAVES for k in (base, *base.__subclasses__()))  # exact: one set lookup
_LOAD = ast.Load()  # one shared context node, as the parser itself does


def _strict(node: ast.AST, loc: dict, src: ast.Constant) -> ast.AST:
    """Inside an assert: calls -> `value(call)`, comparisons -> `cmp`, arithmetic -> `arith` (not in lambdas)."""
    t = type(node)
    if t in _LEAF_TYPES:
        return node
    for field in t._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            for i, v in enumerate(value):
                if type(v) not in _LEAF_TYPES and isinstance(v, ast.AST):
                    value[i] = _strict(v, loc, src)
        elif type(value) not in _LEAF_TYPES and isinstance(value, ast.AST):
            setattr(node, field, _strict(value, loc, src))
    if t is ast.Call:
        return _call("value", [node], loc)
    if t is ast.Compare and len(node.ops) == 1:
        op = ast.Constant(_AST_OPS[type(node.ops[0])], **loc)
        return _call("cmp", [_bare(node.left), op, _bare(node.comparators[0]), src], loc)
    if t is ast.Compare:
        ops = ast.Tuple([ast.Constant(_AST_OPS[type(o)], **loc) for o in node.ops], _LOAD, **loc)
        return _call("chain", [ops, ast.List([node.left, *node.comparators], _LOAD, **loc), src], loc)
    if t is ast.BinOp and type(node.op) in _AST_ARITH:
        op = ast.Constant(_AST_ARITH[type(node.op)], **loc)
        return _call("arith", [op, src, _bare(node.left), _bare(node.right)], loc)
    if t is ast.UnaryOp and type(node.op) in _AST_ARITH:
        return _call("arith", [ast.Constant(_AST_ARITH[type(node.op)], **loc), src, _bare(node.operand)], loc)
    return node


def _bare(node: ast.AST) -> ast.AST:
    """`value(call)` -> `call` where the consumer (`cmp`, `compare`, `arith`, `truthy`) reduces it anyway."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "value":
        if isinstance(node.func.value, ast.Name) and node.func.value.id == CHECK:
            return node.args[0]
    return node


def _call(name: str, args: list, loc: dict) -> ast.Call:
    """`__murphy_check__.<name>(*args)`, located at `loc` (the assert's position)."""
    fn = ast.Attribute(ast.Name(CHECK, _LOAD, **loc), name, _LOAD, **loc)
    return ast.Call(fn, args, [], **loc)


def _segment(lines: list[bytes], node: ast.AST) -> str:
    """The source text of `node` (ast offsets are UTF-8 byte offsets)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset : node.end_col_offset].decode("utf-8", "replace")
    parts = [lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
    return b"".join(parts).decode("utf-8", "replace")


def _rewrite_assert(node: ast.Assert, lines: list[bytes]) -> ast.stmt:
    """`assert <test>` -> calls into `Check` that evaluate the operands and compare them by plain value."""
    loc = {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
    src = ast.Constant(_segment(lines, node), **loc)
    t, negate = node.test, False
    if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, ast.Compare):
        t, negate = t.operand, True
    if isinstance(t, ast.Compare) and len(t.ops) == 1:  # the common case: report the left side's value
        left, right = _bare(_strict(t.left, loc, src)), _bare(_strict(t.comparators[0], loc, src))
        op = ast.Constant(_AST_OPS[type(t.ops[0])], **loc)
        call = _call("compare", [left, op, right, src, ast.Constant(negate, **loc)], loc)
    else:
        call = _call("truthy", [_bare(_strict(node.test, loc, src)), src], loc)
    return ast.Expr(call, **loc)


def _rewrite_body(stmts: list, lines: list[bytes]) -> None:
    """Rewrite the asserts in a statement list and, recursively, in the blocks of its statements."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Assert):
            stmts[i] = _rewrite_assert(s, lines)
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(s, field, None)
            if isinstance(block, list):
                _rewrite_body(block, lines)


@functools.lru_cache(maxsize=512)
def compile_test(source: str, filename: str):
    """Compile test code with every assert rewritten into a `Check` call (cached: tests repeat across samples)."""
    if "assert" not in source:
        return compile(source, filename, "exec", dont_inherit=True)
    tree = ast.parse(source, filename)
    lines = source.encode("utf-8", "surrogatepass").splitlines(True)
    _rewrite_body(tree.body, lines)
    return compile(tree, filename, "exec", dont_inherit=True)


# --- reporting -------------------------------------------------------------------------------------------------
def format_exception(e: BaseException, limit: int = 3) -> str:
    """The exception and its last `limit` frames, with harness frames removed."""
    frames = [
        f
        for f in traceback.extract_tb(e.__traceback__)
        if f.filename in (PROGRAM_FILE, TEST_FILE, SETUP_FILE)
    ]
    remote = getattr(e, "__murphy_remote__", None)
    if remote is not None:  # raised in the program process: its frames follow ours, its text is the head
        frames += [
            traceback.FrameSummary(str(fn), int(ln), str(name), lookup_line=False, line=str(line))
            for fn, ln, name, line in remote[0]
            if fn == PROGRAM_FILE
        ]
        head = remote[1]
    else:
        try:
            head = "".join(traceback.format_exception_only(_type(e), e)).strip()
        except BaseException:  # noqa: BLE001 - an exception whose __str__ raises
            head = _type_getattr(_type(e), "__name__")
    lines = traceback.format_list(frames[-limit:])
    body = ("Traceback (most recent call last):\n" + "".join(lines)) if lines else ""
    return (body + head)[-MAX_DETAIL:]


def _remember_source(filename: str, source: str) -> None:
    linecache.cache[filename] = (_len(source), None, source.splitlines(True), filename)


# --- one test -------------------------------------------------------------------------------------------------
ALIASES = {"np": "numpy", "pd": "pandas", "plt": "matplotlib.pyplot", "nx": "networkx", "sp": "scipy"}


class _LazyModule(types.ModuleType):
    """A module the program imported, imported here on first use (by its name, from our own sys.path)."""

    def __getattr__(self, name: str):
        module = importlib.import_module(self.__name__)
        return getattr(module, name)


def _module(name: str, modname: str):
    """Our own copy of the module the program bound to `name`, if the binding is the usual one."""
    if (
        not isinstance(modname, str)
        or modname in (PROGRAM_MODULE, "__main__")
        or modname.startswith("_murphy")
    ):
        return None
    if name != modname.rsplit(".", 1)[-1] and name != modname and ALIASES.get(name) != modname:
        return None
    if modname in sys.modules:
        return sys.modules[modname]
    try:
        if importlib.util.find_spec(modname) is None:
            return None
    except (ImportError, ValueError):
        return None
    return _LazyModule(modname)


def program_names(hello: list) -> dict:
    """The test namespace's view of the program: values, our own modules, and handles (`wire.Remote`)."""
    names = {}
    for item in hello if type(hello) is list else []:
        if type(item) is not list or len(item) != 3 or type(item[0]) is not str:
            continue
        name, kind, payload = item
        if name.startswith("__") or name == CHECK:
            continue
        if kind == "m":
            module = _module(name, payload)
            if module is not None:
                names[name] = module
        elif kind == "v":
            names[name] = payload
    return names


def _stop_status(e: BaseException) -> str | None:
    if isinstance(e, MemoryError):
        return "memory"
    if isinstance(e, (SystemExit, KeyboardInterrupt, GeneratorExit)):
        return "exit"
    return None


def run_cases(ep, report, setup_code, setup: str, cases: list) -> None:
    """Receive the program's names on `ep` (a `wire.Endpoint`) once, then run setup and each (compiled case,
    source) in a fresh namespace; ``report(status, detail, assertion)`` once per case, the texts cut to
    `MAX_DETAIL`. Stops at the first fault of the channel (the worker starts a new program process for the rest)."""

    def say(status: str, detail: str, assertion: str) -> None:
        report(status, detail[:MAX_DETAIL], assertion[:MAX_DETAIL])

    try:
        hello = ep.recv()
    except wire.Fault as f:
        return say(f.status, f.detail, "")
    if hello[0] == "loadfail" and len(hello) == 3:
        return say(str(hello[1]), str(hello[2]), "(loading the program)")
    if hello[0] != "hello" or len(hello) != 2:
        return say("error", "the program process did not describe its names", "")
    names = program_names(hello[1])
    module = types.ModuleType(PROGRAM_MODULE)
    module.__dict__.update(names)
    sys.modules[PROGRAM_MODULE] = module
    _remember_source(SETUP_FILE, setup)
    for case_code, case in cases:
        _remember_source(TEST_FILE, case)
        say(*run_case(ep, names, setup_code, case_code))
        if ep.fault is not None:
            return None
    return None


def run_case(ep, names: dict, setup_code, case_code) -> tuple[str, str, str]:
    """(status, detail, assertion) of one case; a fault of the channel decides it even if the test caught it."""
    ns = dict(names, __builtins__=_CLEAN_BUILTINS, __name__="__test__")
    ns[CHECK] = Check
    try:
        if setup_code is not None:
            exec(setup_code, ns)
        exec(case_code, ns)
        out = ("passed", "", "")
    except wire.Fault as f:
        out = (f.status, f.detail, "")
    except _AssertFailed as f:
        out = ("failed", f.value, f.assertion)
    except BaseException as e:  # noqa: BLE001
        stop = _stop_status(e)
        out = (stop or "error", "" if stop else format_exception(e), "")
    if ep.fault is not None:
        return ep.fault.status, ep.fault.detail, ""
    return out
