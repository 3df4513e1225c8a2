"""`TestSuite` stands in for a list of tests: it iterates, indexes and refuses cases that test nothing."""

from __future__ import annotations

import pytest

from murphy_lab.executor import IOTest, TestSuite


def test_a_suite_iterates_like_its_list_of_cases():
    suite = TestSuite(cases=("assert f(1) == 2", IOTest("1", "2")), setup="x = 1\n")
    assert list(suite) == ["assert f(1) == 2", IOTest("1", "2")] and [t for t in suite] == list(suite.cases)


def test_a_suite_is_indexable_and_sliceable():
    suite = TestSuite(cases=("assert a", "assert b", "assert c"))
    assert (suite[0], suite[-1], suite[1:]) == ("assert a", "assert c", ("assert b", "assert c"))


@pytest.mark.parametrize("case", ["", "   \n", "# assert f(1) == 2", "\n  # only a comment\n\n"])
def test_empty_or_comment_only_cases_are_rejected_with_their_index(case):
    with pytest.raises(ValueError, match=r"test case 1 .* empty or only comments"):
        TestSuite(cases=("assert True", case))


def test_a_plain_list_with_an_empty_case_is_rejected_too():
    with pytest.raises(ValueError, match="test case 0"):
        TestSuite.of(["# nothing"])
