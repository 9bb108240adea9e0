"""Running the simulator from Python: scenarios, runs, results, and the CLI commands
``run``, ``algorithms``, ``validate`` and ``bench``.

The public names are re-exported by :mod:`pathpool`; this package imports nothing heavy
itself so that worker processes start fast.
"""
