"""Test code compiled: which names the tests take from the program, and every assert rewritten for feedback.

Loaded by the test worker (`worker.py`) by path, once; pure functions of the test text, which the worker caches
(the same tests come back for every sample of a task). `program_names` declares the test namespace: the suite's
entry points and the other global names the test text reads but does not bind (fetched from the program in one
request), and the standard-library modules the text names without importing them (our own import of that name,
never the program's module). `compile_test` rewrites every ``assert`` with `ast` into a call of the harness's
`Check` (bound as `CHECK`), which compares with Python's own operators and reports the left side's value.
"""

from __future__ import annotations

import ast
import builtins
import symtable
import sys

TEST_FILE = "test.py"  # the names test code carries in tracebacks
SETUP_FILE = "test_setup.py"
CHECK = "__murphy_check__"  # the one name the rewritten asserts call
_BUILTIN_NAMES = frozenset(builtins.__dict__)
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


# --- the namespace ----------------------------------------------------------------------------------------------
def scope(source: str) -> tuple[frozenset, frozenset]:
    """(the names test code binds at module level, the global names it reads), by `symtable`."""
    table = symtable.symtable(source, TEST_FILE, "exec")
    bound, free, todo = set(), set(), [table]
    for s in table.get_symbols():
        if s.is_assigned() or s.is_imported() or s.is_namespace():
            bound.add(s.get_name())
    while todo:
        t = todo.pop()
        module = t.get_type() == "module"
        for s in t.get_symbols():
            if s.is_referenced() and (module or s.is_global()):
                free.add(s.get_name())
            if not module and s.is_declared_global() and s.is_assigned():
                bound.add(s.get_name())
        todo.extend(t.get_children())
    return frozenset(bound), frozenset(free)


def called(source: str) -> frozenset:
    """The names test code calls (`name(...)`)."""
    return frozenset(
        n.func.id
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    )


def program_names(
    sources: tuple[str, ...], entry_points: tuple[str, ...], scope=scope, called=called
) -> tuple[tuple, tuple]:
    """(the names to take from the program, the standard-library modules to import by the test's own name).

    From the program: the entry points, and every global name the test text reads but neither binds nor finds
    among the builtins. A name the text reads that is a top-level standard-library module (``sys`` in MBPP/596,
    which relies on the program's ``import sys``) is our own import of that name, never the program's binding —
    unless the text calls it (a module is never called: ``decimal()`` is the program's function)."""
    bound, free = set(), set()
    for source in sources:
        b, f = scope(source)
        bound |= b
        free |= f
    free = {n for n in free - bound if not n.startswith("__")}
    modules = {n for n in free - set(entry_points) - _BUILTIN_NAMES if n in sys.stdlib_module_names}
    if modules:  # rare (MBPP/596): a module is never called, a program's function of that name is
        modules -= {n for source in sources for n in called(source)}
    wanted = (free - _BUILTIN_NAMES - modules) | set(entry_points)
    return tuple(sorted(wanted)), tuple(sorted(modules))


# --- asserts ----------------------------------------------------------------------------------------------------
def _call(name: str, args: list, loc: dict) -> ast.Call:
    """`__murphy_check__.<name>(*args)`, located at `loc` (the assert's position)."""
    fn = ast.Attribute(ast.Name(CHECK, ast.Load(), **loc), name, ast.Load(), **loc)
    return ast.Call(fn, args, [], **loc)


def _segment(lines: list[bytes], node: ast.AST) -> str:
    """The source text of `node` (ast offsets are UTF-8 byte offsets)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset : node.end_col_offset].decode("utf-8", "replace")
    parts = [lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
    return b"".join(parts).decode("utf-8", "replace")


def _rewrite_assert(node: ast.Assert, lines: list[bytes]) -> ast.stmt:
    """`assert <test>` -> a `Check` call that evaluates it and reports the left side's value when it fails."""
    loc = {k: getattr(node, k) for k in ("lineno", "col_offset", "end_lineno", "end_col_offset")}
    src = ast.Constant(_segment(lines, node), **loc)
    t, negate = node.test, False
    if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and isinstance(t.operand, ast.Compare):
        t, negate = t.operand, True
    if isinstance(t, ast.Compare) and len(t.ops) == 1:  # the common case: report the left side's value
        op = ast.Constant(_AST_OPS[type(t.ops[0])], **loc)
        call = _call("compare", [t.left, op, t.comparators[0], src, ast.Constant(negate, **loc)], loc)
    else:
        call = _call("truthy", [node.test, src], loc)
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


def compile_test(source: str, filename: str):
    """Compile test code with every assert rewritten into a `Check` call (the worker caches the result)."""
    if "assert" not in source:
        return compile(source, filename, "exec", dont_inherit=True)
    tree = ast.parse(source, filename)
    lines = source.encode("utf-8", "surrogatepass").splitlines(True)
    _rewrite_body(tree.body, lines)
    return compile(tree, filename, "exec", dont_inherit=True)
