"""The page tests: each reference notebook is compared with the page the build executed.

The build (``tools/build_book.py``) executes every page once and saves each executed page under
``_build/executed/`` (outputs and glued values included). Executing every page again here would
double `make test`'s longest part for nothing, so the page tests read those notebooks instead of
starting kernels of their own. Everything else is nbval's, unchanged and strict: one test per
code cell of every reference under ``tests/references/`` (nbval's ``IPyNbFile``), each compared
with the same cell of the build's copy by nbval's own ``compare_outputs``, with the sanitizers of
``tests/nbval_sanitize.cfg`` (``--nbval-sanitize-with``), streams merged as nbval merges them,
and a cell whose output is an error failing as "Cell execution caused an exception".

A cell fails, never skips, when its page has nothing to compare: the build did not execute the
page (it was not built, or the build failed on it: the folder is emptied when a build starts), the
build executed other code in that cell (the page changed since the build, or since `make refresh`),
or the package, the data, the lock or _config.yml changed since the build executed the pages
(``build_book.inputs_fingerprint``, written to ``FINGERPRINT_FILE`` by the build).

``BOOK_EXECUTED_DIR`` names another folder of executed pages (a build into ``--path-output``, or a
test's own executions), else ``_build/executed`` is read.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import pytest
from nbval.plugin import IPyNbCell, IPyNbFile, coalesce_streams

from book_pages import REFERENCES, ROOT
from build_book import (
    EXECUTED_FOLDER,
    EXECUTED_VARIABLE,
    FINGERPRINT_FILE,
    inputs_fingerprint,
)

HOW_TO_BUILD = (
    "`make test` builds the book before it tests it; to test without `make`, build first with "
    "`.venv/bin/python tools/build_book.py book --fresh`"
)


def executed_folder() -> Path:
    """Where the build saved the executed pages."""
    return Path(os.environ.get(EXECUTED_VARIABLE) or ROOT / "_build" / EXECUTED_FOLDER)


def is_page_test(file_path: Path) -> bool:
    """A reference notebook: a page test."""
    return file_path.suffix == ".ipynb" and REFERENCES in file_path.resolve().parents


def executed_cells(reference: Path) -> tuple[list | None, str | None]:
    """The code cells of the build's executed copy of ``reference``'s page, or why there are
    none to compare with."""
    relative = reference.resolve().relative_to(REFERENCES)
    folder = executed_folder()
    executed = folder / relative
    page = relative.with_suffix(".md").as_posix()
    if not executed.is_file():
        return None, (
            f"the build did not execute {page}: no {executed} (either the book was not built, or "
            f"the build failed on this page, and its last lines say why). {HOW_TO_BUILD}."
        )
    fingerprint = folder / FINGERPRINT_FILE
    if not fingerprint.is_file() or fingerprint.read_text().strip() != inputs_fingerprint(
        ROOT
    ):
        return None, (
            f"the package, the data, the lock or _config.yml changed since the build executed "
            f"{page}, so its outputs may be out of date: build again. {HOW_TO_BUILD}."
        )
    notebook = nbformat.read(executed, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code"], None


class BuiltPage(IPyNbFile):
    """nbval's collector of one reference notebook, whose cells read the build's executed copy
    instead of a kernel's replies."""

    def setup(self) -> None:
        self.setup_sanitize_files()
        self.executed, self.problem = executed_cells(Path(str(self.fspath)))

    def collect(self):
        for item in super().collect():
            yield BuiltCell.from_parent(
                self,
                name=item.name,
                cell_num=item.cell_num,
                cell=item.cell,
                options=item.options,
            )

    def teardown(self) -> None:
        """No kernel to stop."""


class BuiltCell(IPyNbCell):
    """One code cell of a reference, compared with the same cell of the build's executed copy
    (the rest of nbval's ``runtest`` after the kernel's replies are collected)."""

    def runtest(self) -> None:
        if self.options["skip"]:
            pytest.skip()
        page = self.parent
        if page.problem:
            self.raise_cell_error(page.problem)
        if self.cell_num >= len(page.executed):
            self.raise_cell_error(
                f"the build's executed page has {len(page.executed)} code cells and the "
                f"reference more: the page changed since the build or since `make refresh`"
            )
        executed = page.executed[self.cell_num]
        if executed.source != self.cell.source:
            self.raise_cell_error(
                "the build executed other code in this cell than the reference holds: the page "
                "changed since the build (build again) or since `make refresh` (refresh its "
                f"reference).\nExecuted:\n{executed.source}"
            )
        outs = coalesce_streams(copy.deepcopy(executed.get("outputs", [])))
        self.test_outputs = outs
        errors = [output for output in outs if output.output_type == "error"]
        if errors and not self.options["check_exception"]:
            traceback = "\n" + "\n".join(errors[0].get("traceback", []))
            self.raise_cell_error("Cell execution caused an exception", traceback)

        unrun = self.cell.execution_count is None
        if unrun and self.cell.outputs:
            self.raise_cell_error("Unrun reference cell has outputs")
        if self.options["check"] and not unrun:
            reference = coalesce_streams(copy.deepcopy(self.cell.outputs))
            if not self.compare_outputs(outs, reference):
                self.raise_cell_error(
                    "Cell outputs differ", "\n".join(self.comparison_traceback)
                )


def collect_page_test(file_path: Path, parent) -> BuiltPage | None:
    """``pytest_collect_file``'s answer for ``file_path``: a reference becomes a page test."""
    if is_page_test(file_path):
        return BuiltPage.from_parent(parent, path=file_path)
    return None
