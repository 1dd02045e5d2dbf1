"""Hint dropdowns: closed when the page loads, open on a click, and then show their text.

Generic over the three kinds of collapsible block a Jupyter Book page can hold, inside the page's
article (the theme's navigation also uses ``<details>``, which is not content):

- ``<details>`` elements: sphinx-design ``{dropdown}`` blocks (exercise hints), myst-nb's
  hidden-input/output cells, and sphinx-togglebutton's ``{toggle}`` blocks;
- sphinx-togglebutton admonitions (``:class: dropdown``), opened by clicking their title.

Each dropdown is clicked like a reader would (Playwright clicks its summary or title), in
document order so that a dropdown nested in another is reached after its parent opens.
"""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from book_pages import toc_pages
from book_site import DETAILS, TOGGLE_ADMONITIONS, page_html, page_id

pytestmark = pytest.mark.browser

PAGES = [page_html(page) for page in toc_pages()]
IDS = [page_id(page) for page in toc_pages()]

DETAILS_STATE = """el => {
    const body = Array.from(el.children).filter(c => c.tagName.toLowerCase() !== 'summary');
    const visible = body.filter(c => { const r = c.getBoundingClientRect();
                                       return r.width > 0 && r.height > 0; });
    return {open: el.open,
            title: (el.querySelector(':scope > summary') || el).innerText.trim().slice(0, 60),
            visible_text: visible.map(c => c.innerText).join(' ').trim()};
}"""

ADMONITION_STATE = """el => {
    const body = Array.from(el.children).filter(c => !c.classList.contains('admonition-title'));
    const visible = body.filter(c => { const r = c.getBoundingClientRect();
                                       return r.width > 0 && r.height > 0
                                              && getComputedStyle(c).visibility !== 'hidden'; });
    return {open: !el.classList.contains('toggle-hidden'),
            title: (el.querySelector('.admonition-title') || el).innerText.trim().slice(0, 60),
            visible_text: visible.map(c => c.innerText).join(' ').trim()};
}"""


def exercise_dropdowns(page) -> list[str]:
    """Click every dropdown on ``page``; return one line per problem found.

    Document order (one combined selector), so a dropdown nested in another, of either kind, is
    reached only after its parent has been opened.
    """
    problems = []
    for index, element in enumerate(
        page.query_selector_all(f"{DETAILS}, {TOGGLE_ADMONITIONS}")
    ):
        if element.evaluate("el => el.tagName.toLowerCase()") == "details":
            kind, state, handle = "details", DETAILS_STATE, ":scope > summary"
        else:
            kind, state, handle = (
                "toggle admonition",
                ADMONITION_STATE,
                ":scope > .admonition-title",
            )
        before = element.evaluate(state)
        name = f"dropdown #{index + 1} ({kind}) {before['title']!r}"
        if before["open"] or before["visible_text"]:
            problems.append(f"{name} is open on load (hints must start closed)")
            continue
        element.query_selector(handle).click()
        page.wait_for_function(f"el => ({state})(el).open", arg=element)
        if not element.evaluate(state)["visible_text"]:
            problems.append(f"{name} opened but shows no text")
    return problems


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_dropdowns_start_closed_and_open_on_click(open_page, relative):
    opened = open_page(relative)
    try:
        problems = exercise_dropdowns(opened.page)
    finally:
        opened.close()
    assert not problems, f"{relative}:\n" + "\n".join(problems)
    # Opening a hint must not break anything or reach out either (e.g. lazy images, MathJax fonts).
    assert not opened.console and not opened.failed and not opened.third_party, (
        f"{relative}: after opening the dropdowns: console {opened.console}, failed requests "
        f"{opened.failed}, other hosts {opened.third_party}"
    )


def test_the_book_has_dropdowns_to_check(book_html):
    """Guard: the exercise pages hold hints, so at least one dropdown must exist in the book.

    Counted in the built HTML with the browser tests' own selectors (no browser needed: loading
    every page again here would repeat the work of the tests above).
    """
    counts = {
        relative: len(
            BeautifulSoup(
                (book_html / relative).read_text(encoding="utf-8"), "html.parser"
            ).select(f"{DETAILS}, {TOGGLE_ADMONITIONS}")
        )
        for relative in PAGES
    }
    assert sum(counts.values()) > 0, (
        f"no page has a dropdown, so the hints test checks nothing: {counts}"
    )
