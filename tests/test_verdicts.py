"""murphy_lab.experiments.verdicts: verdict lines paired by seed, and the per-run training budget."""

from __future__ import annotations

import pandas as pd
import pytest

from murphy_lab.experiments.paper import METHOD_NAMES
from murphy_lab.experiments.verdicts import budget_table, paired_verdicts


def results(rows):
    return pd.DataFrame(
        [
            dict(method=m, variant=v, seed=s, k=3, difficulty="all", benchmark="toy", **{"pass@1": p})
            for m, v, s, p in rows
        ]
    )


def test_verdicts_pair_by_seed_and_use_only_seeds_both_methods_ran():
    rows = [("murphy", "mars", s, 20.0 + s + 2.0) for s in range(4)] + [
        ("grpo_mt", "-", s, 20.0 + s) for s in range(5)
    ]
    rows.append(("murphy", "mers_0.9", 0, 99.0))  # an ablation variant is not the main configuration
    (line,) = paired_verdicts(results(rows), k=3, pairs=[("murphy", "grpo_mt")])
    murphy = METHOD_NAMES["murphy"]
    assert (
        line.startswith(f"{murphy} − GRPO-MT at Iter-3: +2.00 pp")
        and f"over 4 paired seeds — {murphy} ahead" in line
    )


def test_one_paired_seed_gives_no_verdict():
    rows = [("murphy", "mars", 0, 30.0), ("grpo_mt", "-", 0, 20.0)]
    (line,) = paired_verdicts(results(rows), k=3, pairs=[("murphy", "grpo_mt")])
    assert line.endswith("no verdict")


def test_a_method_that_did_not_run_gives_no_line():
    assert paired_verdicts(results([("murphy", "mars", 0, 30.0)]), k=3, pairs=[("murphy", "grpo")]) == []


def cells(rows):
    """Result rows (model, benchmark, method, variant, seed, pass@1) at Iter-3, difficulty "all", 100 tasks."""
    return pd.DataFrame(
        [
            dict(
                model=mo,
                benchmark=b,
                method=m,
                variant=v,
                seed=s,
                k=3,
                difficulty="all",
                n_tasks=100,
                scaffold="reflexion",
                **{"pass@1": p},
            )
            for mo, b, m, v, s, p in rows
        ]
    )


def test_each_model_and_benchmark_is_its_own_verdict_never_a_pooled_one():
    # +4 pp on one model, −3.7 pp on the other: pooled, they read "+0.15, no difference"; per cell, two verdicts
    rows = [
        (mo, "MBPP", m, v, s, base + s * 0.5 + (gain if m == "murphy" else 0.0))
        for mo, base, gain in (("A", 30.0, 4.0), ("B", 60.0, -3.7))
        for s in range(3)
        for m, v in (("murphy", "mars"), ("grpo_mt", "-"))
    ]
    lines = paired_verdicts(cells(rows), k=3, pairs=[("murphy", "grpo_mt")])
    murphy = METHOD_NAMES["murphy"]
    assert lines == [
        f"{murphy} − GRPO-MT at Iter-3 (A): +4.00 pp, 95% CI [+4.00, +4.00] over 3 paired seeds — {murphy} ahead",
        f"{murphy} − GRPO-MT at Iter-3 (B): -3.70 pp, 95% CI [-3.70, -3.70] over 3 paired seeds — GRPO-MT ahead",
    ]


def test_a_seed_missing_in_one_cell_leaves_only_that_cell_with_fewer_seeds():
    # MURPHY's seed-2 run on MBPP is missing: HumanEval keeps its 3 paired seeds, MBPP pairs seeds 0 and 1 only
    # (before, seed 2's "paired" values were MURPHY on HumanEval against GRPO-MT on HumanEval and MBPP)
    rows = [
        ("A", b, m, v, s, 50.0 + s + (2.0 if m == "murphy" else 0.0) + (s * s if b == "MBPP" else 0.0))
        for b in ("HumanEval", "MBPP")
        for s in range(3)
        for m, v in (("murphy", "mars"), ("grpo_mt", "-"))
        if not (b == "MBPP" and s == 2 and m == "murphy")
    ]
    he, mbpp = paired_verdicts(cells(rows), k=3, pairs=[("murphy", "grpo_mt")])
    assert "(HumanEval): +2.00 pp" in he and "over 3 paired seeds" in he
    assert "(MBPP): +2.00 pp" in mbpp and "over 2 paired seeds" in mbpp


def test_seeds_evaluated_on_different_task_counts_are_not_paired():
    frame = cells(
        [
            ("A", "MBPP", m, v, s, 40.0 + s + (1.0 if m == "murphy" else 0.0))
            for s in range(3)
            for m, v in (("murphy", "mars"), ("grpo_mt", "-"))
        ]
    )
    frame.loc[(frame["method"] == "murphy") & (frame["seed"] == 0), "n_tasks"] = 50  # another task set
    (line,) = paired_verdicts(frame, k=3, pairs=[("murphy", "grpo_mt")])
    assert "over 2 paired seeds" in line and "1 seed(s) left out: different task counts" in line


def test_ablation_variants_are_compared_as_columns_of_their_own():
    from murphy_lab.experiments.verdicts import CREDIT_PAIRS, PRUNING_PAIRS

    rows = [
        ("Q", "MBPP", "murphy", v, s, 60.0 + s + d)
        for s in range(3)
        for v, d in (("mars", 2.0), ("mers_0.9", 0.0), ("mars+interp", 1.5))
    ]
    credit = paired_verdicts(cells(rows), k=3, pairs=CREDIT_PAIRS)
    pruning = paired_verdicts(cells(rows), k=3, pairs=PRUNING_PAIRS)
    assert credit == [
        "MaRS − MeRS γ=0.9 at Iter-3: +2.00 pp, 95% CI [+2.00, +2.00] over 3 paired seeds — MaRS ahead"
    ]
    assert pruning == [
        "MaRS + InterP − MaRS at Iter-3: -0.50 pp, 95% CI [-0.50, -0.50] over 3 paired seeds — MaRS ahead"
    ]


def test_main_cells_read_livecodebench_on_its_hard_split_and_scaffolds_apart():
    rows = [
        dict(
            model="Q",
            benchmark="LCB-v6",
            difficulty=d,
            scaffold=sc,
            method=m,
            variant=v,
            seed=s,
            k=5,
            **{"pass@1": 10.0 + s + (gain if m == "murphy" else 0.0)},
        )
        for d, gain in (("all", 1.0), ("hard", 4.0))
        for sc in ("reflexion", "lats")
        for s in range(2)
        for m, v in (("murphy", "mars"), ("base", "-"))
    ]
    main = paired_verdicts(pd.DataFrame(rows), k=5, pairs=[("murphy", "base")])
    assert [line.split(":")[0] for line in main] == [
        f"{METHOD_NAMES['murphy']} − Base at Iter-5 (reflexion)",
        f"{METHOD_NAMES['murphy']} − Base at Iter-5 (lats)",
    ]
    assert all("+4.00 pp" in line for line in main)  # the Hard rows, as the main table shows LCB-v6
    by_difficulty = paired_verdicts(pd.DataFrame(rows), k=5, pairs=[("murphy", "base")], difficulty=None)
    assert len(by_difficulty) == 4 and any(
        line.startswith(f"{METHOD_NAMES['murphy']} − Base at Iter-5 (reflexion, LCB-v6 Hard): +4.00 pp")
        for line in by_difficulty
    )


def test_budget_sums_steps_of_a_run_and_averages_over_seeds():
    m = pd.DataFrame(
        [
            dict(
                method=meth,
                variant=v,
                seed=s,
                step=st,
                generated=True,
                **{
                    "trajectories/total": tot,
                    "trajectories/kept": tot // 2,
                    "completions/mean_length": 10.0,
                    "time/step_s": 6.0,
                },
            )
            for meth, v, tot in (("murphy", "mars", 20), ("grpo", "-", 4))
            for s in (0, 1)
            for st in (1, 2)
        ]
    )
    t = budget_table(m).frame.set_index("method")
    murphy = METHOD_NAMES["murphy"]
    assert t.loc[murphy, "sampled sequences"] == 40 and t.loc["GRPO", "sampled sequences"] == 8
    assert t.loc[murphy, "trained sequences"] == 20 and t.loc[murphy, "completion tokens"] == 400
    assert t.loc["GRPO", "train time (min)"] == pytest.approx(0.2) and t.loc["GRPO", "seeds"] == 2


def test_budget_of_no_runs_is_an_empty_table():
    assert budget_table(pd.DataFrame()).frame.empty


def test_budget_skips_log_lines_without_round_statistics():
    m = pd.DataFrame(
        [
            dict(
                method="murphy",
                variant="mars",
                seed=0,
                step=1,
                generated=True,
                **{
                    "trajectories/total": 20,
                    "trajectories/kept": 10,
                    "completions/mean_length": 5.0,
                    "time/step_s": 6.0,
                },
            ),
            dict(method="mucode", variant="-", seed=0, step=1, loss=0.3),
        ]
    )  # µCode's SFT log: no rounds
    t = budget_table(m)
    assert list(t.frame["method"]) == [METHOD_NAMES["murphy"]] and any("µCode" in n for n in t.notes)


def test_budget_without_wall_time_has_no_time_column_and_the_same_spend():
    m = pd.DataFrame(
        [
            dict(
                method="grpo",
                variant="-",
                seed=0,
                step=st,
                generated=True,
                **{
                    "trajectories/total": 4,
                    "trajectories/kept": 2,
                    "completions/mean_length": 10.0,
                    "time/step_s": 6.0,
                },
            )
            for st in (1, 2)
        ]
    )
    timed, untimed = budget_table(m), budget_table(m, wall_time=False)
    assert "train time (min)" in timed.frame.columns and "train time (min)" not in untimed.frame.columns
    assert not any("wall time" in n for n in untimed.notes)
    assert timed.frame.drop(columns=["train time (min)"]).equals(untimed.frame)
