"""No reference in the book dangles, above all the references to the *Transformers by Hand* sheet.

The homework and the chapters point at the in-class sheet by exercise number ("exercise 2.1").
Each such mention must be a cross-reference (``{ref}`exercise 2.1 <by-hand-2-1>```) to a label
that exists on the sheet, so a renumbered or deleted exercise fails here, not in a reader's hands.
Sphinx's ``-n`` build also catches a missing ``{ref}`` target; this test runs without a build and
also catches a mention that is plain text.
"""

import re
from pathlib import Path

import pytest

from book_pages import ROOT, toc_pages

BY_HAND = ROOT / "exercises" / "by-hand" / "index.md"
# The sheet exercises the homework cites; they must keep these numbers.
CITED = ["1-1", "1-3", "2-1", "2-3", "3-1", "3-3"]

LABEL = re.compile(r"^\(([A-Za-z0-9_-]+)\)=\s*$", re.MULTILINE)
# A figure's name: cell metadata `figure: name:` or a directive's `:name:`.
FIGURE_NAME = re.compile(r"^\s+:?name:\s*([A-Za-z0-9_-]+)\s*$", re.MULTILINE)
FRONT_MATTER = re.compile(
    r"\A---\n.*?\n---\n", re.DOTALL
)  # jupytext header: its `name:` is the kernel
REFERENCE = re.compile(r"\{(?:ref|numref)\}`([^`]*)`")
MENTION = re.compile(r"\bexercises?\s+(\d+)\.(\d+)\b", re.IGNORECASE)
BY_HAND_TARGET = re.compile(r"by-hand-(\d+)-(\d+)")

PAGES = [page for page in toc_pages() if page.suffix == ".md"]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def target(reference: str) -> str:
    """The label a ``{ref}`` points at: ``text <label>`` or a bare ``label``."""
    match = re.search(r"<([^<>]+)>\s*$", reference)
    return (match.group(1) if match else reference).strip()


def labels(text: str) -> set[str]:
    body = FRONT_MATTER.sub("", text)
    return set(LABEL.findall(body)) | set(FIGURE_NAME.findall(body))


def book_labels() -> set[str]:
    return set().union(*(labels(page.read_text(encoding="utf-8")) for page in PAGES))


def by_hand_labels() -> set[str]:
    return {
        label
        for label in labels(BY_HAND.read_text(encoding="utf-8"))
        if BY_HAND_TARGET.fullmatch(label)
    }


def test_the_sheet_is_in_the_table_of_contents():
    assert BY_HAND in toc_pages(), f"{page_id(BY_HAND)} is not listed in _toc.yml"


def test_the_sheet_has_every_exercise_the_homework_cites():
    missing = [
        f"by-hand-{number}"
        for number in CITED
        if f"by-hand-{number}" not in by_hand_labels()
    ]
    assert not missing, f"{page_id(BY_HAND)} lacks the labels {missing}"


def test_each_sheet_label_heads_the_exercise_with_its_number():
    lines = BY_HAND.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        match = LABEL.match(line)
        if match and BY_HAND_TARGET.fullmatch(match.group(1)):
            section, number = BY_HAND_TARGET.fullmatch(match.group(1)).groups()
            heading = lines[index + 1]
            assert heading.startswith(f"### Exercise {section}.{number}"), (
                f"label {match.group(1)} is followed by {heading!r}, not '### Exercise {section}.{number} …'"
            )


def test_sheet_answers_are_closed_dropdowns():
    text = BY_HAND.read_text(encoding="utf-8")
    exercises = len(by_hand_labels())
    answers = text.count(":::{dropdown} Worked answer")
    assert answers == exercises, (
        f"{exercises} exercises but {answers} worked-answer dropdowns"
    )
    assert ":open:" not in text, "a worked answer must start closed"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_reference_has_a_label(page):
    known = book_labels()
    text = page.read_text(encoding="utf-8")
    dangling = sorted({target(ref) for ref in REFERENCE.findall(text)} - known)
    assert not dangling, (
        f"{page_id(page)} refers to labels that no page defines: {dangling}"
    )


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_mention_of_a_sheet_exercise_is_a_resolved_cross_reference(page):
    sheet = by_hand_labels()
    text = page.read_text(encoding="utf-8")
    spans = [(match.span(), target(match.group(1))) for match in REFERENCE.finditer(text)]
    problems = []
    for match in MENTION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if text.splitlines()[line - 1].startswith("#"):
            continue  # the exercise's own heading
        wanted = f"by-hand-{match.group(1)}-{match.group(2)}"
        inside = [label for (start, end), label in spans if start <= match.start() < end]
        if wanted not in sheet:
            problems.append(
                f"line {line}: {match.group(0)!r} but the sheet has no label ({wanted})"
            )
        elif inside != [wanted]:
            fix = f"{{ref}}`{match.group(0)} <{wanted}>`"
            problems.append(f"line {line}: {match.group(0)!r} is plain text; write {fix}")
    for label in (target(ref) for ref in REFERENCE.findall(text)):
        if BY_HAND_TARGET.fullmatch(label) and label not in sheet:
            problems.append(f"{{ref}} to {label}, which the sheet does not define")
    assert not problems, f"{page_id(page)}:\n" + "\n".join(problems)
