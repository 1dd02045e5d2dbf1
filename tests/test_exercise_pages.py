"""The exercise pages keep their promise: every task has a prediction, three closed hints in order,
a success criterion, a closed "Check your prediction" box after it, and a cross-reference to the
chapter it practises.

The build (-W -n) already fails on a broken cross-reference; these tests catch what it cannot:
a task that lost a hint, a hint left open, an answer printed in the open, a prediction asked
twice, or a mention of the in-class sheet that is not a link.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "exercises/week-20/index.md": [
        "positions",
        "attention-map",
        "memo",
        "debug",
        "sinusoidal",
        "tokens",
    ],
    "exercises/homework/index.md": [
        "accuracy",
        "masked-mean",
        "attention",
        "mha",
        "assemble",
        "experiment",
        "embedding-parameters",
        "train-tokenizer",
        "tokens-per-word",
        "run-tokenizer",
        "causal-mask",
        "mha-by-hand",
    ],
}
HINT_TITLES = ["Hint 1 — a nudge", "Hint 2 — the approach", "Hint 3 — "]
CHECK_TITLE = "Check your prediction"


def read(page: str) -> str:
    return (ROOT / page).read_text(encoding="utf-8")


def tasks(page: str) -> dict[str, str]:
    """{task label: the text of its section}, for the sections that start with a task label."""
    prefix = "ex-week-20" if "week-20" in page else "ex-homework"
    parts = re.split(rf"^\(({prefix}-[a-z0-9-]+)\)=\n", read(page), flags=re.MULTILINE)
    # each labelled section runs from its "## " heading to the next "## " heading
    return {
        label: section.split("\n## ", 1)[0]
        for label, section in zip(parts[1::2], parts[2::2])
    }


def dropdowns(text: str) -> list[tuple[str, str]]:
    """(title, body) of every ':::{dropdown}' block in ``text``."""
    return re.findall(
        r"^:::\{dropdown\} ([^\n]+)\n(.*?)^:::$", text, flags=re.MULTILINE | re.DOTALL
    )


def outside_dropdowns(text: str) -> str:
    """The text a reader sees on load: dropdown bodies and hidden code cells removed."""
    text = re.sub(
        r"^:::\{dropdown\} [^\n]+\n.*?^:::$", "", text, flags=re.MULTILINE | re.DOTALL
    )
    return re.sub(
        r"^```\{code-cell\} ipython3\n:tags: \[remove-cell\]\n.*?^```$",
        "",
        text,
        flags=re.MULTILINE | re.DOTALL,
    )


def predictions(text: str) -> list[str]:
    """The bodies of the 'Predict before you run' boxes."""
    return re.findall(
        r"^```\{admonition\} Predict before you run\n:class: tip\n(.*?)^```$",
        text,
        flags=re.MULTILINE | re.DOTALL,
    )


@pytest.mark.parametrize("page", list(PAGES))
def test_every_task_has_a_labelled_section(page):
    prefix = "ex-week-20" if "week-20" in page else "ex-homework"
    assert list(tasks(page)) == [f"{prefix}-{name}" for name in PAGES[page]]


@pytest.mark.parametrize(
    "page, label", [(page, label) for page in PAGES for label in tasks(page)]
)
def test_each_task_predicts_hints_succeeds_checks_and_links(page, label):
    section = tasks(page)[label]
    assert len(predictions(section)) == 1, f"{label}: expected one prediction box"
    titles = [title for title, _ in dropdowns(section)]
    assert len(titles) == 4, f"{label}: {titles}: expected three hints and a check box"
    for title, expected in zip(titles, HINT_TITLES):
        assert title.startswith(expected), (
            f"{label}: hint {title!r} should start with {expected!r}"
        )
    assert titles[3].startswith(CHECK_TITLE), (
        f"{label}: the last dropdown should be {CHECK_TITLE!r}"
    )
    assert ":open:" not in section, f"{label}: a dropdown is open by default"
    success = section.index("**What success looks like.**")
    assert section.index(f":::{{dropdown}} {CHECK_TITLE}") > success, (
        f"{label}: the check box comes after the run"
    )
    assert section.index(":::{dropdown} Hint 3") < success
    practises = re.search(
        r"^\*Practises:\*(.+?)(?:\n\n|\Z)", section, flags=re.MULTILINE | re.DOTALL
    )
    assert practises and "{ref}`" in practises.group(1), (
        f"{label}: no cross-reference to a chapter"
    )


@pytest.mark.parametrize("page", list(PAGES))
def test_no_prediction_is_asked_twice(page):
    questions = [
        question.strip(" -")
        for box in predictions(read(page))
        for question in re.findall(
            r"[^?:]*\?", " ".join(re.sub(r"^\d+\. ", "", box, flags=re.M).split())
        )
    ]
    assert len(questions) > 5
    assert len(questions) == len(set(questions)), [
        q for q in questions if questions.count(q) > 1
    ]


def test_glued_answers_appear_only_in_check_boxes():
    text = read("exercises/homework/index.md")
    assert "{glue:text}" in text
    assert "{glue:text}" not in outside_dropdowns(text), "a glued answer is visible on load"
    for title, body in dropdowns(text):
        if "{glue:text}" in body:
            assert title.startswith(CHECK_TITLE), title


def test_the_attention_predictions_are_not_answered_in_the_open():
    visible = " ".join(outside_dropdowns(read("exercises/homework/index.md")).split())
    for answer in ("3.0 everywhere", "½, ½ and 0", "[[3, 6]]", "[[3.0, 6.0]]", "0.667"):
        assert answer not in visible, answer
    # Exercise 1's answer (the threshold at 0 and the comparison) is in no visible code cell
    assert "logits > 0" not in visible and "logits>0" not in visible


@pytest.mark.parametrize("page", list(PAGES))
def test_pages_follow_the_book_conventions(page):
    text = read(page)
    label = "(ex-week-20)=" if "week-20" in page else "(ex-homework)="
    assert label in text.split("\n# ", 1)[0], (
        "the page label must stand right before the title"
    )
    assert "**By the end of this page you will be able to**" in text
    assert text.index("Predict before you run") < text.index("\n## ")
    assert "\n## Summary\n" in text


@pytest.mark.parametrize("page", list(PAGES))
def test_pages_state_measured_effort(page):
    text = " ".join(read(page).split())
    assert "**How long it takes: at most 3 hours**" in text  # a week's load (BOOK.md)
    for phrase in ("AMD EPYC", "Intel Xeon", "up to 2 times", "min"):
        assert phrase in text, phrase


def test_every_mention_of_the_in_class_sheet_is_a_link():
    text = read("exercises/homework/index.md")
    assert "{doc}`Transformers by Hand <../by-hand/index>`" in text
    for phrase in ("attendance sheet", "by-hand sheet", "attendance exercise"):
        assert phrase not in text.lower(), phrase
    mentions = re.findall(r"[^<`]{0,30}\bexercise (\d)\.(\d)", text, flags=re.IGNORECASE)
    linked = re.findall(r"\{ref\}`exercise (\d)\.(\d) <by-hand-(\d)-(\d)>`", text)
    assert mentions and len(mentions) == len(linked), (
        "every 'exercise N.M' must be a {ref} to by-hand-N-M"
    )
    assert all((a, b) == (c, d) for a, b, c, d in linked)


def test_week20_page_ends_with_after_you_run():
    # The Week 20 page ends with "After you run": a soft join, a block diagram you can
    # read, and what this week does not expect (FlashAttention, CUDA kernels).
    text = read("exercises/week-20/index.md")
    assert "\n## After you run\n" in text
    section = text.split("\n## After you run\n", 1)[1].split("\n## ", 1)[0]
    for phrase in ("soft join", "block diagram", "FlashAttention", "CUDA kernels"):
        assert phrase in section, phrase
    assert text.index("\n## After you run\n") < text.index("\n## Summary\n")


def test_week20_tasks_ask_for_the_students_own_code():
    text = read("exercises/week-20/index.md")
    starter = (ROOT / "exercises/week-20/starter.py").read_text(encoding="utf-8")
    for name in (
        "forward_without_positions",
        "toy_weights",
        "repaired_forward",
        "sinusoidal_positions",
        "forward_with_sinusoids",
        "encode_with_bpe",
    ):
        assert name in text and f"def {name}(" in starter, name
    assert starter.count("# TODO Task") == 6
    # Task 1 is the experiment: one change per run, validation first, the test split once;
    # beside the natural split, mirrored pairs, and what a run of this size can detect (glued)
    task1 = " ".join(tasks("exercises/week-20/index.md")["ex-week-20-positions"].split())
    for extra in (
        "--seeds",
        "--comments",
        "--split-seed",
        "--patience",
        "--test",
        "validation",
        "once",
        "mirrored pairs",
        "{glue:text}`w20_t1_detect_pairs`",
        "{glue:text}`w20_t1_detect_slice`",
    ):
        assert extra in task1, extra


def test_week20_toy_is_the_seeds_and_not_chapter_1s():
    """Seed 000 asks for login / failed / again and "which token does 'failed' look at?";
    chapter 1 teaches with another toy (tests/test_no_answers_before_tasks.py checks that
    no 3-token table is printed anywhere)."""
    task2 = tasks("exercises/week-20/index.md")["ex-week-20-attention-map"]
    assert "*login failed again*" in task2 and 'Which token does "failed" look at?' in task2
    assert "TOY_SEED = 5" in task2
    chapter = read("chapters/01-soft-join.md")
    assert 'tokens = ["login", "failed", "again"]' not in chapter


def test_homework_answers_what_a_classifier_may_see():
    section = tasks("exercises/homework/index.md")["ex-homework-attention"]
    assert (
        "Which information should a classifier of whole sets be allowed to see?"
        in " ".join(section.split())
    )
    (answer,) = [
        " ".join(body.split())
        for title, body in dropdowns(section)
        if title.startswith(CHECK_TITLE)
    ]
    for phrase in (
        "both directions",
        "no causal mask",
        "never see padding",
        "labels",
        "validation set",
    ):
        assert phrase in answer, phrase


def test_the_recipe_of_the_tokenizer_exercise_is_in_its_hints():
    section = tasks("exercises/homework/index.md")["ex-homework-train-tokenizer"]
    visible = outside_dropdowns(section)
    hints = dict(dropdowns(section))
    for step in ("pre_tokenizers.Whitespace", "BpeTrainer", "train_from_iterator"):
        assert step not in visible, step
        # hint 2 gives the approach, not the recipe (the review); hint 3 the code, key lines left
        assert step not in hints["Hint 2 — the approach"], step
    for step in ("BpeTrainer", "train_from_iterator"):
        assert step in hints["Hint 3 — most of the code"], step
    assert "Whitespace()" not in hints["Hint 3 — most of the code"]  # the student's to find


@pytest.mark.parametrize("page", [*PAGES, "exercises/by-hand/index.md"])
def test_the_summary_waits_in_a_closed_dropdown(page):
    # A summary states what the tasks above ask the student to find; open on load, a reader
    # scrolling past a task would read its answer (the by-hand sheet's did, before 0bfe104).
    section = read(page).split("\n## Summary\n", 1)[1]
    prose, dropdown = section.split(":::{dropdown} ", 1)
    assert "\n- " not in prose, "the summary's points must sit inside the dropdown"
    assert dropdown.splitlines()[0].startswith("Summary of"), dropdown.splitlines()[0]
    assert ":open:" not in dropdown.split("\n:::", 1)[0]
