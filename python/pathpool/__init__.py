"""pathpool: multipath congestion control, from theory to a running Linux kernel."""

from pathpool._core import __version__

__all__ = ["__version__"]
