"""The committed reference notebooks are complete and up to date with the pages.

nbval (configured in pyproject.toml) re-executes every reference and compares each cell's output
with the committed one. These tests make sure there is nothing it could miss: a page without a
reference, a reference whose code is not the page's code any more, a reference left behind, or
outputs that quietly disappear from what the reader sees.

Outputs cannot shrink unnoticed. nbval compares only the outputs a reference holds, so a cell
whose output vanished (a print removed, then `make refresh`) or that gained a `remove-output` or
`remove-cell` tag (its output still compared, but no longer shown) would pass. So
``tests/references/visible_outputs.json`` records, per page, how many code cells show the reader
an output (``book_pages.visible_outputs``: the reference holds an output and the page's cell has
neither tag). Refreshing never rewrites that file: a page showing fewer outputs than recorded
fails until someone deliberately runs ``python tools/book_pages.py record-outputs`` and commits
the lower number. More outputs than recorded pass (record them to raise the floor).
"""

import json

import pytest

from book_pages import (
    REFERENCES,
    ROOT,
    VISIBLE_OUTPUTS,
    code_sources,
    has_code,
    read_page,
    reference_path,
    toc_pages,
    visible_outputs,
)

PAGES = toc_pages()
PAGES_WITH_CODE = [page for page in PAGES if has_code(page)]


def page_id(page):
    return str(page.relative_to(ROOT))


def test_the_book_has_pages_with_code():
    assert PAGES_WITH_CODE, "no page in _toc.yml has a code cell: nbval would check nothing"


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=page_id)
def test_page_has_a_reference(page):
    reference = reference_path(page)
    assert reference.exists(), (
        f"{page_id(page)} has code but no reference outputs at {reference.relative_to(ROOT)}: "
        f"run `make refresh` and review the new outputs before committing"
    )


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=page_id)
def test_reference_is_not_stale(page):
    import nbformat

    reference = reference_path(page)
    if not reference.exists():
        pytest.skip("covered by test_page_has_a_reference")
    current = code_sources(read_page(page))
    committed = code_sources(nbformat.read(reference, as_version=4))
    for number, (now, then) in enumerate(zip(current, committed), start=1):
        assert now == then, (
            f"{page_id(page)}: code cell {number} differs from its reference "
            f"{reference.relative_to(ROOT)} (stale reference): run `make refresh` and review the outputs"
        )
    assert len(current) == len(committed), (
        f"{page_id(page)} has {len(current)} code cells but its reference has {len(committed)} "
        f"(stale reference): run `make refresh`"
    )


def test_no_reference_without_a_page():
    expected = {reference_path(page) for page in PAGES_WITH_CODE}
    orphans = sorted(
        str(path.relative_to(ROOT))
        for path in REFERENCES.rglob("*.ipynb")
        if path not in expected
    )
    assert not orphans, (
        f"reference notebooks with no page with code in _toc.yml: {orphans}; delete them"
    )


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=page_id)
def test_visible_outputs_do_not_shrink(page):
    if not reference_path(page).exists():
        pytest.skip("covered by test_page_has_a_reference")
    recorded = json.loads(VISIBLE_OUTPUTS.read_text(encoding="utf-8"))
    assert page_id(page) in recorded, (
        f"{page_id(page)} is not in {VISIBLE_OUTPUTS.relative_to(ROOT)}: run "
        f"`python tools/book_pages.py record-outputs` and commit it"
    )
    shown = visible_outputs(page)
    assert shown >= recorded[page_id(page)], (
        f"{page_id(page)} shows the reader {shown} code-cell outputs, {recorded[page_id(page)]} are recorded "
        f"in {VISIBLE_OUTPUTS.relative_to(ROOT)}: an output disappeared or a cell gained a remove-output/"
        f"remove-cell tag. If that is deliberate, run `python tools/book_pages.py record-outputs` and commit it"
    )


def test_every_recorded_page_still_exists():
    recorded = json.loads(VISIBLE_OUTPUTS.read_text(encoding="utf-8"))
    stale = sorted(set(recorded) - {page_id(page) for page in PAGES_WITH_CODE})
    assert not stale, (
        f"{VISIBLE_OUTPUTS.relative_to(ROOT)} lists pages with no code in _toc.yml: {stale}"
    )
