"""Threads for the numbers: numpy's OpenBLAS is kept to one thread; the app's torch too.

torch runs its ops on an OpenMP pool with one thread per core, and numpy's OpenBLAS keeps a second
pool of the same size. After a numpy matrix product the OpenBLAS threads spin, waiting for more
work, so the torch op that follows finds its cores taken: on this 2-core machine the positional
view at 128 tokens took 10.4 ms with both pools and 1.9 ms with OpenBLAS on one thread. The numpy
products here are small (a T x T Gram matrix at most), so one thread costs nothing.
threadpoolctl changes the limit of the library numpy has loaded, at run time (an environment
variable would be too late: Streamlit imports numpy before app.py runs).

The app also runs torch on one thread unless OMP_NUM_THREADS says otherwise (app_torch_threads).
Its script threads share the cores with other sessions and, on a laptop, with the browser drawing
the charts; an OpenMP op then waits for a worker thread that is not running. Measured in the live
server at 32 tokens with the browser on the same 2 cores: a new sentence's script run took
210-780 ms with two torch threads (deriving one head's scores: 18 ms per tiny matmul) and ~90 ms
with one. Set OMP_NUM_THREADS=2 (or more) for the base model at long inputs on an idle machine.
"""

from __future__ import annotations

import os

import numpy as np  # noqa: F401 - loads OpenBLAS, so that threadpoolctl can find and limit it
import torch
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


def app_torch_threads() -> int:
    """Set torch's intra-op threads for the calling thread to OMP_NUM_THREADS, or 1 when it is unset.

    A thread that has run torch ops keeps its own count (OpenMP and MKL keep it per thread); a new
    thread starts with the last count set anywhere in the process. Streamlit runs every rerun, and
    every fragment rerun, in a new script thread, and other code in the process may set another
    count: the app calls this at the start of both."""
    wanted = int(os.environ.get("OMP_NUM_THREADS") or 1)
    if torch.get_num_threads() != wanted:
        torch.set_num_threads(wanted)
    return wanted
