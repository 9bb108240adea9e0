"""Reproduce the published experiments of Pokhrel & Williamson 2020 (RSF-MPTCP), Peng, Walid, Hwang
& Low 2016 (Balia) and Khalili's scenario as Walid et al. 2014 ran it, beside the published numbers
(``pathpool reproduce``).

::

    from pathpool.reproduce import reproduce, Options
    outcome = reproduce(["rsf"], seeds=10, out="report")
    outcome.comparison   # paper | ours (mean, 95% CI) | verdict, one row per published number
"""

from typing import TYPE_CHECKING

from pathpool._lazy import lazy_exports

if TYPE_CHECKING:
    from pathpool.reproduce.experiments import (
        Experiment,
        Options,
        build_jobs,
        load_experiment,
        load_experiments,
    )
    from pathpool.reproduce.runner import KernelOptions, Outcome, reproduce
    from pathpool.reproduce.verdict import TOLERANCE

# Imported on first use, so that `pathpool --help` and the CLI parsers stay light.
__getattr__, __dir__ = lazy_exports(__name__, {
    'Experiment': 'pathpool.reproduce.experiments',
    'Options': 'pathpool.reproduce.experiments',
    'build_jobs': 'pathpool.reproduce.experiments',
    'load_experiment': 'pathpool.reproduce.experiments',
    'load_experiments': 'pathpool.reproduce.experiments',
    'KernelOptions': 'pathpool.reproduce.runner',
    'Outcome': 'pathpool.reproduce.runner',
    'reproduce': 'pathpool.reproduce.runner',
    'TOLERANCE': 'pathpool.reproduce.verdict',
})

__all__ = ["TOLERANCE", "Experiment", "KernelOptions", "Options", "Outcome", "build_jobs", "load_experiment", "load_experiments", "reproduce"]
