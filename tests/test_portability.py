"""`make test` leaves the portability tests out and `make test-portability` runs them: on every
push in CI's job of its own, and in `.ci/run` after the README's test command. Nothing stops being
tested."""

import re

import pytest
import yaml

from book_pages import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
EVERY_CPU = ROOT / "tests" / "test_pages_on_every_cpu.py"


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


class Collected:
    """What a pytest session collected: the tests it kept, and those it deselected."""

    def __init__(self):
        self.kept: list[str] = []
        self.deselected: list[str] = []

    def pytest_deselected(self, items):
        self.deselected += [item.nodeid for item in items]

    def pytest_collection_finish(self, session):
        self.kept = [item.nodeid for item in session.items]


def collect(*options: str, tests: str = str(EVERY_CPU)) -> Collected:
    """Collect ``tests`` (default tests/test_pages_on_every_cpu.py) as pytest does with
    ``options``, with this repository's configuration and conftest.py, in this process: the
    modules are imported already, so the collection takes a fraction of a second instead of a
    Python start."""
    collected = Collected()
    status = pytest.main(
        ["--collect-only", "-q", "-p", "no:xdist", *options, tests],
        plugins=[collected],
    )
    assert status in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), status
    return collected


def test_the_every_cpu_page_runs_are_portability_tests_left_out_of_make_test():
    left_out = collect()
    assert left_out.kept == [] and left_out.deselected, left_out.deselected
    portable = collect("--portability")
    assert portable.deselected == []
    cases = [case for case in portable.kept if "::test_page_runs_off" in case]
    assert sorted(left_out.deselected) == sorted(portable.kept)
    assert any("native" in case for case in cases) and any(
        "no AVX2" in case for case in cases
    )


# The rehearsals of other places the book runs: Gradescope's Docker (as root, bubblewrap failing)
# and GitHub Actions' publication of the student edition.
REHEARSALS = {
    "tests/test_gradescope_rehearsal.py": None,  # every test of the file
    "tests/test_workflow.py": (
        "test_the_student_job_pushes_the_edition_to_its_own_repository",
        "test_a_forks_student_job_publishes_the_forks_student_repository",
    ),
}


@pytest.mark.parametrize("path", sorted(REHEARSALS))
def test_the_rehearsals_of_other_places_are_portability_tests(path):
    portable = collect("--portability", tests=str(ROOT / path)).kept
    names = REHEARSALS[path]
    expected = [
        test
        for test in portable + collect(tests=str(ROOT / path)).kept
        if names is None or test.split("::")[1].split("[")[0] in names
    ]
    assert expected and sorted(portable) == sorted(expected), portable
