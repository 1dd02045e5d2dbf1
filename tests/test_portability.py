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
    portability = make_recipe("test-portability").splitlines()
    # The browser tests read _build/html: the book is built (as `make book` does) before them.
    assert portability[0].strip() == "$(JUPYTER_BOOK) book"
    assert "--portability" in portability[1]


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


# The other places the book runs: Gradescope's Docker (as root, bubblewrap failing), GitHub
# Actions' publication of the student edition, a reader's browser (desktop, phone, disk, print),
# and the package off the canonical numeric mode.
ELSEWHERE = {
    "tests/test_gradescope_rehearsal.py": None,  # every test of the file
    "tests/test_workflow.py": (
        "test_the_student_job_pushes_the_edition_to_its_own_repository",
        "test_a_forks_student_job_publishes_the_forks_student_repository",
    ),
    "tests/browser/test_browser_accessibility.py": None,
    "tests/browser/test_browser_answers.py": (  # the others test the matcher, with no browser
        "test_every_task_section_is_found_on_its_page",
        "test_no_answer_is_visible_outside_its_task",
    ),
    "tests/browser/test_browser_dropdowns.py": None,
    "tests/browser/test_browser_explorers.py": None,
    "tests/browser/test_browser_links.py": None,
    "tests/browser/test_browser_pages.py": None,
    "tests/browser/test_browser_readable.py": None,
    "tests/test_print_book.py": None,
    "tests/test_reproducibility.py": (
        "test_training_is_immune_to_the_callers_cpu_kernels",
        "test_without_the_canonical_mode_the_kernels_change_the_numbers",
        "test_without_avx2_a_page_whose_outputs_match_passes",
    ),
    "tests/selfcheck/test_probes.py": (
        "test_the_solutions_pass_on_a_cpu_without_avx2",
        "test_the_solutions_pass_with_the_numeric_mode_switched_off",
    ),
}


@pytest.mark.parametrize("path", sorted(ELSEWHERE))
def test_the_tests_of_other_places_are_portability_tests(path):
    portable = collect("--portability", tests=str(ROOT / path)).kept
    names = ELSEWHERE[path]
    expected = [
        test
        for test in portable + collect(tests=str(ROOT / path)).kept
        if names is None or test.split("::")[1].split("[")[0] in names
    ]
    assert expected and sorted(portable) == sorted(expected), portable
