"""transformer_lab.selfcheck.checks.positions: Week 20's checks, graded by the same runner, report, JSON,
Gradescope and folder mode as the homework (``--page week-20``)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

from transformer_lab_instructor.week20 import praise_forward

from selfcheck.solutions import WEEK20, write
from transformer_lab.selfcheck import FAILED, NOT_ATTEMPTED, NOT_RUN, PASSED, check_file
from transformer_lab.selfcheck.checks.positions import check_forward_without_positions
from transformer_lab.selfcheck.checks.registry import WEEK20_CHECKS

ROOT = Path(__file__).resolve().parents[2]
WRONG_TABLE = WEEK20.replace("10000.0 ** (-torch", "1000.0 ** (-torch")


def selfcheck(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "transformer_lab.selfcheck", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_finished_week20_file_passes_in_a_worker(tmp_path):
    report = check_file(write(tmp_path, "w20.py", WEEK20), page="week-20")
    assert [r.status for r in report.results] == [PASSED] * len(WEEK20_CHECKS)


def test_a_wrong_table_is_not_blamed_on_a_correct_forward(tmp_path):
    """Task 4: the forward adds the student's own table; while the table fails, the forward's
    check does not run (it would fail for the table's sake and blame the forward)."""
    report = check_file(write(tmp_path, "w20.py", WRONG_TABLE), page="week-20")
    by_name = {r.name: r for r in report.results}
    assert by_name["sinusoidal_positions"].status == FAILED
    forward = by_name["forward_with_sinusoids"]
    assert forward.status == NOT_RUN and forward.finding is None
    assert "uses your `sinusoidal_positions`" in forward.summary
    # without the table at all, the forward is a stretch left alone, not a failure
    untouched = check_file(ROOT / "exercises" / "week-20" / "starter.py", page="week-20")
    assert {r.name: r.status for r in untouched.results}["forward_with_sinusoids"] == (
        NOT_ATTEMPTED
    )


def test_the_smallest_failing_input_is_named():
    def inverted(model, ids, padding):
        return praise_forward(model, ids, padding, mask="inverted")

    result = check_forward_without_positions(inverted)
    assert result.code == "inverted_mask"
    assert "ids of shape (1, 4)" in result.finding.mistake


def test_week20_json_gradescope_and_folder_mode(tmp_path):
    good = write(tmp_path, "good.py", WEEK20)
    write(tmp_path, "table.py", WRONG_TABLE)
    results = tmp_path / "results.json"
    completed = selfcheck(good, "--page", "week-20", "--json", "--gradescope", results)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads(completed.stdout)
    assert [c["check"] for c in report["checks"]] == [c.name for c in WEEK20_CHECKS]
    assert all(t["status"] == "passed" for t in json.loads(results.read_text())["tests"])
    table = tmp_path / "grades.csv"
    completed = selfcheck("grade", tmp_path, "--page", "week-20", "--csv", table)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert len(rows) == 2 * len(WEEK20_CHECKS)
    statuses = {(r["submission"], r["check"]): r["status"] for r in rows}
    assert statuses["table.py", "sinusoidal_positions"] == "FAILED"
    assert statuses["table.py", "forward_with_sinusoids"] == "not run"
    assert statuses["good.py", "toy_weights"] == "passed"


def test_the_default_file_follows_the_page():
    completed = selfcheck("--page", "week-20")
    assert "Self-check of exercises/week-20/starter.py" in completed.stdout
    assert "Task 1: forward_without_positions" in completed.stdout
