"""The maps a maintainer works from stay true: every path named in a table of README.md,
CONTRIBUTING.md or MAINTAINING.md exists, every link between them lands on a heading, the README
stays the short front door, and no file refers to an issue number that means nothing in a fork."""

import re
import subprocess

import pytest

from book_pages import ROOT

DOCS = ("README.md", "CONTRIBUTING.md", "MAINTAINING.md")
# Where a bare file name in a map ("`plotting.py`", "`schema.py`") may live.
FOLDERS = ("", "code/transformer_lab", "code/transformer_lab/cloudwave", "tools", "tests")
CODE_SPAN = re.compile(r"`([^`\s]+)`")
LOOKS_LIKE_A_PATH = re.compile(
    r"^[\w.*-]*(/[\w.*-]*)*(\.(py|md|yml|toml|txt|json|cfg|in|csv|ipynb)|/)$"
)
LINK = re.compile(r"\]\(([\w./-]+\.md)(#[\w-]+)?\)")
ISSUE_NUMBER = re.compile(r"\bissues?[ -]#?\d+", re.IGNORECASE)


def table_rows(text: str) -> list[str]:
    """The rows of every markdown table in ``text`` (header and rule rows included)."""
    return [line for line in text.splitlines() if line.startswith("|")]


def paths_in_tables(name: str) -> list[str]:
    rows = table_rows((ROOT / name).read_text(encoding="utf-8"))
    spans = [span for row in rows for span in CODE_SPAN.findall(row)]
    # Not paths: a bare extension (".md") and what the build writes (_build/).
    return [
        span
        for span in spans
        if LOOKS_LIKE_A_PATH.match(span)
        and not re.fullmatch(r"\.\w+", span)
        and not span.startswith("_build")
    ]


def exists(path: str) -> bool:
    """Whether ``path`` (a glob allowed) names something under one of ``FOLDERS``."""
    for folder in FOLDERS:
        base = ROOT / folder
        if any(base.glob(path.rstrip("/"))) if "*" in path else (base / path).exists():
            return True
    return False


@pytest.mark.parametrize("name", DOCS)
def test_every_path_in_a_map_table_exists(name):
    paths = paths_in_tables(name)
    missing = [path for path in paths if not exists(path)]
    assert not missing, f"{name} names paths that do not exist: {missing}"


def test_the_maps_are_read_by_the_test():
    # The test above cannot pass by finding nothing: the maps name the files a change touches.
    assert {"tools/build_book.py", "tools/binder_check.py"} <= set(
        paths_in_tables("MAINTAINING.md")
    )
    assert "tests/selfcheck/" in paths_in_tables("CONTRIBUTING.md")
    assert not exists("tests/test_no_such_module.py") and exists("plotting.py")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("name", DOCS)
def test_links_between_the_docs_land_on_a_heading(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    for target, anchor in LINK.findall(text):
        path = ROOT / target
        assert path.exists(), f"{name} links to {target}, which does not exist"
        if anchor:
            headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
            assert anchor[1:] in {slug(h) for h in headings}, (
                f"{name}: no heading {anchor} in {target}"
            )


def test_the_readme_is_the_short_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 170
    for section in (
        "## Two commands",
        "## Reading the book",
        "## For students",
        "## For instructors",
    ):
        assert section in text
    assert "MAINTAINING.md" in text and "CONTRIBUTING.md" in text


def test_no_file_refers_to_an_issue_number():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    kinds = (".md", ".py", ".yml", ".yaml", ".cfg", ".toml", ".txt", ".in")
    # data/ holds synthetic customer comments, which may number their problems as customers do.
    checked = [
        path
        for path in tracked
        if (path.endswith(kinds) or path.endswith("Makefile"))
        and not path.startswith(("data/", "tests/references/"))
        and (ROOT / path).exists()
    ]
    found = [
        f"{path}: {match.group(0)}"
        for path in checked
        for match in ISSUE_NUMBER.finditer((ROOT / path).read_text(encoding="utf-8"))
    ]
    assert not found, found
