"""Replies a hostile submission forges in its worker: none may hang the grader, bloat it or cost
a classmate's file its rows.

Each attack replaces what the worker sends for a call: the sender itself (raw bytes on the
socket, e.g. a pickle) or the encoder (``transport.encode``), so that the forged value travels in
whatever format the worker uses. The whole class is graded in a separate interpreter with a
wall-clock limit, which reports its own peak memory."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

from selfcheck.solutions import SOLUTION, write

# A forged reply whose dict keys all hash alike (2**61 - 1 divides each of them): a dict built
# from them costs time quadratic in their number.
SAME_HASH_PICKLE = """

import pickle as _pickle
import sys as _sys
from multiprocessing.connection import Connection as _Connection

_M = (1 << 61) - 1


def _forged_reply(self, message):
    pairs = [(("plain", _M * i), ("plain", 0)) for i in range(600_000)]
    data = _pickle.dumps(("returned", ("dict", pairs), ("list", [])))
    _Connection(int(_sys.argv[1])).send_bytes(data)  # about 16 MB


_sys.modules["transformer_lab.selfcheck.worker.serve"].Server.reply = _forged_reply
"""

SAME_HASH_ENCODED = """

import transformer_lab.selfcheck.transport as _transport

_M = (1 << 61) - 1


def _forged(value, depth=0, keep=None):
    return ("dict", [(("plain", _M * i), ("plain", 0)) for i in range(60_000)])


_transport.encode = _forged
"""

# One 2 MB string named 500 times: small as a pickle, 1 GB once rebuilt (or printed).
NAMED_500_TIMES = """

import transformer_lab.selfcheck.transport as _transport

_BIG = ("plain", "x" * 2_000_000)


def _forged(value, depth=0, keep=None):
    return ("list", [_BIG] * 500)


_transport.encode = _forged
"""

# The peak is VmHWM, this interpreter's own (ru_maxrss would count the process it was forked
# from, before the exec: here, the test run).
GRADE = """
import json, sys
from transformer_lab.selfcheck import Limits
from transformer_lab.selfcheck.grading.folder import grade_folder, write_csv

reports = grade_folder(sys.argv[1], only=["accuracy"], limits=Limits(seconds=2.0))
rows = write_csv(reports, sys.argv[2])
status = open("/proc/self/status").read().split("VmHWM:")[1].split()
print(json.dumps({"rows": rows, "peak_mb": int(status[0]) / 1024}))
"""

WALL_SECONDS = 150  # four workers on a loaded machine; the old grader needed over 240 s


def grade_in_a_subprocess(folder, results, seconds: float) -> dict:
    """Grade ``folder`` in a fresh interpreter; fail if it is not done in ``seconds``."""
    process = subprocess.Popen(
        [sys.executable, "-c", GRADE, str(folder), str(results)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"grading did not end in {seconds} s") from None
    assert process.returncode == 0, err.decode()[-2000:]
    return json.loads(out.decode().strip().splitlines()[-1])


def test_forged_replies_cannot_hang_or_bloat_the_grader_nor_cost_a_classmate(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    write(folder, "a_same_hash_pickle.py", SOLUTION + SAME_HASH_PICKLE)
    write(folder, "b_same_hash_encoded.py", SOLUTION + SAME_HASH_ENCODED)
    write(folder, "c_named_500_times.py", SOLUTION + NAMED_500_TIMES)
    write(folder, "d_honest.py", SOLUTION)
    results = tmp_path / "results.csv"
    start = time.monotonic()
    summary = grade_in_a_subprocess(folder, results, WALL_SECONDS)
    elapsed = time.monotonic() - start
    with open(results, encoding="utf-8") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert summary["rows"] == 4 and len(rows) == 4
    assert rows["d_honest.py"]["status"] == "passed"
    for name in rows:
        if name != "d_honest.py":
            assert rows[name]["status"] != "passed", rows[name]
    # The grader itself (torch loaded) stays far from the 1.2 GB the repeated value took.
    assert summary["peak_mb"] < 900, summary
    assert elapsed < WALL_SECONDS


# A reply one field short, sent while the file loads (in place of the worker's "loaded").
SHORT_LOADED = """

import sys as _sys
from multiprocessing.connection import Connection as _Connection
from transformer_lab.selfcheck.transport import pack as _pack

_Connection(int(_sys.argv[1]), readable=False).send_bytes(_pack(("loaded",)))
"""


def test_a_reply_one_field_short_while_loading_is_a_load_error_not_a_crash(tmp_path):
    from transformer_lab.selfcheck import check_file

    report = check_file(write(tmp_path, "short.py", SOLUTION + SHORT_LOADED), ["accuracy"])
    assert report.load_error == "no answer" and report.results[0].status == "not run"
