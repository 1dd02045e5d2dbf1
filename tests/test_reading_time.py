"""The book's reading budget (BOOK.md): the six chapters read in at most 240 minutes at the
book's own count, the one ``intro.md`` computes and glues into its map of the pages (65 words a
minute; prose, hints and the code of visible cells). The test runs the intro's own hidden cell,
so the count it holds the book to is the one the reader is told.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUDGET_MINUTES = 240
COUNTER_CELL = re.compile(
    r"```\{code-cell\} ipython3\n:tags: \[remove-cell\]\n"
    r"(# Book-keeping, hidden from the reader: reading times.*?)^```$",
    re.S | re.M,
)


@pytest.fixture(scope="module")
def counter() -> dict:
    """The intro's reading-time cell, run with a stand-in for glue: its names and glued values."""
    source = (ROOT / "intro.md").read_text(encoding="utf-8")
    cell = COUNTER_CELL.search(source)
    assert cell, "intro.md has no hidden reading-time cell"
    glued: dict[str, str] = {}
    namespace = {"glue": lambda name, value, display=True: glued.__setitem__(name, value)}
    exec(cell.group(1).replace("from myst_nb import glue\n", ""), namespace)  # noqa: S102
    return {**namespace, "glued": glued}


def test_the_chapters_read_within_the_budget(counter):
    # this checkout's pages (the intro finds them through the installed package, which may be
    # another checkout's)
    words = {
        key: counter["visible_words"](ROOT / page) for key, page in counter["PAGES"].items()
    }
    minutes = {key: counter["minutes"](count) for key, count in words.items()}
    total = sum(minutes[f"ch{n}"] for n in range(1, 7))
    if Path(counter["ROOT"]).resolve() == ROOT:
        assert total == int(counter["glued"]["intro_chapter_minutes"])
    assert total <= BUDGET_MINUTES, (
        f"the chapters take {total} min at the book's count, over {BUDGET_MINUTES}: {minutes}"
    )


def test_the_counter_counts_what_a_reader_sees(counter, tmp_path):
    """Prose, dropdowns and visible code count; hidden cells, hidden inputs and cell options
    (tags, alt text) do not; a figure's caption does."""
    page = tmp_path / "page.md"
    page.write_text(
        "---\nfront: matter words\n---\n"
        "one two three\n\n:::{dropdown} Hint\nfour five\n:::\n\n"
        "```{code-cell} ipython3\nsix = 7\n```\n\n"
        "```{code-cell} ipython3\n:tags: [remove-cell]\nhidden hidden hidden\n```\n\n"
        "```{code-cell} ipython3\n---\ntags: [remove-input]\nmystnb:\n  image:\n"
        "    alt: alt words not shown\n  figure:\n    caption: eight nine\n    name: fig-x\n"
        "---\nplotting code not shown\n```\n",
        encoding="utf-8",
    )
    seen = ["one", "two", "three", ":::{dropdown}", "Hint", "four", "five", ":::"]
    seen += ["six", "=", "7", "eight", "nine"]
    # a cell's fences and options are replaced by what it shows
    assert counter["visible_words"](page) == len(seen)


def test_the_exercise_pages_state_three_hours_at_most():
    for page in ("exercises/week-20/index.md", "exercises/homework/index.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert re.search(r"\*\*How long it takes: at most 3 hours\*\*", text), page
