"""`streamlit run app.py` as a subprocess on a free loopback port, and what /proc says about it.

Used by the browser figure (bench/browser.py) and the classroom load test (scripts/classroom_load.py).
The server is always terminated and its log removed: `with app_server() as server: ...` on any exit.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"

# Flags for a server that serves a class (docs/classroom.md explains each).
SERVER_FLAGS = (
    "--server.headless", "true",
    "--server.runOnSave", "false",
    "--server.fileWatcherType", "none",
    "--browser.gatherUsageStats", "false",
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    """Resident memory of a process (VmRSS in /proc/<pid>/status), MiB; NaN when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024  # kB -> MiB
    except OSError:
        pass
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (/proc/<pid>/stat); NaN when unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": fields from 3 (state) on
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


@dataclass
class Server:
    url: str  # http://127.0.0.1:<port>/
    proc: subprocess.Popen
    log_path: Path
    rss_samples: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, MiB)
    started: float = field(default_factory=time.perf_counter)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss(self) -> float:
        value = rss_mib(self.pid)
        self.rss_samples.append((time.perf_counter() - self.started, value))
        return value

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "_stcore/health", timeout=2) as r:  # loopback only
            return r.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def app_server(
    app: Path = APP,
    *,
    port: int | None = None,
    torch_threads: int | None = 1,
    start_timeout: float = 60.0,
    extra_args: tuple[str, ...] = (),
) -> Iterator[Server]:
    """Start `python -m streamlit run app.py` on 127.0.0.1 and wait until /_stcore/health answers.

    torch_threads sets OMP_NUM_THREADS / MKL_NUM_THREADS for the server (1 by default: many sessions
    share a few cores, and one thread per forward pass avoids oversubscription).
    """
    port = port or free_port()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if torch_threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(torch_threads)
    log = tempfile.NamedTemporaryFile(prefix="streamlit-", suffix=".log", delete=False)  # noqa: SIM115
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(app),
        "--server.port", str(port), "--server.address", "127.0.0.1", *SERVER_FLAGS, *extra_args,
    ]
    proc = subprocess.Popen(cmd, cwd=str(app.parent), env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}/", proc, Path(log.name))
    try:
        deadline = time.monotonic() + start_timeout
        while not _healthy(server.url):
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"streamlit did not answer within {start_timeout:.0f} s:\n{server.log_tail()}")
            time.sleep(0.2)
        yield server
    finally:
        stop(proc)
        log.close()
        server.log_path.unlink(missing_ok=True)  # its tail is in a failed start's error; kept, one per run piled up in /tmp


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Terminate the server (SIGTERM, then SIGKILL after `grace` seconds); only this process."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
