"""The exercise pages keep their promise: every task has a prediction, three closed hints in order,
a success criterion and a cross-reference to the chapter it practises.

The build (-W -n) already fails on a broken cross-reference; these tests catch what it cannot:
a task that lost a hint, a hint left open, or a task without its "what success looks like".
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "exercises/week-20/index.md": ["positions", "attention-map", "memo"],
    "exercises/homework/index.md": [
        "attention", "mha", "masked-mean", "accuracy", "experiment",
        "train-tokenizer", "run-tokenizer", "tokens-per-word", "embedding-parameters",
    ],
}
HINT_TITLES = ["Hint 1 — a nudge", "Hint 2 — the approach", "Hint 3 — "]


def tasks(page: str) -> dict[str, str]:
    """{task label: the text of its section}, for the sections that start with a task label."""
    text = (ROOT / page).read_text(encoding="utf-8")
    prefix = "ex-week-20" if "week-20" in page else "ex-homework"
    parts = re.split(rf"^\(({prefix}-[a-z0-9-]+)\)=\n", text, flags=re.MULTILINE)
    # each labelled section runs from its "## " heading to the next "## " heading
    return {label: section.split("\n## ", 1)[0] for label, section in zip(parts[1::2], parts[2::2])}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_task_has_a_labelled_section(page):
    prefix = "ex-week-20" if "week-20" in page else "ex-homework"
    assert list(tasks(page)) == [f"{prefix}-{name}" for name in PAGES[page]]


@pytest.mark.parametrize("page, label", [(page, label) for page in PAGES for label in tasks(page)])
def test_each_task_predicts_hints_succeeds_and_links(page, label):
    section = tasks(page)[label]
    assert "{admonition} Predict before you run" in section, f"{label}: no prediction box"
    titles = re.findall(r"^:::\{dropdown\} (.+)$", section, flags=re.MULTILINE)
    assert len(titles) == 3, f"{label}: {len(titles)} hints, expected 3"
    for title, expected in zip(titles, HINT_TITLES):
        assert title.startswith(expected), f"{label}: hint {title!r} should start with {expected!r}"
    assert ":open:" not in section, f"{label}: a hint is open by default"
    assert "**What success looks like.**" in section, f"{label}: no success criterion"
    practises = re.search(r"^\*Practises:\*(.+?)(?:\n\n|\Z)", section, flags=re.MULTILINE | re.DOTALL)
    assert practises and "{ref}`" in practises.group(1), f"{label}: no cross-reference to a chapter"


@pytest.mark.parametrize("page", list(PAGES))
def test_pages_follow_the_book_conventions(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    label = "(ex-week-20)=" if "week-20" in page else "(ex-homework)="
    assert label in text.split("\n# ", 1)[0], "the page label must stand right before the title"
    assert "**By the end of this page you will be able to**" in text
    assert text.index("Predict before you run") < text.index("\n## ")
    assert "\n## Summary\n" in text


def test_week20_page_ends_with_after_you_run():
    # "After you run" looks back on the week: a soft join, a block diagram you can read, and what
    # this week does not expect (FlashAttention, CUDA kernels).
    text = (ROOT / "exercises/week-20/index.md").read_text(encoding="utf-8")
    assert "\n## After you run\n" in text
    section = text.split("\n## After you run\n", 1)[1].split("\n## ", 1)[0]
    for phrase in ("soft join", "block diagram", "FlashAttention", "CUDA kernels"):
        assert phrase in section, phrase
    assert text.index("\n## After you run\n") < text.index("\n## Summary\n")


def test_homework_answers_what_a_classifier_may_see():
    section = " ".join(tasks("exercises/homework/index.md")["ex-homework-attention"].split())
    assert "Which information should a classifier of whole sets be allowed to see?" in section
    answer = section.split("**What success looks like.**", 1)[1]  # the worked answer comes with it
    for phrase in ("both directions", "no causal mask", "never see padding", "labels", "validation set"):
        assert phrase in answer, phrase
