"""numpy's BLAS runs on one thread once lab is imported, so it never fights torch's OpenMP pool."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_importing_lab_limits_numpy_blas_to_one_thread():
    code = (
        "import json\n"
        "import numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "before = [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas']\n"
        "import lab\n"
        "from lab.threads import blas_threads\n"
        "print(json.dumps([before, blas_threads()]))\n"
    )
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env=env)
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert before and all(n == 2 for n in before)  # numpy had a pool of two threads ...
    assert after and all(n == 1 for n in after)  # ... and importing lab left it one


def _app_threads(env_threads: str | None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if env_threads is not None:
        env["OMP_NUM_THREADS"] = env_threads
    code = "from lab.threads import app_torch_threads\nprint(app_torch_threads())\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env=env)
    return int(out.stdout.strip().splitlines()[-1])


def test_the_app_runs_torch_on_one_thread_unless_omp_num_threads_says_otherwise():
    assert _app_threads(None) == 1
    assert _app_threads("2") == 2
