"""What a reader sees on load: no book-keeping, nothing cut off, no homework answer in plain sight.

Four checks on every page of the table of contents, in headless chromium at 1280 × 800, read
from each page's one load (the ``visit`` fixture: the visible text is taken on load, the cut-off
measurement after every dropdown has been clicked open):

- **No book-keeping in view.** ``glue(...)`` calls and the asserts that keep the prose true live
  in cells tagged ``remove-cell``; the text a reader sees on load never contains ``glue(``.
- **Nothing cut off.** With every dropdown opened, no code or output block is wider than its box
  (its content would need a horizontal scroll bar), and no matplotlib figure is shrunk below a
  readable size. The book draws figures at 100 dpi with no text smaller than 9 pt, i.e. 12.5 px
  at natural size; a figure shown at less than ``MIN_FIGURE_SCALE`` of its natural width would
  render that text below 8 px.
- **Fits a phone.** At 375 px (everything opened) the page never scrolls sideways: a wide
  table, code block or equation scrolls inside its own box.
- **No homework answer in view** (chapters only). The reference implementations of the homework's
  functions live in the package; a chapter may show them only inside a closed dropdown ("open
  after homework Exercise N"). The test reads each function's source with ``inspect`` and fails
  if a distinctive line of its body is in the chapter's visible text on load.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest

from book_pages import toc_pages
from book_site import MIN_FIGURE_SCALE, PHONE, VIEWPORT, page_html, page_id

pytestmark = pytest.mark.browser

PAGES = [page_html(page) for page in toc_pages()]
IDS = [page_id(page) for page in toc_pages()]
CHAPTERS = [page_html(page) for page in toc_pages() if page.parent.name == "chapters"]
CHAPTER_IDS = [page_id(page) for page in toc_pages() if page.parent.name == "chapters"]

# A line of a function body counts as distinctive when it holds at least this many characters
# (shorter lines such as ``return output`` could appear anywhere).
MIN_DISTINCTIVE = 20
HOMEWORK_FUNCTIONS = {  # module: functions a homework exercise asks the student to write
    "attention": ("attention", "mix_values"),
    "pooling": ("masked_mean",),
    "metrics": ("accuracy",),
    "tokenizer": ("train_bpe_tokenizer", "tokens_per_word", "embedding_parameters"),
}


def normalise(text: str) -> str:
    """Collapse runs of whitespace, so a line matches however the browser wraps or indents it."""
    return re.sub(r"\s+", " ", text).strip()


def function_source(module_name: str, function_name: str) -> str:
    module = importlib.import_module(f"transformer_lab.{module_name}")
    return textwrap.dedent(inspect.getsource(getattr(module, function_name)))


@functools.cache
def lines_elsewhere() -> frozenset[str]:
    """Every line of the package outside the homework functions (normalised)."""
    package = Path(importlib.import_module("transformer_lab").__file__).parent
    text = "\n".join(
        path.read_text(encoding="utf-8") for path in sorted(package.glob("*.py"))
    )
    for module_name, functions in HOMEWORK_FUNCTIONS.items():
        for function_name in functions:
            text = text.replace(
                inspect.getsource(
                    getattr(
                        importlib.import_module(f"transformer_lab.{module_name}"),
                        function_name,
                    )
                ),
                "",
            )
    return frozenset(normalise(line) for line in text.splitlines())


def distinctive_lines(module_name: str, function_name: str) -> list[str]:
    """Body lines of a package function that would give its implementation away.

    Left out: the signature (the exercise's own starting point), the docstring (the prose may
    quote it), comments, short lines, and lines that also occur elsewhere in the package (a
    shared input check such as ``texts = check_corpus(corpus)`` is not the answer).
    """
    module = importlib.import_module(f"transformer_lab.{module_name}")
    docstring = normalise(inspect.getdoc(getattr(module, function_name)) or "")
    lines = []
    body_started = False
    for line in function_source(module_name, function_name).splitlines():
        stripped = line.strip()
        if not body_started:
            body_started = (
                stripped.endswith(":") and not stripped.startswith("@") and ")" in stripped
            )
            continue
        if (
            not stripped
            or stripped.startswith(("#", '"""', "'''"))
            or normalise(stripped) in docstring
        ):
            continue
        stripped = normalise(stripped.split("  #")[0])
        if len(stripped) >= MIN_DISTINCTIVE and stripped not in lines_elsewhere():
            lines.append(stripped)
    return lines


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_no_bookkeeping_in_the_visible_text(visit, relative):
    text = visit(relative).visible_text
    shown = [line.strip() for line in text.splitlines() if "glue(" in line]
    assert not shown, (
        f"{relative} shows book-keeping to the reader; move these lines into a cell tagged "
        f"remove-cell:\n" + "\n".join(shown[:10])
    )


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_nothing_is_cut_off(visit, relative):
    found = visit(relative).cut_off
    problems = [
        f"{item['kind']} needs {item['content']} px in a {item['box']} px box: {item['text']!r}"
        for item in found["wide"]
    ] + [
        f"figure {item['src']} ({item['alt']!r}) shown at {item['shown']} of {item['natural']} px "
        f"(scale {item['scale']} < {MIN_FIGURE_SCALE}): its smallest text would be under 8 px"
        for item in found["small"]
    ]
    assert not problems, (
        f"{relative} at {VIEWPORT['width']} × {VIEWPORT['height']}: wrap the code, print a narrower "
        f"table or draw a narrower figure:\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("relative", PAGES, ids=IDS)
def test_every_page_fits_a_phone(visit, relative):
    """At 375 px nothing makes the page scroll sideways: wide tables, code and maths scroll
    inside their own boxes, with every dropdown open."""
    phone = visit(relative).phone
    assert phone["viewport"] == PHONE["width"], phone
    culprits = [
        f"<{item['tag']} class={item['classes']!r}> reaches {item['right']} px: {item['text']!r}"
        for item in phone["wide"]
    ]
    assert phone["page"] <= PHONE["width"] and not culprits, (
        f"{relative} is {phone['page']} px wide on a {PHONE['width']} px phone; give these a "
        "box of their own that scrolls (overflow-x: auto):\n" + "\n".join(culprits)
    )


def test_homework_functions_have_distinctive_lines():
    """The answer check below would pass vacuously if no line of a function qualified."""
    for module_name, functions in HOMEWORK_FUNCTIONS.items():
        for function_name in functions:
            assert distinctive_lines(module_name, function_name), (
                f"transformer_lab.{module_name}.{function_name} has no body line of "
                f"{MIN_DISTINCTIVE}+ characters; lower MIN_DISTINCTIVE"
            )


@pytest.mark.parametrize("relative", CHAPTERS, ids=CHAPTER_IDS)
def test_no_homework_answer_is_visible_on_load(visit, relative):
    text = normalise(visit(relative).visible_text)
    shown = [
        f"{module_name}.{function_name}: {line!r}"
        for module_name, functions in HOMEWORK_FUNCTIONS.items()
        for function_name in functions
        for line in distinctive_lines(module_name, function_name)
        if line in text
    ]
    assert not shown, (
        f"{relative} shows the body of a homework function on load; put its literalinclude in a "
        f"closed dropdown titled 'open after homework Exercise N' (or show another formulation):\n"
        + "\n".join(shown)
    )


def test_the_answer_check_sees_a_function_shown_in_full(visit):
    """Control: the same check finds the lines once the dropdowns are open."""
    text = normalise(visit("chapters/01-soft-join.html").visible_text_opened)
    lines = distinctive_lines("attention", "attention")
    assert any(line in text for line in lines), (
        f"with its dropdown open, chapter 1 should show the body of attention; none of {lines} found"
    )
