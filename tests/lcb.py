"""LiveCodeBench-shaped fixtures: rows as `livecodebench/code_generation_lite` ships them (public tests as JSON
text, private tests as base64(zlib(pickle(json))), metadata as a JSON string) and LeetCode-/AtCoder-style solutions
that use names LiveCodeBench's import header provides (deque, Counter, heappush, inf, lru_cache, bisect_left,
List) without importing them — as accepted solutions on those sites routinely do."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

from murphy_lab.tasks.livecodebench import livecodebench_task


def compress(tests: list[dict]) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(tests)))).decode()


FUNCTIONAL_ROW = {
    "question_title": "kth-smallest-distinct-value",
    "question_content": "Given an integer array nums and an integer k, return the k-th smallest distinct value "
    "of nums, or -1 if nums has fewer than k distinct values.",
    "platform": "leetcode",
    "question_id": "3999",
    "contest_id": "weekly-contest-400",
    "contest_date": "2024-06-02T00:00:00",
    "starter_code": "class Solution:\n    def kthDistinct(self, nums: List[int], k: int) -> int:\n        ",
    "difficulty": "medium",
    "public_test_cases": json.dumps(
        [
            {"input": "[3, 1, 2, 3]\n2", "output": "2", "testtype": "functional"},
            {"input": "[5, 5]\n2", "output": "-1", "testtype": "functional"},
        ]
    ),
    "private_test_cases": compress(
        [
            {"input": "[7]\n1", "output": "7", "testtype": "functional"},
            {"input": "[4, 9, 4, 1]\n3", "output": "9", "testtype": "functional"},
        ]
    ),
    "metadata": json.dumps({"func_name": "kthDistinct"}),
}

# deque, Counter, heappush, heappop, inf, lru_cache, bisect_left and List, none imported
FUNCTIONAL_SOLUTION = """class Solution:
    def kthDistinct(self, nums: List[int], k: int) -> int:
        heap = []
        for x in Counter(nums):
            heappush(heap, x)
        order = deque(heappop(heap) for _ in range(len(heap)))
        values = list(order)

        @lru_cache(maxsize=None)
        def rank(v: int) -> int:
            return bisect_left(values, v)

        best = inf
        for v in values:
            if rank(v) == k - 1:
                best = min(best, v)
        return -1 if best == inf else best
"""

STDIN_ROW = {
    "question_title": "Distinct Count",
    "question_content": "You are given N integers. Print how many distinct values there are.\n\nInput\nN\nA_1 ... A_N",
    "platform": "atcoder",
    "question_id": "abc999_a",
    "contest_id": "abc999",
    "contest_date": "2024-07-06T00:00:00",
    "starter_code": "",
    "difficulty": "easy",
    "public_test_cases": json.dumps([{"input": "4\n1 2 2 3\n", "output": "3\n", "testtype": "stdin"}]),
    "private_test_cases": compress(
        [
            {"input": "1\n5\n", "output": "1\n", "testtype": "stdin"},
            {"input": "5\n1 1 1 1 1\n", "output": "1\n", "testtype": "stdin"},
        ]
    ),
    "metadata": "{}",
}

STDIN_SOLUTION = "import sys\n\nq = deque(sys.stdin.read().split()[1:])\nprint(len(Counter(q)))\n"


def functional_task():
    return livecodebench_task(dict(FUNCTIONAL_ROW))


def stdin_task():
    return livecodebench_task(dict(STDIN_ROW))


def fenced(code: str) -> str:
    """A chat model's answer: prose and a fenced block."""
    return f"Here is my solution.\n```python\n{code}```\n"
