"""TCP-friendly rate control for non-TCP multipath flows (Pluntke & Rio 2011).

Equation-based rates (:func:`tcp_rate`, :func:`mptcp_rates`), the TCP-friendly region of eq. (1)
(:func:`friendly_region_lp`, :func:`allocate_greedy`), the optimising controller of Section 3
(:func:`optimise`), FEC sizing (:func:`fec_residual_loss`) and the streaming run of Figure 1
(:func:`run_stream`). See ``README.md`` in this directory.
"""

from typing import TYPE_CHECKING

from pathpool._lazy import lazy_exports

if TYPE_CHECKING:
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

# Imported on first use, so that `pathpool --help` and the CLI parsers stay light.
__getattr__, __dir__ = lazy_exports(__name__, {
    'MptcpRates': 'pathpool.ratecontrol.equations',
    'lia_alpha': 'pathpool.ratecontrol.equations',
    'mptcp_rates': 'pathpool.ratecontrol.equations',
    'tcp_rate': 'pathpool.ratecontrol.equations',
    'choose_source_count': 'pathpool.ratecontrol.fec',
    'fec_residual_loss': 'pathpool.ratecontrol.fec',
    'Optimised': 'pathpool.ratecontrol.objective',
    'late_bound': 'pathpool.ratecontrol.objective',
    'optimise': 'pathpool.ratecontrol.objective',
    'path_weights': 'pathpool.ratecontrol.objective',
    'Allocation': 'pathpool.ratecontrol.region',
    'allocate_greedy': 'pathpool.ratecontrol.region',
    'friendliness_violation': 'pathpool.ratecontrol.region',
    'friendly_region_lp': 'pathpool.ratecontrol.region',
    'ConfigError': 'pathpool.ratecontrol.stream',
    'Estimates': 'pathpool.ratecontrol.stream',
    'Feedback': 'pathpool.ratecontrol.stream',
    'MptcpEquationController': 'pathpool.ratecontrol.stream',
    'OptimisingController': 'pathpool.ratecontrol.stream',
    'StreamConfig': 'pathpool.ratecontrol.stream',
    'StreamResult': 'pathpool.ratecontrol.stream',
    'load_config': 'pathpool.ratecontrol.stream',
    'run_stream': 'pathpool.ratecontrol.stream',
})

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
