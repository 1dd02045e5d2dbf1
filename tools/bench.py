"""`make bench`: time a clean, forced-execution build page by page, and each starter's default run.

    python tools/bench.py [--output _build/bench.md]
    python tools/bench.py --grading 300 [--jobs 2] [--time-limit 2]   # the grader alone

Builds the book exactly as `make test` does (``build_book.BOOK_FLAGS``, every page executed)
into a fresh temporary folder, so nothing cached is reused and ``_build/html`` is left alone. It
reads myst-nb's "Executed notebook in N seconds" log line of each page, times the whole build,
and records peak memory two ways: the largest single process (``getrusage`` of the finished
children: the build or one page's kernel) and the whole process tree at its largest (sampled with
psutil), each page's kernel CPU time (measured by the build in the worker that ran the page and
kept in its executed copy, ``build_book.TIMING_KEY``; close to the page's wall time on an idle
machine, since torch runs on one thread) and the whole build's CPU time. Then it runs each
exercise starter the way its page tells students to (``python exercises/…/starter.py``, no
options) and times it, grades a fixed class of 100 submissions (``tools/classroom.py``) with the
self-check (submissions per minute), and times the rest of `make test` (the test suite, against
this build's HTML and executed pages), wall and CPU.

The report starts with the machine (CPU model, vector instruction sets, PyTorch's CPU kernel
level, cores) and gives a verdict per line against the budgets below, then names every budget
that failed. It goes to ``_build/bench.md`` and to the terminal; the build log to
``_build/bench.log``. The exit status is the build's (0 unless the build or a starter itself
failed); budget overruns are reported, not turned into a failure, because timings depend on the
machine. A busy machine inflates every figure: the report records the load average before the run.
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
from datetime import UTC, datetime
from pathlib import Path

from book_pages import ROOT, has_code, toc_pages
from build_book import BOOK_FLAGS, EXECUTED_FOLDER, EXECUTED_VARIABLE, TIMING_KEY
from machine import cpu_info, torch_kernels

# Budgets on a 2-vCPU AVX2 machine without a GPU (a CI runner or a student's laptop).
TOTAL_BUDGET_S = 45.0  # the whole clean build, every page executed
PAGE_BUDGET_S = 15.0  # one page's execution
STARTER_BUDGET_S = 15.0  # one starter script's default run
TEST_BUDGET_S = 240.0  # the whole `make test` once set up: the build and the test suite
STARTERS = ("exercises/week-20/starter.py", "exercises/homework/starter.py")
EXECUTED = re.compile(
    r"^(?P<path>\S.*?): Executed notebook in (?P<seconds>[0-9.]+) seconds"
)


class TreeMonitor:
    """Sample a process and all its descendants (psutil): summed resident memory, kernels' CPU time.

    CPU time (user + system) of each page's kernel is what the page costs on an idle core: unlike
    wall time it hardly grows when other jobs share the machine (torch runs on one thread).
    """

    def __init__(
        self, pid: int, interval_s: float = 0.2, cpu_of: tuple[str, ...] = ("ipykernel",)
    ) -> None:
        import psutil

        self._cpu_of = cpu_of  # whose CPU time is kept: processes whose command has one
        self._psutil = psutil
        self._root = psutil.Process(pid)
        self._interval_s = interval_s
        self.peak_bytes = 0
        # pid -> (start time, CPU seconds)
        self.kernel_cpu_s: dict[int, tuple[float, float]] = {}
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
                    command = " ".join(process.cmdline())
                    if process.pid != self._root.pid and any(
                        mark in command for mark in self._cpu_of
                    ):
                        times = process.cpu_times()
                        self.kernel_cpu_s[process.pid] = (
                            process.create_time(),
                            times.user + times.system,
                        )
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


def parallel_jobs() -> int:
    """How many pages the build executes at once (tools/build_book.py's rule)."""
    from build_book import book_jobs

    return book_jobs()


def run_build(
    output: Path, log_path: Path
) -> tuple[int, float, dict[str, float], dict[str, float], int]:
    """Build into ``output``.

    Returns (exit status, wall seconds, page -> execution seconds, page -> kernel CPU seconds,
    peak memory of the process tree in bytes).
    """
    command = [
        sys.executable,
        str(ROOT / "tools" / "build_book.py"),
        "build",
        str(ROOT),
        *BOOK_FLAGS,
        "--path-output",
        str(output),
    ]
    executed: dict[str, float] = {}
    start = time.perf_counter()
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
        )
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
    cpu = kernel_cpu(output / "_build" / EXECUTED_FOLDER)
    if not cpu:
        # No executed copies (the build failed early): the kernels' total, as sampled.
        cpu = {"(all kernels)": sum(monitor.kernels_in_start_order())}
    return status, wall_s, executed, cpu, monitor.peak_bytes


def kernel_cpu(executed: Path) -> dict[str, float]:
    """page -> CPU seconds of its kernel, as the build recorded them in each executed page
    (``build_book.TIMING_KEY``: measured exactly in the worker that ran the page, in parallel too)."""
    import nbformat

    cpu = {}
    for copy in sorted(executed.rglob("*.ipynb")):
        timing = nbformat.read(copy, as_version=4).metadata.get(TIMING_KEY, {})
        if "kernel_cpu_s" in timing:
            page = copy.relative_to(executed).with_suffix(".md").as_posix()
            cpu[page] = float(timing["kernel_cpu_s"])
    return cpu


def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished children and their descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_tests(build: Path) -> tuple[int, float, float, str]:
    """Run the test suite as `make test` does, against the benchmark's build (its HTML and its
    executed pages): (status, wall s, CPU s of the suite and everything it started, summary)."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-n",
        "auto",
        "--dist",
        "loadfile",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    start, cpu_start = time.perf_counter(), children_cpu_s()
    completed = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "BOOK_HTML": str(build / "html"),
            EXECUTED_VARIABLE: str(build / EXECUTED_FOLDER),
            "NO_COLOR": "1",
        },
    )
    wall_s, cpu_s = time.perf_counter() - start, children_cpu_s() - cpu_start
    summary = (
        completed.stdout.strip().splitlines()[-1]
        if completed.stdout.strip()
        else "no output"
    )
    return completed.returncode, wall_s, cpu_s, summary


def mebibytes(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB"


# An untouched starter's checks have not passed, so it exits 1 (as the self-check does): that
# run went to its end. A crash exits 1 as well, but with a traceback: STARTER_CRASHED.
CHECKS_NOT_PASSED = 1
STARTER_CRASHED = -1


def time_starter(script: str) -> tuple[int, float, float]:
    """Run ``python SCRIPT`` from the repository root as a student would: (exit status, wall s,
    CPU s); the status is STARTER_CRASHED when the run ended in a traceback."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, script], cwd=ROOT, capture_output=True, text=True
    )
    wall_s = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    crashed = "Traceback (most recent call last)" in completed.stderr
    return (STARTER_CRASHED if crashed else completed.returncode), wall_s, cpu_s


GRADING_CLASS = 100  # submissions in the bench's class (tools/classroom.py)
GRADING_TIME_LIMIT_S = 2.0


def time_grading(total: int = GRADING_CLASS) -> tuple[int, float, int, str]:
    """Grade a fixed class of ``total`` submissions (right, wrong, stubs, hostile: classroom.py)
    as an instructor would, with the default ``--jobs`` (the machine's cores); return the exit
    status, the wall time, the jobs and the isolation line the grader printed."""
    from classroom import write_class
    from transformer_lab.selfcheck.grading.folder import default_jobs

    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        folder = Path(scratch) / "class"
        write_class(folder, total)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "transformer_lab.selfcheck", "grade", str(folder)]
            + ["--csv", str(Path(scratch) / "grades.csv")]
            + ["--time-limit", str(GRADING_TIME_LIMIT_S)],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )
        seconds = time.perf_counter() - start
    first = (done.stdout.splitlines() or [""])[0]
    return done.returncode, seconds, default_jobs(), first


# 300 mixed submissions with --jobs 2 on a quiet 2-vCPU machine (a smaller class: its share).
GRADING_BUDGET_S = 300.0


def grading_throughput(total: int, jobs: int, time_limit: float) -> str:
    """Grade a class of ``total`` submissions (classroom.py: right, wrong, stubs, hostile ones
    that loop, exit, flood and fork) with ``jobs`` and ``time_limit``, as ``grade`` runs; a
    Markdown report of the wall time against :data:`GRADING_BUDGET_S`, the load average before
    and after, the peak memory of the whole process tree (grader, supervisors, sandboxes,
    workers: the sum of their resident sizes, sampled) and where a submission's time goes
    (inside its checks, or outside them: starting the worker, a fresh interpreter that imports
    torch)."""
    import json

    from classroom import write_class
    from transformer_lab.selfcheck.worker.isolation import WORKER_MARK

    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        folder, reports = Path(scratch) / "class", Path(scratch) / "grades.json"
        write_class(folder, total)
        command = [sys.executable, "-m", "transformer_lab.selfcheck", "grade", str(folder)]
        command += ["--csv", str(Path(scratch) / "grades.csv"), "--json", str(reports)]
        command += ["--jobs", str(jobs), "--time-limit", str(time_limit)]
        before, start = os.getloadavg(), time.perf_counter()
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT
        )
        workers = (WORKER_MARK,)
        with TreeMonitor(process.pid, interval_s=0.5, cpu_of=workers) as monitor:
            output = process.communicate()[0]
        seconds, after = time.perf_counter() - start, os.getloadavg()
        grader_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        graded = json.loads(reports.read_text(encoding="utf-8")) if reports.exists() else []
    in_checks = sum(c["seconds"] for r in graded for c in r["checks"])
    # The grader's own CPU (its children's, as far as they were waited for) and the workers'
    # (sampled before each ended: a little under their true total). CPU time hardly grows with
    # the load, so CPU / cores is what the run would take on a quiet machine, at best.
    workers_cpu = sum(monitor.kernels_in_start_order())
    grader_s = grader_cpu.ru_utime + grader_cpu.ru_stime
    per_file = sum(r["seconds"] for r in graded)
    first = (output.splitlines() or [""])[0]
    failures: list[str] = []
    lines = [
        f"`grade`, {total} submissions (classroom.py), --jobs {jobs}, --time-limit "
        f"{time_limit:g}: exit {process.returncode}, {len(graded)} graded",
        f"- wall: {seconds:.1f} s, "
        f"{verdict(seconds, GRADING_BUDGET_S * total / 300, 'grading', failures)}; "
        f"{total / seconds * 60:.0f} submissions per minute",
        f"- load average before {before[0]:.2f}, after {after[0]:.2f} (1 min)",
        f"- peak memory of the process tree: {mebibytes(monitor.peak_bytes)} "
        "(resident sizes summed, sampled every 0.5 s)",
        f"- time per submission: {per_file / max(1, len(graded)):.2f} s, of which "
        f"{in_checks / max(1, len(graded)):.2f} s inside its checks; the rest starts its "
        "worker (a fresh interpreter importing torch)",
        f"- CPU: workers {workers_cpu:.0f} s (sampled), the grader and what it waited for "
        f"{grader_s:.0f} s; on {jobs} idle cores at best "
        f"{(workers_cpu + grader_s) / jobs:.0f} s",
        f"- {first}",
    ]
    return "\n".join(lines) + "\n"


def verdict(seconds: float, budget: float, what: str, failures: list[str]) -> str:
    """``ok`` or a bold overrun; an overrun is also added to ``failures``."""
    if seconds <= budget:
        return f"ok (≤ {budget:.0f} s)"
    failures.append(f"{what}: {seconds:.1f} s > {budget:.0f} s")
    return f"**over {budget:.0f} s**"


def report(
    started: datetime,
    load: tuple[float, float, float],
    status: int,
    wall_s: float,
    executed: dict[str, float],
    cpu: dict[str, float],
    tree_peak: int,
    largest_kib: int,
    starters: dict[str, tuple[int, float, float]],
    kernels: str,
    tests: tuple[int, float, float, str] | None = None,
    grading: tuple[int, float, int, str] | None = None,
    build_cpu_s: float | None = None,
) -> str:
    when = started.strftime("%Y-%m-%d %H:%M UTC")
    machine = cpu_info()
    failures: list[str] = []
    lines = [
        "# `make bench`: clean build and starters",
        "",
        f"Machine: {machine['model']}; {machine['isa']}; PyTorch CPU kernels {kernels}; "
        f"{machine['cores']}; Python {platform.python_version()}.",
        "",
        f"Run: {when}; load average before the run {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        "(1 / 5 / 15 min).",
        "",
        "| page | execution, wall (s) | kernel CPU (s) | budget (wall) |",
        "|---|---:|---:|---|",
    ]
    for page in toc_pages():
        name = page.relative_to(ROOT).as_posix()
        if name in executed:
            seconds = executed[name]
            cpu_text = f"{cpu[name]:.1f}" if name in cpu else "—"
            mark = verdict(seconds, PAGE_BUDGET_S, name, failures)
            lines.append(f"| `{name}` | {seconds:.1f} | {cpu_text} | {mark} |")
        elif has_code(page):
            failures.append(f"{name}: not executed, see _build/bench.log")
            lines.append(f"| `{name}` | not executed? | — | **check the log** |")
        else:
            lines.append(f"| `{name}` | no code | — | — |")
    page_sum = sum(executed.values())
    total_mark = verdict(wall_s, TOTAL_BUDGET_S, "whole clean build", failures)
    build_cpu = f"{build_cpu_s:.1f}" if build_cpu_s is not None else ""
    lines += [
        f"| **whole clean build** | **{wall_s:.1f}** | {build_cpu} | {total_mark} |",
        f"| sum over pages | {page_sum:.1f} | {sum(cpu.values()):.1f} | |",
        "",
        "CPU: user + system seconds, which a busy machine hardly inflates (wall time it does). The "
        "whole build's CPU counts Sphinx, its workers and every page's kernel.",
        "",
    ]
    if page_sum:
        lines += [
            f"Build wall time / sum of page execution times: {wall_s / page_sum:.2f} "
            "(below 1 when pages execute in parallel; the rest is Sphinx's own work).",
            "",
        ]
    lines += [
        "| starter, default run | wall (s) | CPU (s) | budget (wall) |",
        "|---|---:|---:|---|",
    ]
    for script, (code, seconds, cpu_s) in starters.items():
        mark = verdict(seconds, STARTER_BUDGET_S, f"python {script}", failures)
        if code == CHECKS_NOT_PASSED:
            mark += " (exit 1: its checks are not passed yet, as for an untouched starter)"
        elif code != 0:
            failures.append(f"python {script}: exit status {code}")
            mark = f"**failed (exit status {code})**"
        lines.append(f"| `python {script}` | {seconds:.1f} | {cpu_s:.1f} | {mark} |")
    lines += [
        "",
        f"Peak memory: {mebibytes(tree_peak)} for the build and its kernels together (sampled), "
        f"{mebibytes(largest_kib * 1024)} for the largest single process.",
        "",
    ]
    if tests is not None:
        code, test_s, test_cpu_s, summary = tests
        whole = wall_s + test_s
        mark = verdict(
            whole, TEST_BUDGET_S, "make test (build + tests)", failures if code == 0 else []
        )
        if code != 0:
            mark = f"**failed (exit status {code})**"
        lines += [
            "",
            "| `make test`, set-up already done | wall (s) | CPU (s) | budget (wall) |",
            "|---|---:|---:|---|",
            f"| test suite alone ({summary}) | {test_s:.1f} | {test_cpu_s:.1f} | |",
            f"| clean build (above) + test suite | {whole:.1f} | "
            f"{(build_cpu_s or 0.0) + test_cpu_s:.1f} | {mark} |",
            "",
        ]
        if code != 0:
            lines.append(f"The test suite failed: {summary}.")
            failures.append(f"the test suite failed ({summary})")
    if grading is not None:
        code, grade_s, jobs, line = grading
        rate = GRADING_CLASS / grade_s * 60 if grade_s else 0.0
        lines += [
            "",
            f"| `grade`, {GRADING_CLASS} submissions (40% right, 30% wrong, 15% stubs, 15% hostile), "
            f"--jobs {jobs}, --time-limit {GRADING_TIME_LIMIT_S:g} | wall (s) | submissions / min |",
            "|---|---:|---:|",
            f"| {line or 'no output'} | {grade_s:.1f} | {rate:.0f} |",
            "",
        ]
        if code != 0:
            failures.append(f"grading the bench class failed (exit status {code})")
    if status != 0:
        failures.append(f"the build failed (exit status {status}); see _build/bench.log")
    if failures:
        lines.append("**Over budget or failed:** " + "; ".join(failures) + ".")
    else:
        lines.append("**Every budget is met.**")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "_build" / "bench.md")
    parser.add_argument(
        "--no-tests",
        dest="tests",
        action="store_false",
        help="skip timing the test suite (the rest of `make test`) against the build",
    )
    parser.add_argument(
        "--grading",
        type=int,
        metavar="N",
        help="only grade a class of N submissions and report its throughput",
    )
    parser.add_argument("--jobs", type=int, default=2, help="with --grading (default 2)")
    parser.add_argument(
        "--time-limit",
        type=float,
        default=GRADING_TIME_LIMIT_S,
        help=f"with --grading (default {GRADING_TIME_LIMIT_S:g})",
    )
    args = parser.parse_args(argv)
    if args.grading:
        print(grading_throughput(args.grading, args.jobs, args.time_limit))
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    log_path = args.output.with_suffix(".log")
    started, load = datetime.now(UTC), os.getloadavg()
    kernels = torch_kernels()
    with tempfile.TemporaryDirectory(prefix="book-bench-") as scratch:
        cpu_start = children_cpu_s()
        status, wall_s, executed, cpu, tree_peak = run_build(Path(scratch), log_path)
        build_cpu_s = children_cpu_s() - cpu_start
        # KiB on Linux.
        largest_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        starters = {script: time_starter(script) for script in STARTERS}
        grading = time_grading()
        tests = time_tests(Path(scratch) / "_build") if args.tests and status == 0 else None
    text = report(
        started,
        load,
        status,
        wall_s,
        executed,
        cpu,
        tree_peak,
        largest_kib,
        starters,
        kernels,
        tests,
        grading,
        build_cpu_s,
    )
    args.output.write_text(text, encoding="utf-8")
    print(text)
    print(
        f"written to {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}"
    )
    return status or int(starter_failed(starters))


def starter_failed(starters: dict[str, tuple[int, float, float]]) -> bool:
    """Did a starter fail: crash, or end with a status other than 0 and CHECKS_NOT_PASSED (an
    untouched starter's exit 1, which is a run to the end)?"""
    return any(code not in (0, CHECKS_NOT_PASSED) for code, _, _ in starters.values())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
