"""tests/built_pages.py: the page tests compare the build's executed pages with the references,
strictly, and fail (never skip) when a page was not executed, differs, or is out of date."""

import shutil

import nbformat
import pytest

from book_pages import REFERENCES, ROOT
from build_book import EXECUTED_VARIABLE, FINGERPRINT_FILE, inputs_fingerprint

INTACT = "intro.ipynb"
ALTERED = "chapters/01-soft-join.ipynb"
MISSING = "exercises/by-hand/index.ipynb"
CHANGED_CODE = "exercises/homework/index.ipynb"


class Reports:
    """The reports of a pytest session: {test id: (outcome, message)}; a test that failed in any
    phase (setup, call, teardown) is "failed" with that phase's message."""

    def __init__(self):
        self.outcomes: dict[str, tuple[str, str]] = {}

    def pytest_runtest_logreport(self, report):
        if report.nodeid not in self.outcomes or report.outcome != "passed":
            self.outcomes[report.nodeid] = (report.outcome, report.longreprtext)

    def failed(self) -> dict[str, str]:
        return {
            test: message
            for test, (outcome, message) in self.outcomes.items()
            if outcome == "failed"
        }


def page_tests(monkeypatch, executed, *references) -> tuple[int, Reports]:
    """Run the page tests of ``references`` against the executed pages in ``executed``, with
    this repository's configuration and conftest.py, in this process (the modules they need are
    imported already, so no Python starts): (exit status, reports)."""
    monkeypatch.setenv(EXECUTED_VARIABLE, str(executed))
    reports = Reports()
    status = pytest.main(
        ["-p", "no:xdist", "-q"]
        + [str(REFERENCES / reference) for reference in references],
        plugins=[reports],
    )
    return status, reports


def executed_copies(folder, *references):
    """``folder`` as the build leaves it: the references as executed pages, and the fingerprint."""
    for reference in references:
        target = folder / reference
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REFERENCES / reference, target)
    (folder / FINGERPRINT_FILE).write_text(inputs_fingerprint(ROOT) + "\n")


def first_printing_cell(notebook):
    """(index among the code cells, cell) of the first code cell that printed to stdout."""
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for index, cell in enumerate(code_cells):
        if any(output.get("name") == "stdout" for output in cell.get("outputs", [])):
            return index, cell
    raise AssertionError("no code cell prints")


def test_matching_pages_pass_and_a_changed_or_missing_page_fails_cell_by_cell(
    tmp_path, monkeypatch
):
    """One run, four pages: one as built (passes), one with a changed output (that cell fails),
    one whose first cell ran other code (fails), one the build did not execute (every cell
    fails)."""
    executed = tmp_path / "executed"
    executed_copies(executed, INTACT, ALTERED, CHANGED_CODE)
    other = nbformat.read(executed / CHANGED_CODE, as_version=4)
    next(cell for cell in other.cells if cell.cell_type == "code").source += "\n# changed"
    nbformat.write(other, executed / CHANGED_CODE)
    notebook = nbformat.read(executed / ALTERED, as_version=4)
    index, cell = first_printing_cell(notebook)
    stdout = next(output for output in cell.outputs if output.get("name") == "stdout")
    stdout.text = stdout.text + "one line more\n"
    nbformat.write(notebook, executed / ALTERED)

    status, reports = page_tests(
        monkeypatch, executed, INTACT, ALTERED, MISSING, CHANGED_CODE
    )
    failed = reports.failed()
    assert status == pytest.ExitCode.TESTS_FAILED, failed
    # The altered cell fails, and only it on its page; every cell of the missing page fails.
    altered = f"tests/references/{ALTERED}::Cell {index}"
    assert altered in failed, failed
    assert not any(INTACT in name for name in failed), failed
    assert sum(ALTERED in name for name in failed) == 1, failed
    by_hand = nbformat.read(REFERENCES / MISSING, as_version=4)
    code_cells = sum(cell.cell_type == "code" for cell in by_hand.cells)
    assert sum(MISSING in name for name in failed) == code_cells, failed
    assert "Cell outputs differ" in failed[altered] and "one line more" in failed[altered]
    missing = [message for name, message in failed.items() if MISSING in name]
    assert all("the build did not execute exercises/by-hand/index.md" in m for m in missing)
    changed = f"tests/references/{CHANGED_CODE}::Cell 0"
    assert "the build executed other code in this cell" in failed[changed], failed
    assert sum(CHANGED_CODE in name for name in failed) == 1, failed
    # The intact page's cells ran and passed: none was skipped.
    intact = {
        name: outcome for name, (outcome, _) in reports.outcomes.items() if INTACT in name
    }
    assert intact and set(intact.values()) == {"passed"}, intact
    assert not [name for name, (o, _) in reports.outcomes.items() if o == "skipped"]


def test_pages_executed_before_the_package_changed_fail(tmp_path, monkeypatch):
    executed = tmp_path / "executed"
    executed_copies(executed, INTACT)
    (executed / FINGERPRINT_FILE).write_text("0" * 16 + "\n")
    status, reports = page_tests(monkeypatch, executed, INTACT)
    failed = reports.failed()
    assert status == pytest.ExitCode.TESTS_FAILED
    assert failed and len(failed) == len(reports.outcomes), reports.outcomes
    assert all("changed since the build executed intro.md" in m for m in failed.values())


def test_one_page_executed_by_book_pages_is_compared_without_a_build(tmp_path, monkeypatch):
    """`python tools/book_pages.py execute PAGE` saves the page where its page tests look."""
    from book_pages import execute_for_tests

    executed = tmp_path / "executed"
    (executed / "stale.ipynb").parent.mkdir(parents=True)
    (executed / "stale.ipynb").write_text("{}")  # an older build's, with no fingerprint
    execute_for_tests([ROOT / "intro.md"], executed)
    assert not (executed / "stale.ipynb").exists()
    status, reports = page_tests(monkeypatch, executed, INTACT)
    assert status == pytest.ExitCode.OK, reports.failed()
    assert reports.outcomes and {o for o, _ in reports.outcomes.values()} == {"passed"}
