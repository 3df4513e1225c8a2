"""murphy_lab.examples: the paper-shaped tree, the informative-failure example, the scripted policy, check_answer."""

import pytest

from murphy_lab.credit import mars, mers
from murphy_lab.examples import ScriptedTaxPolicy, informative_failure_tree, paper_tree
from murphy_lab.prune import interp, intrap
from murphy_lab.tree import build_tree


def test_paper_tree_has_72_trajectories_in_9_groups_with_every_turn1_failing():
    t = paper_tree(seed=3)
    assert len(t) == 72 and len(t.groups()) == 9
    assert all(v.reward < 1.0 for v in t.root.children)


def test_paper_tree_prunes_to_40_with_interp_and_36_with_intrap():
    assert len(interp(paper_tree(0), 4).nodes(kept_only=True)) == 40
    assert len(intrap(paper_tree(0), 4).nodes(kept_only=True)) == 36


def test_informative_failure_is_credited_by_mars_and_uninformative_is_not():
    t = mars(informative_failure_tree())
    a, b, _, _ = t.root.children
    assert (a.credit, b.credit) == (1.0, 0.0)


def test_mers_ranks_the_lucky_failure_below_the_informative_one():
    t = mers(informative_failure_tree(), gamma=1.0)
    a, _, _, d = t.root.children
    assert a.credit == pytest.approx(0.75 / 2) and d.credit == pytest.approx(0.125)


def test_informative_and_uninformative_failures_share_the_same_immediate_reward():
    a, b, _, d = informative_failure_tree().root.children
    assert a.reward == b.reward == d.reward == 0.0


def test_example_feedback_matches_what_the_executor_writes():
    pytest.importorskip("murphy_lab.executor")
    from murphy_lab.examples import TAX_TESTS
    from murphy_lab.executor import Executor

    a, b, _, d = informative_failure_tree().root.children
    with Executor(timeout=2.0, workers=1) as ex:
        results = ex.run_many([(v.code, TAX_TESTS) for v in (a, b, d)])
    assert [r.feedback for r in results] == [a.feedback, b.feedback, d.feedback]
    assert [r.reward for r in results] == [0.0, 0.0, 0.0]


def test_scripted_policy_makes_one_sample_call_per_turn_in_build_tree():
    policy = ScriptedTaxPolicy(seed=0)

    def run(program, tests):
        return type("R", (), {"reward": float("1.2" in program), "feedback": "== 12.0 output:"})()

    t = build_tree("task", [], policy, run, g1=4, g2=3, turns=2)
    assert policy.calls == 2 and len(t.root.children) == 4


def test_scripted_policy_rejects_probabilities_outside_unit_interval():
    with pytest.raises(ValueError, match="p_fix_blind"):
        ScriptedTaxPolicy(p_fix_blind=1.5)


def test_check_answer_accepts_a_right_number_and_rejects_a_wrong_one(capsys):
    from murphy_lab.examples import check_answer

    check_answer("x", 0.5, 0.5)
    assert "correct" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="exercise x"):
        check_answer("x", 0.4, 0.5)
