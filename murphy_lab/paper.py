"""`murphy_lab.paper` is `murphy_lab.experiments.paper` (the paper's numbers moved into the reproduce package)."""

import sys

from murphy_lab.experiments import paper

sys.modules[__name__] = paper  # one module under both names
