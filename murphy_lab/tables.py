"""`murphy_lab.tables` is `murphy_lab.experiments.tables` (the tables moved into the reproduce package)."""

import sys

from murphy_lab.experiments import tables

sys.modules[__name__] = tables  # one module under both names: attributes and monkeypatches are shared
