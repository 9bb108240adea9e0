"""Analysis of multipath congestion control: the fluid model of seed 004, its conditions
C0-C5, TCP-friendliness, the RSF rent-seeking game of seed 001, and cross-validation against the
packet-level simulator.  See ``README.md`` in this directory."""

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
