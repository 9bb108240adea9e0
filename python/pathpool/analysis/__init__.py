"""Analysis of multipath congestion control: the fluid model of seed 004, its conditions
C0-C5, TCP-friendliness, the RSF rent-seeking game of seed 001, and cross-validation against the
packet-level simulator.  See ``README.md`` in this directory."""

from pathpool.analysis.algorithms import ALGORITHMS, Algorithm, get_algorithm
from pathpool.analysis.conditions import (check_conditions, phi_jacobian, responsiveness,
                                          table_one, window_oscillation)
from pathpool.analysis.crossval import compare, fluid_prediction, scenario
from pathpool.analysis.fluid import Equilibrium, Network, simulate, solve_equilibrium
from pathpool.analysis.friendliness import fig1_network, fig2_network, friendliness
from pathpool.analysis.game import RentSeekingGame

__all__ = [
    "ALGORITHMS", "Algorithm", "get_algorithm",
    "Network", "Equilibrium", "simulate", "solve_equilibrium",
    "phi_jacobian", "check_conditions", "responsiveness", "window_oscillation", "table_one",
    "friendliness", "fig1_network", "fig2_network",
    "RentSeekingGame",
    "fluid_prediction", "scenario", "compare",
]
