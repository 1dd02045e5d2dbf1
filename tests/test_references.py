"""The committed reference notebooks are complete and up to date with the pages.

nbval (configured in pyproject.toml) re-executes every reference and compares each cell's output
with the committed one. These tests make sure there is nothing it could miss: a page without a
reference, a reference whose code is not the page's code any more, or a reference left behind.
"""

import pytest

from book_pages import REFERENCES, ROOT, code_sources, has_code, read_page, reference_path, toc_pages

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
    orphans = sorted(str(path.relative_to(ROOT)) for path in REFERENCES.rglob("*.ipynb") if path not in expected)
    assert not orphans, f"reference notebooks with no page with code in _toc.yml: {orphans}; delete them"
