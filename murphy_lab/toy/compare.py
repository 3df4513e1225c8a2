"""`python -m murphy_lab.toy.compare`: the older name of `murphy_lab.experiments.toy_compare` (an experiment runner
lives with the reproduce code, not in the world)."""

from murphy_lab.experiments.toy_compare import METHODS, main, run_one, summarize, turn1_informative_share

__all__ = ["METHODS", "main", "run_one", "summarize", "turn1_informative_share"]

if __name__ == "__main__":
    main()
