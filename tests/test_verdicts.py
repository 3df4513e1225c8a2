"""murphy_lab.experiments.verdicts: verdict lines paired by seed, and the per-run training budget."""

from __future__ import annotations

import pandas as pd
import pytest

from murphy_lab.experiments.paper import METHOD_NAMES
from murphy_lab.experiments.verdicts import budget_table, paired_verdicts


def results(rows):
    return pd.DataFrame([dict(method=m, variant=v, seed=s, k=3, difficulty="all", benchmark="toy", **{"pass@1": p})
                         for m, v, s, p in rows])  # fmt: skip


def test_verdicts_pair_by_seed_and_use_only_seeds_both_methods_ran():
    rows = [("murphy", "mars", s, 20.0 + s + 2.0) for s in range(4)] + [("grpo_mt", "-", s, 20.0 + s) for s in range(5)]
    rows.append(("murphy", "mers_0.9", 0, 99.0))  # an ablation variant is not the main configuration
    (line,) = paired_verdicts(results(rows), k=3, pairs=[("murphy", "grpo_mt")])
    murphy = METHOD_NAMES["murphy"]
    assert line.startswith(f"{murphy} − GRPO-MT at Iter-3: +2.00 pp") and f"over 4 paired seeds — {murphy} ahead" in line


def test_one_paired_seed_gives_no_verdict():
    rows = [("murphy", "mars", 0, 30.0), ("grpo_mt", "-", 0, 20.0)]
    (line,) = paired_verdicts(results(rows), k=3, pairs=[("murphy", "grpo_mt")])
    assert line.endswith("no verdict")


def test_a_method_that_did_not_run_gives_no_line():
    assert paired_verdicts(results([("murphy", "mars", 0, 30.0)]), k=3, pairs=[("murphy", "grpo")]) == []


def test_budget_sums_steps_of_a_run_and_averages_over_seeds():
    m = pd.DataFrame([dict(method=meth, variant=v, seed=s, step=st, generated=True, **{
        "trajectories/total": tot, "trajectories/kept": tot // 2, "completions/mean_length": 10.0, "time/step_s": 6.0})
        for meth, v, tot in (("murphy", "mars", 20), ("grpo", "-", 4)) for s in (0, 1) for st in (1, 2)])  # fmt: skip
    t = budget_table(m).frame.set_index("method")
    murphy = METHOD_NAMES["murphy"]
    assert t.loc[murphy, "sampled sequences"] == 40 and t.loc["GRPO", "sampled sequences"] == 8
    assert t.loc[murphy, "trained sequences"] == 20 and t.loc[murphy, "completion tokens"] == 400
    assert t.loc["GRPO", "train time (min)"] == pytest.approx(0.2) and t.loc["GRPO", "seeds"] == 2


def test_budget_of_no_runs_is_an_empty_table():
    assert budget_table(pd.DataFrame()).frame.empty


def test_budget_skips_log_lines_without_round_statistics():
    m = pd.DataFrame([dict(method="murphy", variant="mars", seed=0, step=1, generated=True, **{
        "trajectories/total": 20, "trajectories/kept": 10, "completions/mean_length": 5.0, "time/step_s": 6.0}),
        dict(method="mucode", variant="-", seed=0, step=1, loss=0.3)])  # µCode's SFT log: no rounds  # fmt: skip
    t = budget_table(m)
    assert list(t.frame["method"]) == [METHOD_NAMES["murphy"]] and any("µCode" in n for n in t.notes)
