"""Print a benchmark's counts: ``python -m murphy_lab.tasks mbpp split=test source=/path/to/mbpp``.

Values are read as JSON where they parse (``n=1000``, ``difficulty='["hard"]'``), else as strings.
"""

from __future__ import annotations

import json
import sys

from murphy_lab.tasks.registry import load_tasks
from murphy_lab.tasks.summary import summarize


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    kwargs = {}
    for arg in argv[1:]:
        key, _, value = arg.partition("=")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value
    print(json.dumps(summarize(load_tasks(argv[0], **kwargs)), indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
