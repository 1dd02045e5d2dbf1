"""The self-check's tests: each isolation level this machine has, and no worker outliving the run.

``level``: a test that takes it runs at every isolation level (``isolation().level``): the
bubblewrap run is skipped, with the reason, where bubblewrap does not work; the process-level
run (forced with ``SELFCHECK_ISOLATION=process``, the switch isolation.py documents) runs
everywhere. Setting ``SELFCHECK_ISOLATION=process`` for the whole run tests a machine without
bubblewrap here; the unprivileged-user level is rehearsed in tests/test_gradescope_rehearsal.py.

Every worker started during the run carries this session's mark in its environment (the worker
keeps the ``TRANSFORMER_LAB*`` variables), so that the check at the end finds the workers of this
run, and no other run's on a shared machine.
"""

import os
import signal
import time
import uuid
from pathlib import Path

import pytest
import transformer_lab_instructor  # noqa: F401 - passes the answers in for hidden-mode tests

from selfcheck.processes import processes
from transformer_lab.selfcheck.worker.isolation import (
    BUBBLEWRAP,
    PROCESS,
    WORKER_MARK,
    isolation,
)

# One mark per test process (each pytest-xdist worker its own: one finishing early must not
# count another's workers, still busy, as left behind).
os.environ["TRANSFORMER_LAB_TEST_SESSION"] = uuid.uuid4().hex
SESSION_MARK = f"TRANSFORMER_LAB_TEST_SESSION={os.environ['TRANSFORMER_LAB_TEST_SESSION']}"


def machine_level() -> str:
    return isolation().level


@pytest.fixture(
    params=[
        pytest.param(
            BUBBLEWRAP,
            marks=pytest.mark.skipif(
                machine_level() != BUBBLEWRAP,
                reason="bubblewrap does not work on this machine (or SELFCHECK_ISOLATION=process)",
            ),
        ),
        PROCESS,
    ]
)
def level(request, monkeypatch):
    """The isolation level the test runs at (the process level is forced)."""
    if request.param == PROCESS:
        monkeypatch.setenv("SELFCHECK_ISOLATION", PROCESS)
    return request.param


def workers_of_this_session() -> list[int]:
    """Worker processes (their command line names the worker module) started during this run."""
    return processes(WORKER_MARK.encode(), SESSION_MARK.encode())


@pytest.fixture(scope="session", autouse=True)
def no_worker_outlives_the_run():
    """After the last test: no worker of this run is left (a few seconds for the last to end)."""
    yield
    if not Path("/proc").is_dir():
        return
    deadline = time.monotonic() + 5
    while workers_of_this_session() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = workers_of_this_session()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"worker processes outlived the test run (now killed): {left}"
