"""Every page of the table of contents, loaded in headless chromium as a reader would load it.

One served load per page (cached by the ``visit`` fixture) feeds these checks: the page loads
without console errors or failed requests, asks nothing of any host but 127.0.0.1, its maths is
typeset by the book's own MathJax, every image has alt text, and a full-page screenshot is saved
for review under ``_build/screenshots/``. A second load of each page, from disk, checks that
reading the HTML file itself works too.
"""

from __future__ import annotations

import re

import pytest

from book_pages import toc_pages
from book_site import loaded_urls, page_html, page_id

pytestmark = pytest.mark.browser

PAGES = [page_html(page) for page in toc_pages()]
IDS = [page_id(page) for page in toc_pages()]


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_page_loads_without_errors(visit, relative):
    report = visit(relative)
    assert report.status == 200, f"{relative}: the server answered HTTP {report.status}"
    loading = report.on_load
    assert not loading.console_errors, (
        f"{relative}: errors in the browser console:\n" + "\n".join(loading.console_errors)
    )
    assert not loading.failed_requests, f"{relative}: requests that failed:\n" + "\n".join(
        loading.failed_requests
    )


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_page_reads_from_disk_too(visit, relative):
    """The README's first way to read the book: open the HTML file itself (file://, no server)."""
    report = visit(relative)
    opened, math = report.from_disk, report.math_from_disk
    assert not opened.console_errors, (
        f"{relative} from disk: errors in the console:\n" + "\n".join(opened.console_errors)
    )
    assert not opened.failed_requests, (
        f"{relative} from disk: failed requests:\n" + "\n".join(opened.failed_requests)
    )
    assert not opened.third_party_requests, (
        f"{relative} from disk: asked other hosts for {opened.third_party_requests}"
    )
    assert not math["untypeset"] and not math["errors"], (
        f"{relative} from disk: maths not typeset: {math}"
    )


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_page_loads_nothing_from_other_hosts(visit, relative):
    report = visit(relative)
    assert not report.on_load.third_party_requests, (
        f"{relative} asked hosts other than 127.0.0.1 for (blocked by the test; a reader's browser "
        f"would have sent them): {sorted(set(report.on_load.third_party_requests))}. Serve the asset from "
        f"the build instead (see the offline notes in _config.yml)."
    )


def test_no_built_file_points_a_load_at_another_host(book_html):
    """Static backstop for pages, states and assets the browser run does not reach.

    Any ``<script src>``, stylesheet/icon ``<link>``, ``<img src>``, frame or media source in any
    built HTML file, and any ``url()``/``@import`` in any built CSS file, must be local. Ordinary
    ``<a href>`` links to other sites (the repository, Binder) are navigation, not loads.
    """
    offending = []
    for path in sorted(book_html.rglob("*.html")):
        for url in loaded_urls(path.read_text(encoding="utf-8", errors="replace")):
            if url.startswith(("http:", "https:", "//")):
                offending.append(f"{path.relative_to(book_html)}: {url}")
    css_remote = re.compile(
        r"""(?:url\(\s*['"]?|@import\s+['"])\s*((?:https?:)?//[^'")\s]+)"""
    )
    for path in sorted(book_html.rglob("*.css")):
        for url in css_remote.findall(path.read_text(encoding="utf-8", errors="replace")):
            offending.append(f"{path.relative_to(book_html)}: {url}")
    assert not offending, (
        "built files that make the reader's browser contact another host:\n"
        + "\n".join(offending)
    )


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_math_is_typeset_by_the_local_mathjax(visit, relative):
    math = visit(relative).math
    if math["math_elements"]:
        assert math["mathjax_loaded"], (
            f"{relative} has {math['math_elements']} maths but MathJax did not load "
            f"(the book serves its own copy: see mathjax_path in _config.yml; run `make setup`)"
        )
    assert not math["untypeset"], f"{relative}: maths left untypeset: {math['untypeset']}"
    assert not math["errors"], f"{relative}: MathJax could not typeset: {math['errors']}"
    assert not math["raw_tex"], (
        f"{relative}: raw TeX in the prose (a `$...$` that was not parsed as maths?): {math['raw_tex']}"
    )


def test_the_book_has_maths_to_check(visit):
    """Guard: the maths test above must check something somewhere."""
    counts = {relative: visit(relative).math["math_elements"] for relative in PAGES}
    assert sum(counts.values()) > 0, (
        f"no page has maths, so MathJax is never exercised: {counts}"
    )


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_every_image_and_figure_has_alt_text(visit, relative):
    report = visit(relative)
    assert not report.images_without_alt, (
        f"{relative}: images without alt text, or with a file name as alt text (set it in the cell's "
        f"`mystnb: image: alt:`, or the directive's `:alt:`):\n"
        + "\n".join(report.images_without_alt)
    )
    assert not report.figures_without_alt, (
        f"{relative}: figures whose picture has no alt text:\n"
        + "\n".join(report.figures_without_alt)
    )


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_full_page_screenshot_is_saved(visit, relative):
    report = visit(relative)
    assert report.screenshot is not None and report.screenshot.exists(), (
        f"{relative}: no screenshot"
    )
    with report.screenshot.open("rb") as handle:
        assert handle.read(3) == b"\xff\xd8\xff", f"{report.screenshot} is not a JPEG"
    assert report.screenshot.stat().st_size > 10_000, (
        f"{report.screenshot} is suspiciously small"
    )
