"""Hint dropdowns: closed when the page loads, open on a click, and then show their text.

Generic over the three kinds of collapsible block a Jupyter Book page can hold, inside the page's
article (the theme's navigation also uses ``<details>``, which is not content):

- ``<details>`` elements: sphinx-design ``{dropdown}`` blocks (exercise hints), myst-nb's
  hidden-input/output cells, and sphinx-togglebutton's ``{toggle}`` blocks;
- sphinx-togglebutton admonitions (``:class: dropdown``), opened by clicking their title.

Each dropdown is clicked like a reader would (the mouse, in the middle of its summary or title,
where nothing else may take the click), in
document order so that a dropdown nested in another is reached after its parent opens
(``exercise_dropdowns`` in book_site.py, run on each page's one load by the ``visit`` fixture,
after everything that checks the page as loaded).
"""

from __future__ import annotations

import pytest

from book_pages import toc_pages
from book_site import page_html, page_id

pytestmark = pytest.mark.browser

PAGES = [page_html(page) for page in toc_pages()]
IDS = [page_id(page) for page in toc_pages()]


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_dropdowns_start_closed_and_open_on_click(visit, relative):
    report = visit(relative)
    problems = report.dropdown_problems
    assert not problems, f"{relative}:\n" + "\n".join(problems)
    # Opening a hint must not break anything or reach out either (e.g. lazy images, MathJax fonts).
    opened = report.after_opening
    assert (
        not opened.console_errors
        and not opened.failed_requests
        and not opened.third_party_requests
    ), (
        f"{relative}: after opening the dropdowns: console {opened.console_errors}, failed "
        f"requests {opened.failed_requests}, other hosts {opened.third_party_requests}"
    )


def test_the_book_has_dropdowns_to_check(visit):
    """Guard: the exercise pages hold hints, so at least one dropdown must exist in the book.

    Counted on each page's cached load with the selectors ``exercise_dropdowns`` clicks.
    """
    counts = {relative: visit(relative).dropdowns for relative in PAGES}
    assert sum(counts.values()) > 0, (
        f"no page has a dropdown, so the hints test checks nothing: {counts}"
    )
