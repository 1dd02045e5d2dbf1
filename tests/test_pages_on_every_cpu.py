"""Every page runs to its end off the canonical numeric mode, as on ARM or a CPU without AVX2.

The references under ``tests/references/`` hold the numbers of the canonical mode
(``transformer_lab.reproducibility``). A reader whose CPU cannot run that mode (Apple silicon,
Graviton, an x86-64 CPU without AVX2) or who switches it off gets other kernels, so other
numbers after training: there nbval's comparison of those pages cannot pass (``tests/conftest.py``
still compares them, and says why they differ and what to do). What must hold for that reader
all the same is that each page runs: no cell raises, and no hidden assert states the bits of one
run instead of what the protocol shows.

So each page with code is executed here twice, each time in one fresh kernel, as the build
executes it (``book_pages.execute_page``):

- ``native``: ``TRANSFORMER_LAB_NUMERICS=native``, the mode switched off: the CPU's fastest
  kernels (AVX-512 where it has them), MKL's own path, two threads;
- ``no AVX2``: the package reads a cpuinfo without AVX2 (``TRANSFORMER_LAB_CPUINFO``) and so
  asks for ATen's default kernels (``ATEN_CPU_CAPABILITY=default``), as on such a CPU.

These runs execute every page twice more than the build does, so they are portability tests
(``pytestmark`` below): `make test` leaves them out and `make test-portability` runs them, on its
own and in CI's job of its own on every push.

The test requires no error and nothing else. **It does not compare outputs with the
references**: off the canonical mode they are expected to differ, so a comparison could only
fail. It needs no reference and no AVX2, so it passes on such a CPU too. Each page and setting
is its own work unit under ``--dist loadfile`` (``tests/conftest.py``), so ``make test`` spreads
the runs over its workers.
"""

import os

import pytest

from book_pages import ROOT, execute_page, has_code, toc_pages
from test_reproducibility import NO_AVX2_CPUINFO
from transformer_lab.reproducibility import (
    CANONICAL_ENVIRONMENT,
    CPUINFO_VARIABLE,
    OPT_OUT_VARIABLE,
    is_x86_64,
)

pytestmark = pytest.mark.portability

PAGES_WITH_CODE = [page for page in toc_pages() if has_code(page)]
SETTINGS = ("native", "no AVX2")


def off_canonical_environment(setting: str, cpuinfo: str) -> dict[str, str]:
    """The environment of a page's kernel under ``setting``.

    This process pinned the canonical variables when it imported the package; a kernel started
    with them would inherit the canonical kernels, so they are dropped first.
    """
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in CANONICAL_ENVIRONMENT
        and name not in {OPT_OUT_VARIABLE, CPUINFO_VARIABLE}
    }
    environment["TOKENIZERS_PARALLELISM"] = "false"
    if setting == "native":
        environment[OPT_OUT_VARIABLE] = "native"
    else:
        environment[CPUINFO_VARIABLE] = cpuinfo
        environment["ATEN_CPU_CAPABILITY"] = "default"
    return environment


def import_warnings(notebook) -> str | None:
    """What the cell that first imports the package printed to stderr (``None``: no such cell)."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and "import transformer_lab" in cell.source:
            return "".join(
                output.get("text", "")
                for output in cell.get("outputs", [])
                if output.get("name") == "stderr"
            )
    return None


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize(
    "page", PAGES_WITH_CODE, ids=lambda page: str(page.relative_to(ROOT))
)
def test_page_runs_off_the_canonical_mode(page, setting, tmp_path):
    """Outputs are not compared with the references here: off the canonical mode they differ."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(NO_AVX2_CPUINFO)
    # Raises CellExecutionError, naming the cell and its error, at the first cell that fails.
    executed = execute_page(page, off_canonical_environment(setting, str(cpuinfo)))
    warned = import_warnings(executed)
    if setting == "no AVX2" and is_x86_64() and warned is not None:
        # The setting took effect: the package saw no AVX2 and said so on import.
        assert "no AVX2" in warned, warned


def test_each_page_and_setting_is_a_work_unit_of_its_own():
    """Under ``--dist loadfile`` the cases above spread over the workers, not one file's worth."""
    from session_rules import WHOLE_BOOK, WorkUnits

    scheduler = object.__new__(WorkUnits)  # _split_scope reads nothing of its own
    case = "tests/test_pages_on_every_cpu.py::test_page_runs_off_the_canonical_mode[intro.md-native]"
    assert scheduler._split_scope(case) == case
    other = "tests/test_references.py::test_every_page_has_a_reference"
    assert scheduler._split_scope(other) == "tests/test_references.py"
    # The browser tests: one unit per page, one for the tests of the whole book, and the file
    # of the explorers' tests (each loads its page itself) as loadfile makes it.
    page = (
        "tests/browser/test_browser_readable.py::test_nothing_is_cut_off[chapters/01-x.md]"
    )
    scheme = "tests/browser/test_browser_accessibility.py::test_no_x[chapters/01-x.md-dark]"
    assert scheduler._split_scope(page) == scheduler._split_scope(scheme)
    assert scheduler._split_scope(page) == "tests/browser/chapters/01-x.md"
    book = "tests/browser/test_browser_pages.py::test_the_book_has_maths_to_check"
    assert scheduler._split_scope(book) == WHOLE_BOOK
    explorers = "tests/browser/test_browser_explorers.py::test_x[chapters/01-x.md]"
    assert scheduler._split_scope(explorers) == "tests/browser/test_browser_explorers.py"
