"""The print edition (`make pdf`, tools/print_book.py): both PDFs are written from the built HTML,
have their pages, every figure, no code cut at the margin, and text that can be searched.

Prints the build under test (``$BOOK_HTML``, else ``_build/html``, as the browser tests do) into a
temporary folder once per run, with Debian's chromium and Poppler (installed by
`make test-portability`, which runs these tests with the browser tests).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

import print_book
from book_pages import ROOT
from chromium import CHROMIUM_ARGS, chromium_path

pytestmark = pytest.mark.browser  # a portability test (tests/conftest.py)

SITE = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    written, layouts = print_book.print_book(SITE, tmp_path_factory.mktemp("pdf"))
    return written, layouts


def pdf_pages(path: Path) -> int:
    info = subprocess.run(
        ["pdfinfo", str(path)], capture_output=True, text=True, check=True
    )
    return int(re.search(r"^Pages:\s+(\d+)", info.stdout, re.MULTILINE).group(1))


def colour_images(path: Path) -> int:
    """Raster images in ``path`` that are in colour: the book's figures. (Chromium also paints
    box shadows as small grey images, which are not figures.)"""
    listing = subprocess.run(
        ["pdfimages", "-list", str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()[2:]
    return sum(1 for line in listing if line.split()[5] != "gray")


def title(page: str) -> str:
    html = (SITE / page).read_text(encoding="utf-8")
    headings = re.findall(r"<h1>(.*?)</h1>", html, re.DOTALL)
    heading = next(h for h in headings if 'class="headerlink"' in h)
    heading = re.sub(r"<a class=\"headerlink\".*?</a>", "", heading, flags=re.DOTALL)
    return " ".join(re.sub(r"<[^>]+>", "", heading).split())


def test_both_pdfs_have_pages_and_the_sheet_is_short(printed):
    written, _ = printed
    book, sheet = pdf_pages(written["book"]), pdf_pages(written["by-hand"])
    assert 2 <= sheet <= 12, f"the by-hand sheet prints on {sheet} pages"
    assert book >= len(print_book.page_names()) + sheet - 1


def test_every_figure_is_printed(printed):
    written, layouts = printed
    assert all(layout["missing"] == [] for layout in layouts.values())
    raster = sum(layout["raster"] for layout in layouts.values())
    assert raster > 0 and colour_images(written["book"]) == raster
    sheet = layouts[f"{print_book.BY_HAND}.html"]
    assert colour_images(written["by-hand"]) == sheet["raster"]


def test_no_code_is_cut_at_the_margin(printed):
    _, layouts = printed
    assert {name: layout["cut"] for name, layout in layouts.items() if layout["cut"]} == {}


def test_the_text_can_be_searched(printed):
    written, _ = printed
    text = {
        name: " ".join(
            subprocess.run(
                ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True
            ).stdout.split()
        )
        for name, path in written.items()
    }
    for page in print_book.page_names():
        assert title(page) in text["book"], page
    assert title(f"{print_book.BY_HAND}.html") in text["by-hand"]


def test_the_cut_code_check_can_fail():
    """A long unwrapped line is reported; the print stylesheet wraps the same line."""
    from playwright.sync_api import sync_playwright

    css = (ROOT / "_ext" / "static" / "book_code.css").read_text(encoding="utf-8")
    line = "x = " + " + ".join(["attention_weights"] * 20)
    page_html = f"<article><pre style='white-space: pre'>{line}</pre></article>"

    def layouts():
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium_path(), args=CHROMIUM_ARGS
            )
            page = browser.new_page(
                viewport={"width": print_book.PRINT_WIDTH_PX, "height": 600}
            )
            page.emulate_media(media="print")
            page.set_content(page_html)
            unwrapped = page.evaluate(print_book.LAYOUT_SCRIPT)
            page.set_content(f"<style>{css}</style><article><pre>{line}</pre></article>")
            wrapped = page.evaluate(print_book.LAYOUT_SCRIPT)
            browser.close()
        return unwrapped, wrapped

    unwrapped, wrapped = print_book.in_own_thread(layouts)
    assert print_book.print_layout_problems(unwrapped) == [
        f"code cut at the margin: {line[:60]!r}"
    ]
    assert wrapped["cut"] == []
