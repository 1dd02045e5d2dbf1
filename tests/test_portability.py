"""`make test` leaves the portability tests out and `make test-portability` runs them: on every
push in CI's job of its own, and in `.ci/run` after the README's test command. Nothing stops being
tested."""

import re
import subprocess
import sys

import yaml

from book_pages import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def make_recipe(target: str) -> str:
    """The recipe lines of ``target`` in the Makefile."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert match, f"no {target} target in the Makefile"
    return match.group(1)


def test_make_test_builds_afresh_and_make_test_portability_runs_only_the_portability_tests():
    test = make_recipe("test")
    assert "book --fresh" in test
    assert "--portability" not in test
    assert "--portability" in make_recipe("test-portability")


def test_ci_runs_the_readme_command_then_the_portability_tests():
    lines = [
        line
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.startswith("make ")
    ]
    assert lines == ["make test", "make test-portability"]


def test_a_ci_job_of_its_own_runs_the_portability_tests_on_every_push():
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert (
        "push" in workflow[True] and "pull_request" in workflow[True]
    )  # YAML reads `on` as True
    jobs = [
        (name, job)
        for name, job in workflow["jobs"].items()
        if any(step.get("run") == "make test-portability" for step in job["steps"])
    ]
    assert len(jobs) == 1, jobs
    name, job = jobs[0]
    assert "if" not in job and "needs" not in job, f"{name} must run on every push"


def test_the_every_cpu_page_runs_are_portability_tests_left_out_of_make_test():
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:xdist",
            "tests/test_pages_on_every_cpu.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "no tests collected" in collected.stdout and "deselected" in collected.stdout, (
        collected.stdout[-1000:]
    )
    portable = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:xdist",
            "--portability",
            "tests/test_pages_on_every_cpu.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    cases = [
        line for line in portable.stdout.splitlines() if "::test_page_runs_off" in line
    ]
    assert any("native" in case for case in cases) and any(
        "no AVX2" in case for case in cases
    )
