"""Gradescope's grader: the public checks as visible feedback, the hidden checks for the points.

    python -m transformer_lab_instructor.autograder --submission DIR --results results.json

``autograder_files/run_autograder`` calls this with Gradescope's paths (or the overrides it
documents). The submission is the folder's ``starter.py``, or its only ``.py`` file. The self-check
runs twice: on its public inputs (what a student's own copy shows; ``visible``) and, in hidden
mode, on inputs drawn afresh for this run with the answers computed by this package
(``after_due_date``; these carry the points), from a seed derived from the course secret and the
submission (``SELFCHECK_COURSE_SECRET``) and recorded in ``extra_data`` with the isolation used.
Importing this package passes the answers in (``transformer_lab_instructor/__init__.py``).
Whatever happens, a valid ``results.json`` is written: a crash of the grader itself scores 0 and
says so."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path


def submission_file(folder: Path) -> Path | None:
    """``starter.py`` in ``folder``, else its only ``.py`` file, else ``None``."""
    if (folder / "starter.py").exists():
        return folder / "starter.py"
    files = sorted(folder.glob("*.py")) if folder.is_dir() else []
    return files[0] if len(files) == 1 else None


def grader_failure(message: str) -> dict:
    """A ``results.json`` for a submission the grader could not grade at all."""
    return {
        "score": 0,
        "max_score": 0,
        "output": message,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [],
    }


def run(submission: Path, results: Path, page: str, time_limit: float) -> int:
    from transformer_lab.selfcheck.grading.cli import main as selfcheck

    results.parent.mkdir(parents=True, exist_ok=True)
    found = submission_file(submission)
    path = str(found) if found else str(submission / "starter.py")
    argv = [path, "--gradescope", str(results), "--hidden", "--page", page]
    return selfcheck([*argv, "--time-limit", str(time_limit)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
    parser.add_argument(
        "--results", type=Path, default=Path("/autograder/results/results.json")
    )
    parser.add_argument("--page", default="homework", choices=["homework", "week-20"])
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args(argv)
    try:
        status = run(args.submission, args.results, args.page, args.time_limit)
    except Exception:  # noqa: BLE001 - Gradescope needs a results file whatever happens
        traceback.print_exc()
        status = 3
    if not args.results.is_file():
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(
            json.dumps(grader_failure("The autograder failed; ask your instructor.")),
            encoding="utf-8",
        )
    # Gradescope reads results.json; a failed submission is not a failed grader.
    return 0 if status in (0, 1, 2) else status


if __name__ == "__main__":
    sys.exit(main())
