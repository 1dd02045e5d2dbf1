"""The command line: check one file (students), or grade a folder of files (instructors)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.registry import EVERY_CHECK, HOMEWORK, PAGES
from transformer_lab.selfcheck.grading.report import (
    Report,
    format_report,
    gradescope_results,
    printable,
    report_to_json,
    summary_line,
    write_atomically,
)
from transformer_lab.selfcheck.grading.runner import (
    check_file,
    selected_checks,
    unusable_report,
)
from transformer_lab.selfcheck.worker.isolation import (
    PROCESS,
    end_worker_users,
    grading_problem,
    isolation,
)
from transformer_lab.selfcheck.worker.parent import (
    DEFAULT_MEMORY_MB,
    DEFAULT_SECONDS,
    Limits,
)

PROG = "python -m transformer_lab.selfcheck"
NAMES = [check.name for check in EVERY_CHECK]
EXIT_PASSED, EXIT_FAILED, EXIT_UNUSABLE, EXIT_INTERRUPTED = 0, 1, 2, 130


def positive(kind: type, what: str):
    """An argparse type: a positive, finite ``kind`` (``what`` names it in the error)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be positive and finite")
        return value

    return parse


def _check_outputs(parser: argparse.ArgumentParser, **paths: str | None) -> None:
    """Refuse, before any work, a results file that cannot be written."""
    for option, path in ((o, p) for o, p in paths.items() if p):
        target = Path(path)
        folder = target.parent if str(target.parent) else Path(".")
        if target.is_dir():
            parser.error(f"--{option}: {path} is a folder, not a file")
        if not folder.is_dir():
            parser.error(f"--{option}: the folder {folder} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK) or (
            target.exists() and not os.access(target, os.W_OK)
        ):
            parser.error(f"--{option}: {path} cannot be written (no permission)")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--page",
        choices=list(PAGES),
        default=HOMEWORK,
        help="which exercise page's checks to run (default: homework; Week 20: week-20)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        default=[],
        metavar="NAME",
        help="run only these checks: " + ", ".join(NAMES),
    )
    parser.add_argument(
        "--time-limit",
        type=positive(float, "a number of seconds"),
        default=DEFAULT_SECONDS,
        metavar="SECONDS",
        help=f"stop a check that uses more CPU time than this (default {DEFAULT_SECONDS:g}; "
        "waiting, e.g. a sleep, is stopped at five times that)",
    )


def _split_only(
    parser: argparse.ArgumentParser, only: list[str], path: str | None
) -> tuple[list[str], str | None]:
    """``--only attention my_file.py``: a value of --only that is not a check name is the file."""
    names, others = [v for v in only if v in NAMES], [v for v in only if v not in NAMES]
    if path is None and len(others) == 1:
        if others[0].endswith(".py") or Path(others[0]).is_file():
            path = others.pop()
    if others:
        parser.error(
            f"unknown check {others[0]!r} for --only; choose from {', '.join(NAMES)}"
        )
    return names, path


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Check your homework functions and name the likely mistake in each.",
        epilog=f"Instructors: {PROG} grade FOLDER --csv results.csv checks every *.py file of FOLDER.",
    )
    parser.add_argument(
        "path",
        nargs="?",
        default=None,
        help="file to check (default: the page's exercises/PAGE/starter.py, looked up from the "
        "working directory)",
    )
    _common(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a machine-readable report instead of text",
    )
    parser.add_argument(
        "--json-file",
        metavar="OUT",
        help="also write the machine-readable report to OUT (the text is still printed)",
    )
    parser.add_argument(
        "--gradescope",
        metavar="RESULTS_JSON",
        help="also write an autograder results file (Gradescope's results.json format)",
    )
    parser.add_argument(
        "--hidden",
        action="store_true",
        help="instructor's autograder: also run the hidden checks (fresh inputs, the "
        "instructor's package); with --gradescope they carry the points",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="with --hidden: the seed of the hidden inputs (a regrade passes the one recorded "
        "in results.json; default: derived from SELFCHECK_COURSE_SECRET and the file)",
    )
    # The file name the report shows.
    parser.add_argument("--display", help=argparse.SUPPRESS)
    return parser


class Unusable(Exception):
    """Nothing to check: ``args`` are what the user is told, what the results file records."""


def _file_to_check(path: str | None, page: str) -> str:
    """``path``, or the page's starter; ``Unusable`` if there is no such file."""
    path = path or _starter(page)
    if not Path(path).is_file():
        said = f"No such file: {path}. Run from the repository root, or pass the path of your file."
        raise Unusable(said, f"no such file: {path}")
    return path


def _starter(page: str) -> str:
    """The page's ``exercises/PAGE/starter.py`` in the working directory or a folder above it,
    else above the package (named as the page names it when it is in the working directory)."""
    relative = Path("exercises") / page / "starter.py"
    origins = [Path.cwd().resolve(), Path(__file__).resolve().parent]
    for folder in (f for origin in origins for f in (origin, *origin.parents)):
        if (folder / relative).is_file():
            return str(relative if folder == origins[0] else folder / relative)
    error = f"no {relative} above {origins[0]} or above the package at {origins[1]}"
    raise Unusable(f"{error}. Pass the path of your file.", error)


def _show(report: Report, as_json: bool, json_file: str | None = None) -> None:
    print(report_to_json(report) if as_json else format_report(report), flush=True)
    if report.isolation == PROCESS and not as_json:
        print(isolation().line, file=sys.stderr)
    if json_file:
        write_atomically(json_file, report_to_json(report))


def exit_status(report: Report) -> int:
    if report.interrupted:
        return EXIT_INTERRUPTED
    if report.load_error is not None:
        return EXIT_UNUSABLE
    return EXIT_PASSED if report.all_passed else EXIT_FAILED


def check_command(argv: Sequence[str]) -> int:
    parser = _check_parser()
    args = parser.parse_args(argv)
    only, path = _split_only(parser, args.only, args.path)
    if args.json_file:
        _check_outputs(parser, json_file=args.json_file)
    if args.gradescope or args.hidden:
        return autograde(parser, args, only, path)
    try:
        path = _file_to_check(path, args.page)
    except Unusable as unusable:
        print(unusable.args[0], flush=True)
        return EXIT_UNUSABLE
    limits = Limits(seconds=args.time_limit)
    report = check_file(path, only, args.display or path, limits, args.page)
    _show(report, args.json, args.json_file)
    return exit_status(report)


def autograde(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    only: list[str],
    path: str | None,
) -> int:
    """The instructor's autograder (``--gradescope``, ``--hidden``): the check of one file, then
    the hidden checks with their seed, and the results file (every check 0 when the file cannot
    be checked)."""
    _check_outputs(parser, gradescope=args.gradescope)
    extra: dict = {"isolation": isolation().level}
    problem = (answers.hidden_problem() or grading_problem()) if args.hidden else None
    try:
        if problem is not None:
            raise Unusable(f"--hidden: {problem}.", problem)
        path = _file_to_check(path, args.page)
    except Unusable as unusable:
        print(unusable.args[0], flush=True)
        checks = selected_checks(only, args.page)
        report = unusable_report(path or "(no file)", checks, unusable.args[1])
        _write_gradescope(args.gradescope, report, report if args.hidden else None, extra)
        return EXIT_UNUSABLE
    run = dict(
        display=args.display or path,
        limits=Limits(seconds=args.time_limit),
        page=args.page,
        follow_links=not args.gradescope,  # an autograder's submission: a link is refused
    )
    report = check_file(path, only, **run)
    _show(report, args.json, args.json_file)
    graded = None
    if args.hidden and not report.interrupted:
        seed = args.seed
        if seed is None:
            seed = answers.submission_seed(
                Path(path).read_bytes(), os.environ.get("SELFCHECK_COURSE_SECRET")
            )
        extra["hidden_seed"] = seed
        with answers.using(answers.HIDDEN, seed=seed):
            graded = check_file(path, only, **run)
        print(f"Hidden checks (fresh inputs, seed {seed}):", flush=True)
        print(report_to_json(graded) if args.json else format_report(graded), flush=True)
    _write_gradescope(args.gradescope, report, graded, extra)
    return exit_status(report)


def _write_gradescope(
    path: str | None, report: Report, hidden: Report | None, extra: dict
) -> None:
    """Write results.json once no process of the workers is left (and end any again after)."""
    if path:
        end_worker_users()
        results = gradescope_results(report, hidden, extra)
        write_atomically(path, json.dumps(results, indent=2, ensure_ascii=False))
        end_worker_users()


def grade_command(argv: Sequence[str]) -> int:
    from transformer_lab.selfcheck.grading import folder as grader

    parser = argparse.ArgumentParser(
        prog=f"{PROG} grade",
        description="Run the self-check over every *.py file of a folder, each in its own "
        "sandboxed process with a time and a memory limit, and write one CSV row per file and check.",
    )
    parser.add_argument("folder", help="folder of submitted files (*.py, one per student)")
    parser.add_argument(
        "--csv",
        required=True,
        metavar="OUT",
        help="CSV to write: submission, check, exercise, status, code, message, seconds",
    )
    parser.add_argument(
        "--json", metavar="OUT", help="also write every report in full as JSON"
    )
    parser.add_argument(
        "--memory-mb",
        type=positive(int, "a whole number"),
        default=DEFAULT_MEMORY_MB,
        metavar="MB",
        help=f"memory a submission may allocate beyond the worker's own (Linux; default "
        f"{DEFAULT_MEMORY_MB})",
    )
    parser.add_argument(
        "--jobs",
        type=positive(int, "a whole number"),
        default=grader.default_jobs(),
        metavar="N",
        help="submissions checked at the same time, each with the same limits (default: the "
        f"machine's cores, {grader.default_jobs()} here)",
    )
    _common(parser)
    args = parser.parse_args(argv)
    only, _ = _split_only(parser, args.only, "")
    _check_outputs(parser, csv=args.csv, json=args.json)
    folder = Path(args.folder)
    if not folder.is_dir():
        print(f"No such folder: {folder}")
        return EXIT_UNUSABLE
    files = grader.submissions(folder)
    if not files:
        print(f"No *.py files in {folder}")
        return EXIT_UNUSABLE
    refusal = grading_problem(folder)
    if refusal is not None:
        print(f"grade: {refusal}.")
        return EXIT_UNUSABLE
    print(isolation().line, flush=True)

    def progress(report):
        last = report.load_error and "could not load: " + report.load_error
        print(
            printable(f"{report.path}: {last or summary_line(report)}", keep=""), flush=True
        )

    limits = Limits(seconds=args.time_limit, memory_mb=args.memory_mb)
    status = EXIT_PASSED
    try:
        reports = grader.grade_folder(
            folder, only, limits, progress, args.jobs, page=args.page
        )
    except grader.GradingInterrupted as interrupted:
        reports, status = interrupted.reports, EXIT_INTERRUPTED
        print(f"Interrupted (Ctrl-C): writing the {len(reports)} submissions graded so far")
    end_worker_users()  # no process of a worker may touch the results once written
    rows = grader.write_csv(reports, args.csv)
    if args.json:
        grader.write_json(reports, args.json)
    end_worker_users()
    print(f"{len(reports)} submissions, {rows} rows written to {args.csv}")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["grade"]:
        return grade_command(argv[1:])
    return check_command(argv)
