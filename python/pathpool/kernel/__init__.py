"""pathpool's congestion controls in the real Linux kernel, as BPF ``tcp_congestion_ops``.

- :mod:`pathpool.kernel.loader`: build, load, list and unload the BPF algorithms
  (``pp_reno``, ``pp_lia``, ``pp_olia``, ``pp_balia``, ``pp_rsfdb``, ``pp_rsflb``).
- :mod:`pathpool.kernel.testbed`: network namespaces client/router/server with K emulated paths
  (rate, one-way delay, loss) and real MPTCP transfers over them.
- :mod:`pathpool.kernel.transfer`: the sender/receiver run inside the namespaces.

The how-to is ``kernel/README.md`` (the manual's "Linux kernel" pages).
"""

from pathpool.kernel.loader import (
    ALGORITHMS,
    KernelError,
    LoadedAlgorithms,
    build,
    check_environment,
    load,
    registered,
    status,
    unload,
)

__all__ = [
    "ALGORITHMS",
    "KernelError",
    "LoadedAlgorithms",
    "build",
    "check_environment",
    "load",
    "registered",
    "status",
    "unload",
]
