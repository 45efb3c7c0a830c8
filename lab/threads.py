"""One thread pool for the numbers: numpy's OpenBLAS is kept to one thread.

torch runs its ops on an OpenMP pool with one thread per core, and numpy's OpenBLAS keeps a second
pool of the same size. After a numpy matrix product the OpenBLAS threads spin, waiting for more
work, so the torch op that follows finds its cores taken: on this 2-core machine the positional
view at 128 tokens took 10.4 ms with both pools and 1.9 ms with OpenBLAS on one thread. The numpy
products here are small (a T x T Gram matrix at most), so one thread costs nothing.
threadpoolctl changes the limit of the library numpy has loaded, at run time (an environment
variable would be too late: Streamlit imports numpy before app.py runs).
"""

from __future__ import annotations

import numpy as np  # noqa: F401 - loads OpenBLAS, so that threadpoolctl can find and limit it
from threadpoolctl import threadpool_info, threadpool_limits

_limits = None


def single_blas_thread() -> None:
    """Limit numpy's BLAS to one thread for the rest of the process (idempotent)."""
    global _limits
    if _limits is None:
        _limits = threadpool_limits(limits=1, user_api="blas")


def blas_threads() -> list[int]:
    """The thread count of every BLAS library loaded in this process."""
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
