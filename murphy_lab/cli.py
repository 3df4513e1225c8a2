"""What every `python -m murphy_lab.<x>` entry point does around its `main`: INFO logging, and a bad input (a
`ValueError`: unknown option, malformed task file, impossible config; or a `FileNotFoundError`: a data source or
file that is not there) printed as one line with exit status 2 instead of a traceback."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable


def report_problems(problems: list[str], ok: str) -> None:
    """A check's verdict: one line per problem and exit status 2, or the `ok` line (train --check, jobs check)."""
    for line in problems:
        print(line)
    if problems:
        raise SystemExit(2)
    print(ok)


def run(main: Callable[[], object]) -> None:
    logging.basicConfig(level=logging.INFO)
    try:
        main()
    except (ValueError, FileNotFoundError) as e:  # bad arguments, tasks, configuration or paths: one line
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
