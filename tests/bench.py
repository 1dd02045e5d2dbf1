"""`make bench`: time a clean, forced-execution build of the whole book, page by page.

    python tests/bench.py [--output _build/bench.md]

Builds the book exactly as `make book` does (``-W -n --keep-going --all``, every page executed)
into a fresh temporary folder, so nothing cached is reused and ``_build/html`` is left alone. It
reads myst-nb's "Executed notebook in N seconds" log line of each page, times the whole build,
and records peak memory two ways: the largest single process (``getrusage`` of the finished
children: the build or one page's kernel) and the whole process tree at its largest (sampled with
psutil), and each page's kernel CPU time (sampled; close to the page's wall time on an idle
machine, since torch runs on one thread). The markdown table goes to ``_build/bench.md`` and to the terminal; the full build log
to ``_build/bench.log``.

Budgets (BOOK.md): the whole clean build ≤ 90 s, no page > 15 s, on 2 cores. A busy machine
inflates every figure: the table records the core count and the load average before the run.
The exit status is the build's (0 unless the build itself failed); budget overruns are marked in
the table, not turned into a failure, because timings depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from book_pages import has_code, toc_pages  # noqa: E402

TOTAL_BUDGET_S = 90.0
PAGE_BUDGET_S = 15.0
EXECUTED = re.compile(r"^(?P<path>\S.*?): Executed notebook in (?P<seconds>[0-9.]+) seconds")
BUILD_FLAGS = ["-W", "-n", "--keep-going", "--all"]


class TreeMonitor:
    """Sample a process and all its descendants (psutil): summed resident memory, kernels' CPU time.

    CPU time (user + system) of each page's kernel is what the page costs on an idle core: unlike
    wall time it hardly grows when other jobs share the machine (torch runs on one thread).
    """

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        import psutil

        self._psutil = psutil
        self._root = psutil.Process(pid)
        self._interval_s = interval_s
        self.peak_bytes = 0
        self.kernel_cpu_s: dict[int, tuple[float, float]] = {}  # pid -> (start time, CPU seconds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            try:
                processes = [self._root, *self._root.children(recursive=True)]
            except self._psutil.Error:
                break
            for process in processes:
                try:
                    total += process.memory_info().rss
                    if process.pid != self._root.pid and "ipykernel" in " ".join(process.cmdline()):
                        times = process.cpu_times()
                        self.kernel_cpu_s[process.pid] = (process.create_time(), times.user + times.system)
                except self._psutil.Error:
                    continue
            self.peak_bytes = max(self.peak_bytes, total)
            self._stop.wait(self._interval_s)

    def kernels_in_start_order(self) -> list[float]:
        """CPU seconds of each kernel seen, oldest first (pages execute one after another)."""
        return [cpu for _, cpu in sorted(self.kernel_cpu_s.values())]

    def __enter__(self) -> TreeMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def jupyter_book() -> str:
    candidate = Path(sys.executable).with_name("jupyter-book")
    return str(candidate) if candidate.exists() else "jupyter-book"


def run_build(output: Path, log_path: Path) -> tuple[int, float, dict[str, float], dict[str, float], int]:
    """Build into ``output``.

    Returns (exit status, wall seconds, page -> execution seconds, page -> kernel CPU seconds,
    peak memory of the process tree in bytes).
    """
    command = [jupyter_book(), "build", str(ROOT), *BUILD_FLAGS, "--path-output", str(output)]
    executed: dict[str, float] = {}
    start = time.perf_counter()
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, env={**os.environ, "NO_COLOR": "1"})
        with TreeMonitor(process.pid) as monitor:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                match = EXECUTED.match(line.strip())
                if match:
                    page = Path(match["path"]).resolve()
                    executed[page.relative_to(ROOT).as_posix()] = float(match["seconds"])
            status = process.wait()
    wall_s = time.perf_counter() - start
    kernels = monitor.kernels_in_start_order()
    # One kernel per executed page, in the same order; if they do not pair up, report no CPU times.
    cpu = dict(zip(executed, kernels)) if len(kernels) == len(executed) else {}
    return status, wall_s, executed, cpu, monitor.peak_bytes


def mebibytes(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB"


def table(started: datetime, load: tuple[float, float, float], status: int, wall_s: float,
          executed: dict[str, float], cpu: dict[str, float], tree_peak: int, largest_kib: int) -> str:
    when = started.strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Clean forced-execution build (`make bench`), {when}; {os.cpu_count()} cores, "
        f"load average before the run {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min), "
        f"Python {platform.python_version()}.",
        "",
        "| page | execution, wall (s) | kernel CPU (s) | budget (wall) |",
        "|---|---:|---:|---|",
    ]
    for page in toc_pages():
        name = page.relative_to(ROOT).as_posix()
        if name in executed:
            seconds = executed[name]
            mark = "ok" if seconds <= PAGE_BUDGET_S else f"**over {PAGE_BUDGET_S:.0f} s**"
            cpu_text = f"{cpu[name]:.1f}" if name in cpu else "—"
            lines.append(f"| `{name}` | {seconds:.1f} | {cpu_text} | {mark} |")
        elif has_code(page):
            lines.append(f"| `{name}` | not executed? | — | **check the log** |")
        else:
            lines.append(f"| `{name}` | no code | — | — |")
    total_mark = "ok" if wall_s <= TOTAL_BUDGET_S else f"**over {TOTAL_BUDGET_S:.0f} s**"
    lines += [
        f"| **whole clean build** | **{wall_s:.1f}** | | {total_mark} (≤ {TOTAL_BUDGET_S:.0f} s) |",
        f"| sum over pages | {sum(executed.values()):.1f} | {sum(cpu.values()):.1f} | |",
        "",
        f"Peak memory: {mebibytes(tree_peak)} for the build and its kernels together (sampled), "
        f"{mebibytes(largest_kib * 1024)} for the largest single process.",
    ]
    if status != 0:
        lines += ["", f"**The build failed (exit status {status}); see _build/bench.log.**"]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "_build" / "bench.md")
    args = parser.parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    log_path = args.output.with_suffix(".log")
    started, load = datetime.now(timezone.utc), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="book-bench-") as scratch:
        status, wall_s, executed, cpu, tree_peak = run_build(Path(scratch), log_path)
    largest_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    report = table(started, load, status, wall_s, executed, cpu, tree_peak, largest_kib)
    args.output.write_text(report, encoding="utf-8")
    print(report)
    print(f"written to {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
