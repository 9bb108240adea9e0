"""Analysis of multipath congestion control: the fluid model of Peng et al. 2016, its conditions
C0-C5, TCP-friendliness, the RSF rent-seeking game of Pokhrel & Williamson 2020, and cross-validation against the
packet-level simulator.  See ``README.md`` in this directory."""

from typing import TYPE_CHECKING

from pathpool._lazy import lazy_exports

if TYPE_CHECKING:
    from pathpool.analysis.algorithms import ALGORITHMS, Algorithm, get_algorithm
    from pathpool.analysis.conditions import (
                                              check_conditions,
                                              phi_jacobian,
                                              responsiveness,
                                              table_one,
                                              window_oscillation,
    )
    from pathpool.analysis.crossval import compare, fluid_prediction, scenario
    from pathpool.analysis.fluid import Equilibrium, Network, simulate, solve_equilibrium
    from pathpool.analysis.friendliness import fig1_network, fig2_network, friendliness
    from pathpool.analysis.game import RentSeekingGame

# Imported on first use, so that `pathpool --help` and the CLI parsers stay light.
__getattr__, __dir__ = lazy_exports(__name__, {
    'ALGORITHMS': 'pathpool.analysis.algorithms',
    'Algorithm': 'pathpool.analysis.algorithms',
    'get_algorithm': 'pathpool.analysis.algorithms',
    'check_conditions': 'pathpool.analysis.conditions',
    'phi_jacobian': 'pathpool.analysis.conditions',
    'responsiveness': 'pathpool.analysis.conditions',
    'table_one': 'pathpool.analysis.conditions',
    'window_oscillation': 'pathpool.analysis.conditions',
    'compare': 'pathpool.analysis.crossval',
    'fluid_prediction': 'pathpool.analysis.crossval',
    'scenario': 'pathpool.analysis.crossval',
    'Equilibrium': 'pathpool.analysis.fluid',
    'Network': 'pathpool.analysis.fluid',
    'simulate': 'pathpool.analysis.fluid',
    'solve_equilibrium': 'pathpool.analysis.fluid',
    'fig1_network': 'pathpool.analysis.friendliness',
    'fig2_network': 'pathpool.analysis.friendliness',
    'friendliness': 'pathpool.analysis.friendliness',
    'RentSeekingGame': 'pathpool.analysis.game',
})

__all__ = [
                                          "ALGORITHMS",
                                          "Algorithm",
                                          "Equilibrium",
                                          "Network",
                                          "RentSeekingGame",
                                          "check_conditions",
                                          "compare",
                                          "fig1_network",
                                          "fig2_network",
                                          "fluid_prediction",
                                          "friendliness",
                                          "get_algorithm",
                                          "phi_jacobian",
                                          "responsiveness",
                                          "scenario",
                                          "simulate",
                                          "solve_equilibrium",
                                          "table_one",
                                          "window_oscillation",
]
