"""Every picture a page shows has alt text that describes it, checked on the sources (no build).

The browser tests check the built HTML; this check needs no build and catches the same mistakes
earlier: a code cell whose reference holds an image output but whose ``mystnb: image: alt:`` is
missing, and ``{image}``/``{figure}`` directives, Markdown images and ``<img>`` tags without
``alt``. Empty alt text and alt text that looks like a file name or path count as missing
(``book_pages.alt_text_problem``): Sphinx fills in the image's path when a figure has no alt text,
which a check for "some alt text" would accept.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from book_pages import (
    ROOT,
    alt_text_problem,
    has_code,
    read_page,
    reference_path,
    toc_pages,
)

PAGES = toc_pages()
DIRECTIVE = re.compile(
    r"^(?:`{3,}|:{3,})\{(?:image|figure)\}[ \t]*(\S*)[ \t]*\n((?:[ \t]*:[\w-]+:.*\n)*)",
    re.MULTILINE,
)
MARKDOWN_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)[^)]*\)")
HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
HTML_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)


def markdown_alt_problems(text: str) -> list[str]:
    """One line per picture in Markdown ``text`` whose alt text is missing, empty or a file name."""
    problems = []
    for source, options in DIRECTIVE.findall(text):
        alt = re.search(r"^[ \t]*:alt:[ \t]*(.*)$", options, flags=re.MULTILINE)
        problem = alt_text_problem(alt.group(1) if alt else None)
        if problem:
            problems.append(f"{{image}}/{{figure}} {source}: {problem}")
    for alt, source in MARKDOWN_IMAGE.findall(text):
        if problem := alt_text_problem(alt):
            problems.append(f"![...]({source}): {problem}")
    for tag in HTML_IMAGE.findall(text):
        alt = HTML_ALT.search(tag)
        if problem := alt_text_problem(
            next(filter(None, alt.groups()), "") if alt else None
        ):
            problems.append(f"{tag[:80]}: {problem}")
    return problems


def figure_cell_problems(page) -> list[str]:
    """One line per code cell that shows an image (in its reference) without usable alt text."""
    if not has_code(page) or not reference_path(page).exists():
        return []
    page_cells = [cell for cell in read_page(page).cells if cell.cell_type == "code"]
    reference = nbformat.read(reference_path(page), as_version=4)
    reference_cells = [cell for cell in reference.cells if cell.cell_type == "code"]
    problems = []
    for number, (cell, executed) in enumerate(zip(page_cells, reference_cells), start=1):
        shows_image = any(
            key.startswith("image/")
            for output in executed.get("outputs", [])
            for key in output.get("data", {})
        )
        hidden = {"remove-output", "remove-cell"} & set(cell.metadata.get("tags", []))
        if shows_image and not hidden:
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt")
            if problem := alt_text_problem(alt):
                problems.append(
                    f"code cell {number}: {problem} (set `mystnb: image: alt:` in its metadata)"
                )
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_picture_has_descriptive_alt_text(page):
    markdown = "\n".join(
        cell.source + "\n" for cell in read_page(page).cells if cell.cell_type == "markdown"
    )
    problems = markdown_alt_problems(markdown) + figure_cell_problems(page)
    assert not problems, f"{page.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_book_has_figures_to_check():
    """Guard: the figure check above must find at least one figure with alt text somewhere."""
    cells = [
        cell
        for page in PAGES
        if has_code(page)
        for cell in read_page(page).cells
        if cell.cell_type == "code"
    ]
    assert any(
        cell.metadata.get("mystnb", {}).get("image", {}).get("alt") for cell in cells
    )


@pytest.mark.parametrize(
    "text",
    [
        "```{image} ../images/plot.png\n:width: 50%\n```\n",
        "```{figure} plot.svg\n:alt:\n```\n",
        ":::{figure} plot.svg\n:alt: ../_build/html/_images/plot.svg\n:::\n",
        "![](images/plot.png)\n",
        "![plot.png](images/plot.png)\n",
        '<img src="plot.png" alt="">\n',
        '<img src="plot.png">\n',
    ],
)
def test_missing_empty_or_file_name_alt_text_is_caught(text):
    assert len(markdown_alt_problems(text)) == 1


def test_descriptive_alt_text_passes():
    text = (
        "```{figure} plot.svg\n:alt: Loss falls for both models; the transformer's falls faster.\n```\n"
        "![A heatmap of weights, rows sum to 1](plot.png)\n"
        '<img src="p.png" alt="Bar chart of tokens per word">\n'
    )
    assert markdown_alt_problems(text) == []
