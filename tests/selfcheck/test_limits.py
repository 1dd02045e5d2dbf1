"""Limits the kernel enforces on a worker, and the time limit counted in CPU time.

A check may use ``Limits.seconds`` of the worker's CPU time; waiting (a sleep, a loaded
machine) counts only against the wall-clock backstop, ``WALL_FACTOR`` times longer. So a right
answer is not timed out because the machine is busy, and an endless loop still is."""

import subprocess
import sys
import time

from selfcheck.solutions import write
from transformer_lab.selfcheck import Limits
from transformer_lab.selfcheck.core import TIMED_OUT, StudentStopped
from transformer_lab.selfcheck.worker.parent import WALL_FACTOR, RemoteFunction, Worker

SECOND = Limits(seconds=1.0)
# For what the wall-clock backstop stops: it is waited out, WALL_FACTOR times this limit.
HALF_SECOND = Limits(seconds=0.5)


def run(tmp_path, source: str, limits: Limits = SECOND):
    """(the result of the file's ``hog()`` in a worker, or the line that ended it; wall seconds)."""
    path = write(tmp_path, "student.py", source)
    with Worker(path, ["hog"], limits) as worker:
        worker.start()
        worker.begin_check(limits.seconds)
        start = time.monotonic()
        try:
            result = RemoteFunction(worker, "hog").call().result
        except StudentStopped as stopped:
            assert stopped.status == TIMED_OUT
            result = stopped.line
        except Exception as error:  # noqa: BLE001 - the worker was ended: that is a limit too
            result = str(error)
        return result, time.monotonic() - start


def busy_machine():
    """Two processes that keep both cores busy (a class being graded beside this check)."""
    loop = "import time\nend = time.time() + 30\nwhile time.time() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(2)]


def test_a_check_that_waits_on_a_busy_machine_is_not_timed_out(tmp_path):
    """1.5 s of waiting with a 1 s limit: past the old wall-clock limit, well under the CPU one."""
    source = "import time\n\ndef hog():\n    time.sleep(1.5)\n    return 'done'\n"
    hogs = busy_machine()
    try:
        result, _ = run(tmp_path, source)
    finally:
        for process in hogs:
            process.kill()
            process.wait()
    assert result == "done"


def test_a_loop_starved_of_cpu_is_still_named_a_loop(tmp_path):
    """Computing 15 % of the time, as a loop does on a machine loaded several times over, meets
    the wall-clock backstop before the CPU limit; it is named a loop, not a wait."""
    source = (
        "import time\n\ndef hog():\n    while True:\n"
        "        end = time.process_time() + 0.015\n"
        "        while time.process_time() < end:\n            pass\n"
        "        time.sleep(0.085)\n"
    )
    result, seconds = run(tmp_path, source, HALF_SECOND)
    assert result.startswith("kept computing past its time limit"), result
    assert (
        seconds >= WALL_FACTOR * HALF_SECOND.seconds
    )  # the wall clock, not the CPU, stopped it


def test_an_endless_loop_is_stopped_after_its_cpu_time(tmp_path):
    result, seconds = run(tmp_path, "def hog():\n    while True:\n        pass\n")
    assert result.startswith("kept computing past its time limit (1 s of CPU time)"), result
    assert seconds < WALL_FACTOR * SECOND.seconds


def test_a_long_sleep_is_stopped_by_the_wall_clock_backstop(tmp_path):
    source = "import time\n\ndef hog():\n    time.sleep(600)\n"
    result, seconds = run(tmp_path, source, HALF_SECOND)
    backstop = WALL_FACTOR * HALF_SECOND.seconds
    assert result.startswith(f"gave no answer within {backstop:g} s of waiting"), result
    assert backstop <= seconds < backstop + 10


def test_memory_beyond_the_cap_is_an_error_in_the_student_code(tmp_path):
    source = "import torch\n\ndef hog():\n    return torch.ones(2**40, dtype=torch.uint8).sum()\n"
    result, _ = run(tmp_path, source, Limits(seconds=10, memory_mb=256))
    assert "memory" in result.lower(), result


def test_output_beyond_the_cap_fails_the_write_not_the_grader(tmp_path):
    source = "def hog():\n    while True:\n        print('x' * 10_000)\n"
    result, _ = run(tmp_path, source, Limits(seconds=10, output_bytes=100_000))
    assert "File too large" in result or "printed too much" in result, result
