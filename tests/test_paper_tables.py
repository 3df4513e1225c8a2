"""tables.py and paper.py: aggregation over seeds, the paper's layout, comparison with the paper, file formats."""

import pandas as pd
import pytest

from murphy_lab.experiments import ablation_tables as A
from murphy_lab.experiments import paper
from murphy_lab.experiments import paper_tables as T


def results(rows):
    """A long results frame (as experiments.results_frame returns) from (model, method, bench, diff, k, seed, pass@1)."""
    out = []
    for model, method, bench, diff, k, seed, p in rows:
        out.append(
            dict(
                model=model,
                method=method,
                variant="mars" if method == "murphy" else "-",
                credit="mars",
                gamma=1.0,
                pruning="none",
                scaffold="reflexion",
                benchmark=bench,
                difficulty=diff,
                k=k,
                seed=seed,
                **{"pass@1": p},
                std=1.5,
                backend="real",
            )
        )
    return pd.DataFrame(out)


def test_aggregate_is_mean_and_population_std_over_seeds():
    agg = T.aggregate(
        results([("toy", "murphy", "toy", "all", 1, 0, 40.0), ("toy", "murphy", "toy", "all", 1, 1, 50.0)])
    )
    (row,) = agg.itertuples()
    assert (row.mean, row.std, row.n_seeds, row.std_over) == (45.0, 5.0, 2, "seeds")


def test_aggregate_with_one_seed_reports_the_evaluation_std():
    (row,) = T.aggregate(results([("toy", "base", "toy", "all", 3, 0, 40.0)])).itertuples()
    assert (row.std, row.std_over) == (1.5, "runs")


def test_aggregate_names_missing_columns():
    with pytest.raises(ValueError, match="seed"):
        T.aggregate(results([("toy", "base", "toy", "all", 1, 0, 1.0)]).drop(columns="seed"))


def test_paper_main_table_transcription():
    pt = paper.main_table()
    assert len(pt) == 11 * len(paper.METHODS)
    assert paper.lookup("OLMo-2-7B", "HumanEval", 1, "murphy") == (45.53, 0.70)
    assert paper.lookup("Qwen3-1.7B", "MBPP", 3, "base") == (53.93, 3.52)
    assert paper.lookup("Qwen3-4B", "LCB-v6 Hard", 5, "reveal") == (19.14, 0.86)
    assert set(pt.dropna()["benchmark"][pt.dropna()["method"] == "reveal"]) == {"LCB-v6 Hard"}
    assert pt[pt["method"] == "grpo"]["mean"].isna().all()  # the paper has no single-turn GRPO column


def test_paper_ablation_transcription():
    ab = paper.ablation_table("pruning").set_index(["variant", "benchmark", "iter"])
    assert tuple(ab.loc[("intrap", "HumanEval", 1), ["mean", "std", "kept_traj"]]) == (82.34, 1.03, 36)
    assert ab.loc[("interp", "MBPP", 3), "kept_traj"] == 40
    assert len(paper.ablation_table("credit")) == 9


def test_the_papers_mbpp_numbers_are_whole_counts_of_500_tasks_times_3_runs():
    # a mean of 3 runs over N tasks is (solved trials) / 3N: which N makes the 20 distinct MBPP cells whole counts?
    cells = paper.benchmark_cells("MBPP")
    assert len(cells) == 20  # 16 of the main table, 4 more of the ablations (MeRS x 2, IntraP, InterP)

    def whole(tasks):
        return [
            k
            for k, (mean, _) in cells.items()
            if paper.solved_trials(mean, paper.EVAL_RUNS * tasks) is not None
        ]

    assert paper.MBPP_TASKS == 500 and len(whole(500)) == 19  # full MBPP's test split, task ids 11-510
    (odd,) = set(cells) - set(whole(500))  # 19.90 % is 298.5 of 1,500: a half count (500 x 6 runs would fit)
    assert odd == "OLMo-2-7B Iter-1 base" and paper.solved_trials(19.90, 3000) == 597
    assert paper.solved_trials(62.00, 1500) == 930 and paper.solved_trials(19.90, 1500) is None
    for sanitized in (257, 427):  # the sanitized test split, and all of sanitized MBPP: chance level
        assert len(whole(sanitized)) <= 1
    assert len(whole(974)) <= 2  # all of full MBPP


def test_the_papers_lcb_hard_numbers_are_no_whole_counts_of_a_small_task_set_times_3_runs():
    # so the arithmetic cannot choose LiveCodeBench-v6's window (docs/evaluation.md): the text does
    cells = paper.benchmark_cells("LCB-v6 Hard")
    fits = {
        n: sum(paper.solved_trials(m, 3 * n) is not None for m, _ in cells.values()) for n in range(1, 201)
    }
    assert len(cells) == 15 and max(fits.values()) == 5 and fits[80] == 0


def test_the_papers_plus_minus_fits_a_sample_std_of_three_values():
    cells = paper.benchmark_cells("MBPP")
    sample = [k for k, (m, s) in cells.items() if paper.run_counts(m, s, 500, ddof=1)]
    population = [k for k, (m, s) in cells.items() if paper.run_counts(m, s, 500, ddof=0)]
    assert (len(sample), len(population)) == (16, 6)
    assert paper.run_counts(62.00, 1.91, 500) is not None  # e.g. MURPHY on Qwen3-1.7B: three whole runs
    he = paper.benchmark_cells("HumanEval")  # HumanEval's 164 tasks are certain: the same convention shows
    assert (
        len(he) == 25 and sum(paper.run_counts(m, s, 164, ddof=1) is not None for m, s in he.values()) == 11
    )
    assert sum(paper.run_counts(m, s, 164, ddof=0) is not None for m, s in he.values()) == 2


def test_ablation_table_rejects_an_unknown_axis():
    with pytest.raises(ValueError, match="axis"):
        paper.ablation_table("tokens")


def test_main_table_shows_dash_and_a_note_for_baselines_without_numbers():
    agg = T.aggregate(results([("toy", m, "toy", "all", 1, 0, 10.0) for m in ("base", "murphy")]))
    ours = T.main_tables(agg, profile="toy")[0]
    assert set(ours.frame["µCode"]) == {T.DASH} and set(ours.frame["ReVeal"]) == {T.DASH}
    assert any("ReVeal" in n and "never taught" in n and "rewards are zero" in n for n in ours.notes)
    assert any("µCode" in n and "not run in the toy demo" in n for n in ours.notes)


def test_main_table_compares_cells_the_paper_reports():
    agg = T.aggregate(results([("Qwen3-4B", "murphy", "LCB-v6", "hard", 5, 0, 25.29)]))
    comp = T.main_tables(agg)[2].frame
    assert comp.to_dict("records") == [
        dict(
            model="Qwen3-4B",
            benchmark="LCB-v6 Hard",
            iter=5,
            method="Murphy (MaRS)",
            ours="25.29 ± 1.50",
            paper="24.29 ± 0.38",
            diff_pp=1.0,
        )
    ]


def test_main_table_notes_label_what_the_paper_does_not_state():
    agg = T.aggregate(
        results(
            [("Qwen3-4B", m, "MBPP", "all", 3, s, 70.0 + s) for s in (0, 1) for m in ("murphy", "mucode")]
        )
    )
    ours, theirs, comp = T.main_tables(agg)
    assert any(n.startswith("µCode: the plain Iter-k pass@1") and "best-of-N" in n for n in ours.notes)
    assert any("does not say over what" in n and "sample std (n − 1)" in n for n in theirs.notes)
    assert any("Compare the means" in n for n in comp.notes)
    assert any("full MBPP's test split (500 tasks)" in n and "release v6" in n for n in comp.notes)


def test_main_table_notes_say_how_reveal_and_livecodebench_were_scored():
    agg = T.aggregate(results([("Qwen3-4B", m, "LCB-v6", "hard", 1, 0, 12.0) for m in ("reveal", "murphy")]))
    notes = T.main_tables(agg)[0].notes
    assert any(
        n.startswith("ReVeal: evaluated in its tagged rounds with the same public-test feedback")
        for n in notes
    )
    assert any(n.startswith("LiveCodeBench runs as lcb_runner runs it") and "1 GB" in n for n in notes)
    toy = T.main_tables(T.aggregate(results([("toy", "murphy", "toy", "all", 1, 0, 10.0)])))[0].notes
    assert not any("lcb_runner" in n or n.startswith("ReVeal: evaluated") for n in toy)


def test_main_table_says_when_nothing_matches_the_paper():
    agg = T.aggregate(results([("toy", "murphy", "toy", "all", 1, 0, 10.0)]))
    comp = T.main_tables(agg)[2]
    assert comp.frame.empty and any("No cell to compare" in n for n in comp.notes)


def test_main_rows_keep_lcb_hard_and_all_elsewhere():
    rows = [("m", "base", "LCB-v6", d, 1, 0, 1.0) for d in ("all", "easy", "hard")]
    rows += [("m", "base", "MBPP", d, 1, 0, 1.0) for d in ("all", "easy")]
    kept = T.main_rows(T.aggregate(results(rows)))
    assert sorted(zip(kept["benchmark"], kept["difficulty"])) == [("LCB-v6", "hard"), ("MBPP", "all")]


def test_main_table_rows_are_ordered_by_iter_k():
    agg = T.aggregate(results([("toy", "base", "toy", "all", k, 0, 1.0) for k in (5, 1, 3)]))
    assert T.main_tables(agg)[0].frame["Iter-k"].tolist() == [1, 3, 5]


def test_stand_in_results_are_labelled_in_notes():
    df = results([("toy", "base", "toy", "all", 1, 0, 1.0)]).assign(backend="stand-in")
    assert any("STAND-IN" in n for n in T.main_tables(T.aggregate(df))[0].notes)


def test_fmt():
    assert (T.fmt(45.531, 0.7), T.fmt(float("nan"), 1.0), T.fmt(3.0)) == ("45.53 ± 0.70", T.DASH, "3.00")


def test_write_tables_writes_csv_markdown_and_latex(tmp_path):
    agg = T.aggregate(results([("toy", "murphy", "toy", "all", 1, 0, 10.0)]))
    paths = T.write_tables(T.main_tables(agg), tmp_path, "main_table")
    assert {p.name for p in tmp_path.iterdir()} == {
        "main_table.csv",
        "main_table_paper.csv",
        "main_table_vs_paper.csv",
        "main_table.md",
        "main_table.tex",
    }
    assert pd.read_csv(paths["main_table"])["Murphy (MaRS)"].tolist() == ["10.00 ± 1.50"]
    assert "| model | benchmark | Iter-k |" in paths["md"].read_text()


def test_latex_escapes_special_characters():
    t = T.Table(
        "x_y", "pass@1 (%)", pd.DataFrame({"µCode": ["1.00 ± 0.50"], "a_b": ["–"]}), ["50% & more #1"]
    )
    tex = t.to_latex()
    assert r"$\mu$Code" in tex and r"1.00 $\pm$ 0.50" in tex and r"a\_b" in tex and r"50\% \& more \#1" in tex
    assert "(\\%)" in tex and "--" in tex


def test_pruning_cost_is_per_tree_and_per_step():
    metrics = pd.DataFrame(
        [
            dict(
                method="murphy",
                pruning="none",
                generated=True,
                trees=2,
                **{
                    "trajectories/kept": 144,
                    "trajectories/total": 144,
                    "time/optimization_s": 2.0,
                    "time/step_s": 8.0,
                },
            ),
            dict(
                method="murphy",
                pruning="interp",
                generated=True,
                trees=2,
                **{
                    "trajectories/kept": 80,
                    "trajectories/total": 144,
                    "time/optimization_s": 1.0,
                    "time/step_s": 6.0,
                },
            ),
        ]
    )
    cost = A.pruning_cost(metrics).set_index("pruning")
    assert tuple(cost.loc["interp"]) == (40.0, 72.0, 1.0, 6.0)


def test_pruning_table_reports_change_against_no_pruning():
    rows = results([("toy", "murphy", "toy", "all", 1, 0, 10.0)] * 2)
    rows = rows.assign(pruning=["none", "interp"], variant=["mars", "mars+interp"])
    metrics = pd.DataFrame(
        [
            dict(method="murphy", pruning=p, **{"time/optimization_s": t})
            for p, t in (("none", 2.0), ("interp", 1.0))
        ]
    )
    ours = A.ablation_pruning_tables(T.aggregate(rows), metrics)[0].frame.set_index("variant")
    assert ours.loc["InterP", "optim. s/step"] == "1.00 (-50.0%)"
    assert ours.loc["none (MaRS)", "optim. s/step"] == "2.00"


def test_credit_ablation_compares_with_the_paper_on_qwen3_1_7b():
    rows = results([("Qwen3-1.7B", "murphy", "HumanEval", "all", 3, 0, 85.58)])
    diff = A.ablation_credit_tables(T.aggregate(rows))[2].frame
    assert diff[["variant", "paper", "diff_pp"]].values.tolist() == [["MaRS", "86.58 ± 1.06", -1.0]]


def test_lcb_difficulty_table_shows_gain_and_the_papers_iter5_gain():
    rows = [("Qwen3-4B", m, "LCB-v6", "hard", 5, 0, p) for m, p in (("base", 20.0), ("murphy", 25.0))]
    frame = T.lcb_difficulty_tables(T.aggregate(results(rows)))[0].frame
    assert frame[["difficulty", "Murphy − Base (pp)", "paper gain (pp)"]].values.tolist() == [
        ["Hard", "+5.00", "+4.20"]
    ]


def test_cross_scaffold_table_has_a_row_per_scaffold():
    rows = results([("toy", "murphy", "toy", "all", 1, 0, 10.0)] * 2).assign(scaffold=["reflexion", "lats"])
    frame = T.cross_scaffold_tables(T.aggregate(rows))[0].frame
    assert frame["scaffold"].tolist() == ["reflexion", "lats"]


def test_plot_pass_at_k_writes_a_png(tmp_path):
    agg = T.aggregate(
        results([("toy", m, "toy", "all", k, 0, 10.0 * k) for m in ("base", "murphy") for k in (1, 3)])
    )
    T.plot_pass_at_k(agg, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_main_table_notes_a_runnable_method_that_was_not_run():
    agg = T.aggregate(results([("toy", "murphy", "toy", "all", 1, 0, 10.0)]))
    assert any("GRPO-MT" in n and "not run here" in n for n in T.main_tables(agg)[0].notes)


def test_pruning_table_has_a_row_per_backup_order():
    rows = results([("toy", "murphy", "toy", "all", 1, 0, 10.0)] * 3)
    rows = rows.assign(
        pruning=["none", "interp", "interp"], variant=["mars", "mars+interp", "mars+interp+backup_pruned"]
    )
    metrics = pd.DataFrame(
        [
            dict(method="murphy", pruning=p, backup_on=b, **{"time/optimization_s": t})
            for p, b, t in (("none", "full", 2.0), ("interp", "full", 1.0), ("interp", "pruned", 1.5))
        ]
    )
    ours = A.ablation_pruning_tables(T.aggregate(rows), metrics)[0].frame.set_index("variant")
    assert ours.loc["InterP", "optim. s/step"] == "1.00 (-50.0%)"
    assert ours.loc["InterP, backup on pruned", "optim. s/step"] == "1.50 (-25.0%)"


def test_a_table_without_rows_is_its_title_and_notes_only():
    t = T.Table(
        "vs", "Ours vs paper, matching cells", pd.DataFrame(columns=["a", "b"]), ["No cell to compare."]
    )
    assert t.to_markdown() == "**Ours vs paper, matching cells**\n\n- No cell to compare.\n"
    assert "tabular" not in t.to_latex() and "No cell to compare." in t.to_latex()


def test_the_toy_main_table_has_no_empty_section():
    agg = T.aggregate(results([("toy", "murphy", "toy", "all", 1, 0, 10.0)]))
    md = "\n".join(t.to_markdown() for t in T.main_tables(agg))
    assert "| model | benchmark | iter | method |" not in md  # the empty comparison's header
    assert "No cell to compare" in md and "diff_pp" not in md


def test_figure_panels_name_model_and_benchmark_in_words():
    agg = T.aggregate(results([("toy", "murphy", "toy", "all", k, 0, 80.0 + k) for k in (1, 3)]))
    fig = T.plot_pass_at_k(agg)
    title = fig.axes[0].get_title().replace("\n", " ")
    assert "·" not in title and "Toy policy on held-out toy-world tasks: Iter-1" == title
    assert T.panel_title("Qwen3-4B", "LCB-v6 Hard") == "Qwen3-4B on LCB-v6 Hard"


def test_panel_titles_say_what_splits_the_benchmark():
    assert T.panel_title("toy", "toy Hard") == "Toy policy on held-out toy-world tasks, Hard"
    assert T.panel_title("toy", "toy · reflexion") == "Toy policy on held-out toy-world tasks, reflexion"
