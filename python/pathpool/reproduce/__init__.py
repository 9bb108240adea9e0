"""Reproduce the seed papers' experiments beside their published numbers (``pathpool reproduce``).

::

    from pathpool.reproduce import reproduce, Options
    outcome = reproduce(["rsf"], seeds=10, out="report")
    outcome.comparison   # paper | ours (mean, 95% CI) | verdict, one row per published number
"""

from pathpool.reproduce.experiments import (
    Experiment,
    Options,
    build_jobs,
    load_experiment,
    load_experiments,
)
from pathpool.reproduce.runner import Outcome, reproduce
from pathpool.reproduce.verdict import TOLERANCE

__all__ = ["TOLERANCE", "Experiment", "Options", "Outcome", "build_jobs", "load_experiment", "load_experiments", "reproduce"]
