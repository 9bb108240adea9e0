"""TCP-friendly rate control for non-TCP multipath flows (seed 003, Pluntke & Rio 2011).

Equation-based rates (:func:`tcp_rate`, :func:`mptcp_rates`), the TCP-friendly region of eq. (1)
(:func:`friendly_region_lp`, :func:`allocate_greedy`), the optimising controller of Section 3
(:func:`optimise`), FEC sizing (:func:`fec_residual_loss`) and the streaming run of Figure 1
(:func:`run_stream`). See ``README.md`` in this directory.
"""

from pathpool.ratecontrol.equations import MptcpRates, lia_alpha, mptcp_rates, tcp_rate
from pathpool.ratecontrol.fec import choose_source_count, fec_residual_loss
from pathpool.ratecontrol.objective import Optimised, late_bound, optimise, path_weights
from pathpool.ratecontrol.region import (
    Allocation,
    allocate_greedy,
    friendliness_violation,
    friendly_region_lp,
)
from pathpool.ratecontrol.stream import (
    ConfigError,
    Estimates,
    Feedback,
    MptcpEquationController,
    OptimisingController,
    StreamConfig,
    StreamResult,
    load_config,
    run_stream,
)

__all__ = [
    "Allocation",
    "ConfigError",
    "Estimates",
    "Feedback",
    "MptcpEquationController",
    "MptcpRates",
    "Optimised",
    "OptimisingController",
    "StreamConfig",
    "StreamResult",
    "allocate_greedy",
    "choose_source_count",
    "fec_residual_loss",
    "friendliness_violation",
    "friendly_region_lp",
    "late_bound",
    "lia_alpha",
    "load_config",
    "mptcp_rates",
    "optimise",
    "path_weights",
    "run_stream",
    "tcp_rate",
]
