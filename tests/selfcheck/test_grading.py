"""transformer_lab.selfcheck.grading.folder: a folder of submissions, each isolated, one CSV row per check."""

import csv
import json

from selfcheck.solutions import SOLUTION, STRETCH, with_body, write
from transformer_lab.selfcheck import ALL_CHECKS, ENDED, NOT_RUN, PASSED, RAISED, TIMED_OUT
from transformer_lab.selfcheck.grading.cli import main


def make_submissions(folder):
    write(folder, "alice.py", SOLUTION + STRETCH)
    write(folder, "bob_loops.py", with_body(SOLUTION, "masked_mean", "while True: pass"))
    write(
        folder,
        "carol_exits.py",
        with_body(SOLUTION, "attention", "import sys; sys.exit(0)"),
    )
    write(
        folder, "dave_os_exit.py", with_body(SOLUTION, "accuracy", "import os; os._exit(0)")
    )
    write(
        folder,
        "erin_floods.py",
        with_body(SOLUTION, "accuracy", "while True: print('x' * 10000, flush=True)"),
    )
    write(folder, "frank_broken.py", "def attention(q, k, v, padding)\n")
    write(folder, "notes.txt", "not a submission")


def test_grading_a_folder_writes_one_row_per_submission_and_check(tmp_path, capsys):
    folder = tmp_path / "submissions"
    folder.mkdir()
    make_submissions(folder)
    out_csv, out_json = tmp_path / "grades.csv", tmp_path / "grades.json"
    code = main(
        [
            "grade",
            str(folder),
            "--csv",
            str(out_csv),
            "--json",
            str(out_json),
            "--time-limit",
            "1",  # what bob's loop waits out (see FAST in test_worker.py)
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "xxxxxxxx" not in printed  # a flood stays in its own worker
    assert printed.startswith("isolation: ")  # the level every worker ran at
    assert printed.count("\n") == 8  # that, one line per submission and a last line
    with open(out_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 * len(ALL_CHECKS)
    status = {(row["submission"], row["check"]): row["status"] for row in rows}
    assert all(status[("alice.py", c.name)] == PASSED for c in ALL_CHECKS)
    assert status[("bob_loops.py", "masked_mean")] == TIMED_OUT
    assert status[("bob_loops.py", "tokens_per_word")] == PASSED
    assert status[("carol_exits.py", "attention")] == RAISED
    assert status[("dave_os_exit.py", "accuracy")] == ENDED
    assert status[("dave_os_exit.py", "embedding_parameters")] == PASSED
    assert status[("erin_floods.py", "accuracy")] in (RAISED, TIMED_OUT)
    assert status[("erin_floods.py", "attention")] == PASSED
    assert all(status[("frank_broken.py", c.name)] == NOT_RUN for c in ALL_CHECKS)
    assert all(
        set(row)
        == {"submission", "check", "exercise", "status", "code", "message", "seconds"}
        for row in rows
    )
    assert all("\n" not in row["message"] and len(row["message"]) < 400 for row in rows)
    reports = json.loads(out_json.read_text(encoding="utf-8"))
    assert [r["file"] for r in reports] == [
        "alice.py",
        "bob_loops.py",
        "carol_exits.py",
        "dave_os_exit.py",
        "erin_floods.py",
        "frank_broken.py",
    ]


def test_an_empty_or_missing_folder_is_explained(tmp_path, capsys):
    assert main(["grade", str(tmp_path), "--csv", str(tmp_path / "g.csv")]) == 2
    assert "No *.py files" in capsys.readouterr().out
    assert main(["grade", str(tmp_path / "nope"), "--csv", str(tmp_path / "g.csv")]) == 2
