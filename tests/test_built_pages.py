"""tests/built_pages.py: the page tests compare the build's executed pages with the references,
strictly, and fail (never skip) when a page was not executed, differs, or is out of date."""

import re
import shutil
import subprocess
import sys

import nbformat

from book_pages import REFERENCES, ROOT
from build_book import EXECUTED_VARIABLE, FINGERPRINT_FILE, inputs_fingerprint

INTACT = "intro.ipynb"
ALTERED = "chapters/01-soft-join.ipynb"
MISSING = "exercises/by-hand/index.ipynb"
CHANGED_CODE = "exercises/homework/index.ipynb"


def page_tests(executed, *references):
    """Run the page tests of ``references`` against the executed pages in ``executed``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-rf"]
        + [str(REFERENCES / reference) for reference in references],
        cwd=ROOT,
        env={**__import__("os").environ, EXECUTED_VARIABLE: str(executed)},
        capture_output=True,
        text=True,
        timeout=600,
    )


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


def test_matching_pages_pass_and_a_changed_or_missing_page_fails_cell_by_cell(tmp_path):
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

    completed = page_tests(executed, INTACT, ALTERED, MISSING, CHANGED_CODE)
    out = completed.stdout
    assert completed.returncode == 1, out[-3000:]
    failed = set(re.findall(r"^FAILED (.+?) - ", out, re.MULTILINE))
    # The altered cell fails, and only it on its page; every cell of the missing page fails.
    assert f"tests/references/{ALTERED}::Cell {index}" in failed, out[-3000:]
    assert not any(INTACT in name for name in failed), failed
    assert sum(ALTERED in name for name in failed) == 1, failed
    by_hand = nbformat.read(REFERENCES / MISSING, as_version=4)
    code_cells = sum(cell.cell_type == "code" for cell in by_hand.cells)
    assert sum(MISSING in name for name in failed) == code_cells, failed
    assert "Cell outputs differ" in out and "one line more" in out
    assert "the build did not execute exercises/by-hand/index.md" in out
    assert f"tests/references/{CHANGED_CODE}::Cell 0" in failed, failed
    assert "the build executed other code in this cell" in out
    assert "skipped" not in out


def test_pages_executed_before_the_package_changed_fail(tmp_path):
    executed = tmp_path / "executed"
    executed_copies(executed, INTACT)
    (executed / FINGERPRINT_FILE).write_text("0" * 16 + "\n")
    completed = page_tests(executed, INTACT)
    assert completed.returncode == 1
    assert "changed since the build executed intro.md" in completed.stdout, (
        completed.stdout[-2000:]
    )


def test_one_page_executed_by_book_pages_is_compared_without_a_build(tmp_path):
    """`python tools/book_pages.py execute PAGE` saves the page where its page tests look."""
    from book_pages import execute_for_tests

    executed = tmp_path / "executed"
    (executed / "stale.ipynb").parent.mkdir(parents=True)
    (executed / "stale.ipynb").write_text("{}")  # an older build's, with no fingerprint
    execute_for_tests([ROOT / "intro.md"], executed)
    assert not (executed / "stale.ipynb").exists()
    completed = page_tests(executed, INTACT)
    assert completed.returncode == 0, completed.stdout[-3000:]
