"""Loaders on fixture files the tests write themselves (Hugging Face layouts read through `datasets`), and the
original MBPP release files where /work/shared/data/mbpp (or ../shared/data/mbpp) is present."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import datasets
import pandas as pd
import pytest

from murphy_lab.executor.types import IOTest
from murphy_lab.tasks import load_kodcode, load_livecodebench, load_mbpp, load_tasks
from murphy_lab.tasks.kodcode import selection_key
from murphy_lab.tasks.lcb_harness import IMPORT_HEADER
from murphy_lab.tasks.livecodebench import VERSION_FILES


def run_case(program: str, setup: str, case: str) -> bool:
    """Whether `case` passes for `program`, with the setup run before and (separately) after the program; the two
    must agree. In-process: only for the tests' own trusted fixtures."""
    verdicts = []
    for first, second in ((setup, program), (program, setup)):
        scope: dict = {"__name__": "__fixture__"}
        exec(first, scope)
        exec(second, scope)
        try:
            exec(case, scope)
            verdicts.append(True)
        except AssertionError:
            verdicts.append(False)
    assert verdicts[0] == verdicts[1], "the verdict depends on whether setup runs before the program"
    return verdicts[0]


# ------------------------------------------------------------------------------------------------------------ MBPP

MBPP_ROWS = [  # sanitized-variant fields; ids chosen to fall in different splits
    {
        "source_file": "x",
        "task_id": 2,
        "prompt": "Write a function to add two numbers.",
        "code": "def add(a, b):\n    return a + b",
        "test_imports": [],
        "test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"],
    },
    {
        "source_file": "x",
        "task_id": 11,
        "prompt": "Write a function to square a number.",
        "code": "import math\ndef sq(x):\n    return x * x",
        "test_imports": ["import math"],
        "test_list": ["assert sq(3) == 9", "assert math.isclose(sq(0.5), 0.25)", "assert sq(-2) == 4"],
    },
    {
        "source_file": "x",
        "task_id": 12,
        "prompt": "Write a function to negate a number.",
        "code": "def neg(x):\n    return -x",
        "test_imports": [],
        "test_list": ["assert neg(1) == -1"],
    },
    {
        "source_file": "x",
        "task_id": 520,
        "prompt": "Write a function to halve a number.",
        "code": "def half(x):\n    return x / 2",
        "test_imports": [],
        "test_list": ["assert half(2) == 1"],
    },
    {
        "source_file": "x",
        "task_id": 700,
        "prompt": "Write a function to double a number.",
        "code": "def dbl(x):\n    return 2 * x",
        "test_imports": [],
        "test_list": ["assert dbl(2) == 4"],
    },
]


SANITIZED_FEATURES = datasets.Features(
    {
        "source_file": datasets.Value("string"),
        "task_id": datasets.Value("int32"),
        "prompt": datasets.Value("string"),
        "code": datasets.Value("string"),
        "test_imports": datasets.Sequence(datasets.Value("string")),
        "test_list": datasets.Sequence(datasets.Value("string")),
    }
)


def write_mbpp_hf(root: Path, rows=MBPP_ROWS) -> Path:
    """The hub layout and schema of the sanitized config: sanitized/<split>-00000-of-00001.parquet."""
    (root / "sanitized").mkdir(parents=True)
    splits = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}
    for split, (lo, hi) in splits.items():
        chosen = [r for r in rows if lo <= r["task_id"] <= hi]
        if chosen:
            data = datasets.Dataset.from_list(chosen, features=SANITIZED_FEATURES)
            data.to_parquet(str(root / "sanitized" / f"{split}-00000-of-00001.parquet"))
    return root


def test_mbpp_hf_folder_reads_the_requested_split(tmp_path):
    tasks = load_mbpp("test", source=write_mbpp_hf(tmp_path))
    assert [t.task_id for t in tasks] == ["mbpp/11", "mbpp/12"]


def test_mbpp_first_assert_is_visible_and_quoted_in_prompt(tmp_path):
    task = load_mbpp("test", source=write_mbpp_hf(tmp_path))[0]
    assert task.visible_tests.cases == ("assert sq(3) == 9",)
    assert "assert sq(3) == 9" in task.prompt and task.prompt.startswith("Write a function to square")


def test_mbpp_hidden_tests_are_all_asserts_with_imports_as_setup(tmp_path):
    task = load_mbpp("test", source=write_mbpp_hf(tmp_path))[0]
    assert len(task.hidden_tests.cases) == 3 and task.hidden_tests.setup == "import math"
    assert all(run_case(task.reference, task.hidden_tests.setup, c) for c in task.hidden_tests.cases)


def test_mbpp_entry_point_is_the_called_function(tmp_path):
    tasks = load_mbpp("all", source=write_mbpp_hf(tmp_path))
    assert [t.entry_point for t in tasks] == ["add", "sq", "neg", "half", "dbl"]


def test_mbpp_single_local_file_is_split_by_task_id(tmp_path):
    path = tmp_path / "mbpp.parquet"
    pd.DataFrame(MBPP_ROWS).to_parquet(path)
    assert [t.task_id for t in load_mbpp("train", source=path)] == ["mbpp/700"]


def test_mbpp_row_without_tests_is_an_error_naming_the_row(tmp_path):
    rows = [dict(MBPP_ROWS[1], test_list=[])]
    with pytest.raises(ValueError, match=r"row 11 has no tests"):
        load_mbpp("test", source=rows)


def test_mbpp_unparsable_test_is_an_error_naming_the_row(tmp_path):
    rows = [dict(MBPP_ROWS[1], test_list=["assert sq(3 == 9"])]
    with pytest.raises(ValueError, match=r"row 11: test does not parse"):
        load_mbpp("test", source=rows)


def test_mbpp_missing_path_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_mbpp(source=str(tmp_path / "nowhere"))


def test_mbpp_empty_split_is_an_error_not_an_empty_benchmark(tmp_path):
    with pytest.raises(ValueError, match="no rows in split 'prompt'"):
        load_mbpp("prompt", source=MBPP_ROWS[1:])


def test_mbpp_unknown_split_is_rejected():
    with pytest.raises(ValueError, match="split must be one of"):
        load_mbpp("dev", source=MBPP_ROWS)


MBPP_DIR = next(
    (
        p
        for p in (Path("/work/shared/data/mbpp"), Path(__file__).parents[2] / "shared/data/mbpp")
        if (p / "mbpp.jsonl").is_file()
    ),
    None,
)
needs_mbpp = pytest.mark.skipif(MBPP_DIR is None, reason="original MBPP files not present")


@needs_mbpp
@pytest.mark.parametrize(
    ("variant", "split", "count"),
    [
        ("sanitized", "test", 257),
        ("sanitized", "train", 120),
        ("sanitized", "validation", 43),
        ("sanitized", "prompt", 7),
        ("full", "test", 500),
        ("full", "all", 974),
    ],
)
def test_mbpp_original_files_give_the_standard_split_sizes(variant, split, count):
    assert len(load_mbpp(split, variant, source=MBPP_DIR)) == count


FULL_ROWS = [  # the full variant's fields (text, test_setup_code, challenge_test_list); 367-like setup code
    {
        "task_id": 11,
        "text": "Write a function to count the nodes of a tree.",
        "code": "class Node:\n    def __init__(self, v):\n        self.v, self.kids = v, []\n"
        "def count(n):\n    return 1 + sum(count(k) for k in n.kids)",
        "test_list": ["assert count(root) == 2", "assert count(Node(3)) == 1"],
        "test_setup_code": "root = Node(1)\nroot.kids.append(Node(2))",
        "challenge_test_list": [],
    },
    {
        "task_id": 12,
        "text": "Write a function to negate.",
        "code": "def neg(x):\n    return -x",
        "test_list": ["assert neg(1) == -1"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 700,
        "text": "Write a function to double.",
        "code": "def dbl(x):\n    return 2 * x",
        "test_list": ["assert dbl(2) == 4"],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
]


def test_mbpp_full_variant_reads_its_split_from_a_hub_layout_folder_and_carries_setup_code(tmp_path):
    (tmp_path / "full").mkdir()
    datasets.Dataset.from_list(FULL_ROWS[:2]).to_parquet(
        str(tmp_path / "full" / "test-00000-of-00001.parquet")
    )
    datasets.Dataset.from_list(FULL_ROWS[2:]).to_parquet(
        str(tmp_path / "full" / "train-00000-of-00001.parquet")
    )
    tasks = load_mbpp("test", "full", source=tmp_path)
    assert [t.task_id for t in tasks] == ["mbpp/11", "mbpp/12"] and tasks[0].metadata["variant"] == "full"
    # its setup builds the program's own Node objects, so it runs after the program, in every case
    tree = tasks[0]
    assert all(c.startswith("root = Node(1)") for c in tree.hidden_tests.cases)
    assert all(run_case(tree.reference, tree.hidden_tests.setup, c) for c in tree.hidden_tests.cases)
    assert tree.visible_tests.cases == tree.hidden_tests.cases[:1]


def test_the_paper_profile_evaluates_mbpp_on_the_full_test_split(monkeypatch):
    # the paper's MBPP numbers are whole counts of 500 tasks x 3 runs (murphy_lab.experiments.paper, MBPP_TASKS);
    # the loader's default, the 257-task sanitized test split, fits none of them
    from murphy_lab import profiles
    from murphy_lab.experiments.paper import MBPP_TASKS

    asked = []
    monkeypatch.setattr(
        profiles,
        "load_tasks",
        lambda name, **kw: (
            asked.append((name, kw))
            or load_mbpp(
                **kw, source=[dict(r, task_id=i) for i, r in zip(range(1, 975), FULL_ROWS[1:2] * 974)]
            )
        ),
    )
    tasks = profiles.benchmark_tasks("paper", "MBPP")
    # the task source "mbpp", by its table name
    assert asked == [("MBPP", {"variant": "full", "split": "test"})]
    assert len(tasks) == MBPP_TASKS and tasks[0].task_id == "mbpp/11" and tasks[-1].task_id == "mbpp/510"


def test_the_paper_profile_evaluates_livecodebench_v6_on_the_problems_added_in_v6(monkeypatch):
    from murphy_lab import profiles

    asked = []
    monkeypatch.setattr(profiles, "load_tasks", lambda name, **kw: asked.append((name, kw)) or [])
    profiles.benchmark_tasks("paper", "LCB-v6")
    profiles.benchmark_tasks("paper", "HumanEval")
    assert asked == [("LCB-v6", {"version_tag": "v6"}), ("HumanEval", {})]
    assert VERSION_FILES["v6"] == ["test6.jsonl"]


@needs_mbpp
def test_mbpp_full_test_split_from_the_original_files_has_the_papers_500_tasks_with_setup_code():
    tasks = load_mbpp("test", "full", source=MBPP_DIR)
    ids = [t.metadata["mbpp_task_id"] for t in tasks]
    assert len(tasks) == 500 and ids == list(range(11, 511))
    # setup code that builds the program's Node objects
    (tree,) = [t for t in tasks if t.task_id == "mbpp/367"]
    assert all("Node(" in c.split("\n")[0] for c in tree.hidden_tests.cases)


@needs_mbpp
def test_mbpp_full_test_setup_code_runs_after_the_program():
    task = next(t for t in load_mbpp("all", "full", source=MBPP_DIR) if t.task_id == "mbpp/367")
    assert all(run_case(task.reference, task.hidden_tests.setup, c) for c in task.hidden_tests.cases)


# --------------------------------------------------------------------------------------------------- LiveCodeBench


def _compress(tests: list[dict]) -> str:
    """LiveCodeBench's private-test encoding: base64(zlib(pickle(json text)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


def lcb_row(qid: str, difficulty: str, date: str, functional: bool, compressed: bool = True) -> dict:
    if functional:
        public = [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]
        private = [
            {"input": "[]\n0", "output": "[0]", "testtype": "functional"},
            {"input": '[5]\n"x"', "output": '[5, "x"]', "testtype": "functional"},
        ]
        starter = "class Solution:\n    def append(self, nums: List[int], x: int) -> List[int]:\n        "
        meta = json.dumps({"func_name": "append"})
    else:
        public = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]
        private = [{"input": "5 5\n", "output": "10\n", "testtype": "stdin"}]
        starter, meta = "", "{}"
    return {
        "question_title": f"title {qid}",
        "question_content": f"Problem {qid}.",
        "platform": "leetcode",
        "question_id": qid,
        "contest_id": "c1",
        "contest_date": date,
        "starter_code": starter,
        "difficulty": difficulty,
        "public_test_cases": json.dumps(public),
        "private_test_cases": _compress(private) if compressed else json.dumps(private),
        "metadata": meta,
    }


def write_lcb(root: Path, files: int = 2) -> Path:
    rows = [
        [
            lcb_row("a1", "easy", "2023-05-10T00:00:00", functional=True),
            lcb_row("a2", "hard", "2023-06-01T00:00:00", functional=False, compressed=False),
        ],
        [lcb_row("b1", "medium", "2024-04-20T00:00:00", functional=False)],
    ]
    root.mkdir(exist_ok=True)
    for name, chunk in zip(VERSION_FILES["release_v2"][:files], rows):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in chunk))
    return root


def test_lcb_release_tag_reads_its_files(tmp_path):
    assert [t.task_id for t in load_livecodebench("release_v2", source=write_lcb(tmp_path))] == [
        "lcb/a1",
        "lcb/a2",
        "lcb/b1",
    ]
    assert [t.task_id for t in load_livecodebench("v2", source=tmp_path)] == ["lcb/b1"]


def test_lcb_stdin_tests_are_io_tests(tmp_path):
    task = next(
        t for t in load_livecodebench("release_v2", source=write_lcb(tmp_path)) if t.task_id == "lcb/b1"
    )
    assert task.visible_tests.cases == (IOTest("1 2\n", "3\n"),)
    assert (
        task.hidden_tests.cases == (IOTest("1 2\n", "3\n"), IOTest("5 5\n", "10\n"))
        and task.entry_point is None
    )


def test_lcb_functional_tests_call_the_solution_method(tmp_path):
    task = load_livecodebench("release_v2", source=write_lcb(tmp_path))[0]
    assert task.entry_point == "append"
    assert task.visible_tests.cases == ("assert Solution().append([1, 2], 3) == [1, 2, 3]",)
    assert task.hidden_tests.cases[2] == "assert Solution().append([5], 'x') == [5, 'x']"


def test_lcb_functional_cases_pass_a_correct_program_and_fail_a_wrong_one(tmp_path, executor):
    task = load_livecodebench("release_v2", source=write_lcb(tmp_path))[0]
    good = "class Solution:\n    def append(self, nums: list, x: int) -> list:\n        return nums + [x]\n"
    bad = good.replace("nums + [x]", "[x] + nums")
    suites = (task.visible_tests, task.hidden_tests)
    verdicts = [
        [o.passed for o in executor.run(task.program(code), s).outcomes]
        for code in (good, bad)
        for s in suites
    ]
    assert verdicts == [[True], [True, True, True], [False], [False, True, False]]


def test_lcb_functional_program_prefix_defines_the_typing_names_of_starter_code(tmp_path):
    task = load_livecodebench("release_v2", source=write_lcb(tmp_path))[0]
    scope: dict = {}
    exec(
        task.program(
            "class Solution:\n    def f(self, a: List[int]) -> Optional[int]:\n        return None\n"
        ),
        scope,
    )
    assert "Solution" in scope and IMPORT_HEADER in task.program("").prelude


def test_lcb_hidden_tests_are_public_plus_private_as_the_official_harness_scores(tmp_path):
    from lcb import functional_task, stdin_task

    for task in (functional_task(), stdin_task()):
        public, private = task.metadata["hidden_cases"]["public"], task.metadata["hidden_cases"]["private"]
        assert task.hidden_tests.cases[:public] == task.visible_tests.cases and public and private
        assert len(task.hidden_tests) == public + private


def test_lcb_stdin_programs_run_behind_the_import_header_too(tmp_path):
    from lcb import STDIN_SOLUTION, stdin_task

    task = stdin_task()
    program = task.program(STDIN_SOLUTION)
    assert str(program).endswith(STDIN_SOLUTION) and repr(IMPORT_HEADER) in program.prelude


def test_lcb_prompt_shows_starter_code_or_stdin_note(tmp_path):
    a1, a2, _ = load_livecodebench("release_v2", source=write_lcb(tmp_path))
    assert "def append(self" in a1.prompt and "standard input" in a2.prompt


def test_lcb_date_window_and_difficulty_filter(tmp_path):
    src = write_lcb(tmp_path)
    assert [t.task_id for t in load_livecodebench("release_v2", source=src, start_date="2023-06-01")] == [
        "lcb/a2",
        "lcb/b1",
    ]
    assert [t.task_id for t in load_livecodebench("release_v2", source=src, end_date="2023-06-01")] == [
        "lcb/a1",
        "lcb/a2",
    ]
    assert [
        t.task_id for t in load_livecodebench("release_v2", source=src, difficulty=["hard", "medium"])
    ] == ["lcb/a2", "lcb/b1"]


def test_lcb_metadata_records_date_and_platform(tmp_path):
    task = load_livecodebench("release_v2", source=write_lcb(tmp_path))[2]
    assert task.metadata["contest_date"].startswith("2024-04-20") and task.difficulty == "medium"


def test_lcb_unknown_version_tag_lists_known_tags(tmp_path):
    with pytest.raises(ValueError, match=r"unknown LiveCodeBench version_tag 'release_v9'.*release_v6"):
        load_livecodebench("release_v9", source=write_lcb(tmp_path))


def test_lcb_missing_release_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="test3.jsonl"):
        load_livecodebench("release_v6", source=write_lcb(tmp_path))


def test_lcb_unknown_difficulty_row_is_an_error_naming_it(tmp_path):
    rows = [lcb_row("z9", "brutal", "2024-01-01T00:00:00", functional=False)]
    with pytest.raises(ValueError, match=r"row 0: question 'z9' has unknown difficulty 'brutal'"):
        load_livecodebench(source=rows)


def test_lcb_row_without_tests_is_an_error_naming_it():
    row = dict(
        lcb_row("z8", "easy", "2024-01-01T00:00:00", functional=False),
        public_test_cases="[]",
        private_test_cases="",
    )
    with pytest.raises(ValueError, match="'z8' has no tests"):
        load_livecodebench(source=[row])


def test_lcb_private_tests_refuse_pickled_objects():
    evil = base64.b64encode(zlib.compress(pickle.dumps(IOTest("1", "2")))).decode()
    row = dict(lcb_row("z7", "easy", "2024-01-01T00:00:00", functional=False), private_test_cases=evil)
    with pytest.raises(ValueError, match="cannot decode"):
        load_livecodebench(source=[row])


def test_lcb_empty_window_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no problem matches"):
        load_livecodebench("release_v2", source=write_lcb(tmp_path), start_date="2030-01-01")


# --------------------------------------------------------------------------------------------------------- KodCode

KOD_TEST = """import pytest
from solution import two_sum, helper as h

def test_basic():
    assert two_sum([2, 7, 11, 15], 9) == [0, 1]

def test_alias():
    assert h() == 1

def test_raises():
    with pytest.raises(ValueError):
        two_sum([], 1)

@pytest.mark.parametrize("nums, target, expected", [([3, 3], 6, [0, 1]), ([1, 5, 2], 7, [1, 2])])
def test_pairs(nums, target, expected):
    assert two_sum(nums, target) == expected
"""
KOD_SOLUTION = """def helper():
    return 1

def two_sum(nums, target):
    if not nums:
        raise ValueError("empty")
    seen = {}
    for i, x in enumerate(nums):
        if target - x in seen:
            return [seen[target - x], i]
        seen[x] = i
"""


def kod_row(qid: str, **over) -> dict:
    row = {
        "version": "v1.0",
        "style": "instruct",
        "subset": "Leetcode",
        "question_id": qid,
        "question": f"Find two indices that add up to a target ({qid}).",
        "solution": KOD_SOLUTION,
        "test": KOD_TEST,
        "test_info": [
            {
                "function_name": "two_sum",
                "parameter_list": "(nums, target)",
                "function_declaration": "def two_sum(nums, target):",
                "docstring": None,
            }
        ],
        "gpt_pass_sequence": [1, 1],
        "gpt_pass_trial_num": 2,
        "gpt_difficulty": "easy",
        "gpt_pass_percentage": 1.0,
    }
    row.update(over)
    return row


def write_kodcode(root: Path, rows: list[dict]) -> Path:
    """The hub layout: data/train-00000-of-00001.parquet."""
    (root / "data").mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(root / "data" / "train-00000-of-00001.parquet")
    return root


KOD_ROWS = [
    kod_row(f"q{i}", subset="Leetcode" if i % 2 else "Apps", gpt_difficulty=("easy", "medium", "hard")[i % 3])
    for i in range(12)
]


def test_kodcode_selection_is_the_hash_order_of_eligible_rows(tmp_path):
    tasks = load_kodcode(n=5, seed=3, source=write_kodcode(tmp_path, KOD_ROWS))
    expected = sorted((r["question_id"] for r in KOD_ROWS), key=lambda q: selection_key(3, q))[:5]
    assert [t.metadata["question_id"] for t in tasks] == expected


def test_kodcode_selection_does_not_depend_on_row_order(tmp_path):
    first = load_kodcode(n=4, seed=0, source=KOD_ROWS)
    second = load_kodcode(n=4, seed=0, source=list(reversed(KOD_ROWS)))
    assert [t.task_id for t in first] == [t.task_id for t in second]


def test_kodcode_seed_changes_the_selection():
    assert [t.task_id for t in load_kodcode(n=4, seed=0, source=KOD_ROWS)] != [
        t.task_id for t in load_kodcode(n=4, seed=1, source=KOD_ROWS)
    ]


def test_kodcode_ineligible_rows_are_skipped_not_selected():
    rows = [
        kod_row("bad1", test="def test_x(:\n    pass"),
        kod_row("bad2", test_info=[]),
        # reference fails
        kod_row("bad3", test=KOD_TEST + "\ndef test_more():\n    assert two_sum([1, 2], 3) == [1, 0]\n"),
        kod_row("good"),
    ]
    assert [t.task_id for t in load_kodcode(n=10, source=rows)] == ["kodcode/good"]


def test_kodcode_rows_pytest_runs_are_eligible_whatever_they_use():
    rows = [  # `import solution` and capsys: pytest runs them, and their reference passes them
        kod_row("mod", test="import solution\ndef test_a():\n    assert solution.two_sum([1], 1) is None"),
        kod_row(
            "cap",
            test=KOD_TEST + "\ndef test_capture(capsys):\n    print(two_sum([1, 2], 3))\n"
            "    assert capsys.readouterr().out == '[0, 1]\\n'\n",
        ),
    ]
    assert sorted(t.task_id for t in load_kodcode(n=10, source=rows)) == ["kodcode/cap", "kodcode/mod"]


def test_kodcode_no_eligible_row_is_an_error():
    with pytest.raises(ValueError, match="no eligible task"):
        load_kodcode(n=3, source=[kod_row("bad", test="x = 1\n")])


def test_kodcode_each_test_pytest_collects_is_one_case():
    task = load_kodcode(n=1, source=[kod_row("q")])[0]
    assert task.hidden_tests.cases == (
        "test_basic",
        "test_alias",
        "test_raises",
        "test_pairs[nums0-6-expected0]",
        "test_pairs[nums1-7-expected1]",
    )  # one case per parameter set, named as pytest names it
    assert task.hidden_tests.setup == KOD_TEST and task.hidden_tests.runner == "pytest"


def test_kodcode_cases_pass_the_reference_and_fail_a_wrong_program(executor):
    task = load_kodcode(n=1, source=[kod_row("q")], executor=executor)[0]
    assert executor.run(task.program(task.reference), task.hidden_tests).solved
    wrong = task.reference.replace("return [seen[target - x], i]", "return [i, seen[target - x]]")
    res = executor.run(task.program(wrong), task.hidden_tests)
    assert [o.passed for o in res.outcomes] == [False, True, True, False, False]


def test_kodcode_prompt_names_the_function_when_the_question_does_not():
    task = load_kodcode(n=1, source=[kod_row("q")])[0]
    assert "def two_sum(nums, target):" in task.prompt and task.entry_point == "two_sum"


def test_kodcode_filters_by_subset_and_difficulty():
    tasks = load_kodcode(n=20, source=KOD_ROWS, subset="Apps", difficulty="easy")
    assert tasks and all(t.metadata["subset"] == "Apps" and t.difficulty == "easy" for t in tasks)


def test_registry_loads_by_name_with_loader_arguments():
    assert [t.task_id for t in load_tasks("kodcode", n=2, source=KOD_ROWS)] == [
        t.task_id for t in load_kodcode(n=2, source=KOD_ROWS)
    ]
