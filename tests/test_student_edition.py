"""The student edition from a clean clone of its repository: its README's commands work there,
and nothing a student reads or downloads names the instructor's repository.

One build serves every test: the edition is published (``editions.publish``, as CI does) to a
local bare repository standing in for the student repository, cloned, and its README's build
command (``make book``) is run in the clone as written, with ``-W`` as its Makefile has it. The
set-up is real but fed from this worktree: ``.venv`` is a hard-linked copy of this one's (pip's
steps then run in the clone from installed packages, and the edition's package is installed
from the clone), and ``node_modules`` a copy (``npm ci`` would need the npm registry). The build
is as long as ``make book`` (1.5 minutes on a quiet 2-core machine), on one pytest worker.

Before (1bb8d3d): the edition's README was the instructor's (``make test`` and friends, which the
edition's Makefile lacks; where the answers live), its ``.ci/run`` ran ``make test``, its build
warned that ``node_modules/mathjax`` does not exist (an error under ``-W``), and its links
named the instructor's repository.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import editions

# The edition builds the whole book once more, in its own clone (minutes): a test of another
# place the book must work, so it runs with the portability tests (`make test-portability`).
pytestmark = pytest.mark.portability

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = editions.student_repository({})  # this tree's repositories, outside a GitHub run
INSTRUCTOR = f"{SETTINGS['owner']}/{SETTINGS['name']}"
STUDENT = f"{SETTINGS['student_owner']}/{SETTINGS['student_name']}"
# The instructor's repository, its Pages and its raw files, but not the student repository
# (whose name may begin with the instructor's).
NAMES_INSTRUCTOR = re.compile(
    rf"(?:{re.escape(INSTRUCTOR)}|{re.escape(SETTINGS['owner'])}\.github\.io/"
    rf"{re.escape(SETTINGS['name'])})(?![\w-])",
    re.I,
)
# What a student's machine does not set: a GitHub run's variables would name the run's repository.
RUN_VARIABLES = ("GITHUB_ACTIONS", "GITHUB_REPOSITORY", "BINDER_REPO_URL", "BINDER_REF_URL")


def readme_commands(readme: str) -> list[str]:
    """The commands of the README's "Two commands" block, without their comments."""
    section = re.search(r"^## Two commands.*?$(.*?)(?=^## )", readme, re.M | re.S)
    assert section, "the student README has no '## Two commands' section"
    block = re.search(r"^```[a-z]*\n(.*?)^```", section.group(1), re.M | re.S)
    assert block, "the student README's 'Two commands' section has no code block"
    return [
        line.split("#", 1)[0].strip()
        for line in block.group(1).splitlines()
        if line.split("#", 1)[0].strip()
    ]


def _student_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in RUN_VARIABLES}


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clean clone of the published student repository, set up as described above."""
    tmp = tmp_path_factory.mktemp("student-repository")
    sources = tmp / "edition"
    editions.assemble_student(sources, settings=SETTINGS)
    html = tmp / "html"
    html.mkdir()
    (html / "index.html").write_text("<html></html>", encoding="utf-8")
    bare = tmp / "student.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    editions.publish(sources, html, str(bare), "Student edition", "main")
    clone = tmp / "clone"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(bare), str(clone)], check=True)
    # The set-up's caches (see the module's docstring): the edition's package and the stamps go.
    # hard links where the clone is on the same file system, a copy elsewhere
    linked = subprocess.run(["cp", "-al", str(ROOT / ".venv"), str(clone / ".venv")])
    if linked.returncode != 0:
        shutil.rmtree(clone / ".venv", ignore_errors=True)
        shutil.copytree(ROOT / ".venv", clone / ".venv", symlinks=True)
    site = next((clone / ".venv" / "lib").glob("python3.*/site-packages"))
    for path in [
        *site.glob("__editable__*transformer_lab*"),
        *site.glob("transformer_lab-*"),
    ]:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    (clone / ".venv" / ".installed").unlink(missing_ok=True)
    shutil.copytree(ROOT / "node_modules", clone / "node_modules", symlinks=True)
    (clone / "node_modules" / ".installed").touch()
    return clone


@pytest.fixture(scope="module")
def readme(clone) -> str:
    return (clone / "README.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def built(clone, readme) -> subprocess.CompletedProcess:
    """The README's build command, run once in the clone as a student runs it."""
    (build,) = [c for c in readme_commands(readme) if c.startswith("make book")]
    return subprocess.run(
        ["nice", "-n", "10", *build.split()],
        cwd=clone,
        env=_student_env(),
        capture_output=True,
        text=True,
        timeout=3600,
    )


def test_the_readme_is_the_students(readme):
    assert readme_commands(readme) == ["make book", "make check"]
    for word in (
        "instructor",
        "solution",
        "autograder",
        "hidden",
        "MAINTAINING",
        "make test",
    ):
        assert word.lower() not in readme.lower(), f"the student README mentions {word!r}"
    assert re.search(r"\banswers?\b", readme, re.I) is None, "the README speaks of answers"
    for topic in ("## The exercises", "## The self-check", "Binder"):
        assert topic in readme
    assert NAMES_INSTRUCTOR.search(readme) is None
    assert SETTINGS["html"] + "/" in readme


def test_its_makefile_ci_and_contributing_agree_with_the_readme(clone, readme):
    targets = set()
    for line in (clone / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith(".PHONY:"):
            targets = set(line.split()[1:])
    mentioned = set(re.findall(r"`make ([a-z-]+)", readme)) | {
        c.split()[1] for c in readme_commands(readme)
    }
    assert mentioned <= targets, (
        f"the README names targets its Makefile lacks: {mentioned - targets}"
    )
    assert not {"test", "bench", "student", "autograder"} & targets
    run = (clone / ".ci" / "run").read_text(encoding="utf-8")
    assert os.access(clone / ".ci" / "run", os.X_OK)
    assert run.rstrip().splitlines()[-1] == readme_commands(readme)[0]
    contributing = (clone / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert f"{STUDENT}/issues" in contributing
    assert not re.search(r"tests/|MAINTAINING|make test|instructor/", contributing)
    for document in ("MAINTAINING.md", "instructor", ".github", "tools/editions.py"):
        assert not (clone / document).exists(), f"{document} ships in the student edition"


def test_make_book_exits_0_in_a_clean_clone(built, clone):
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    output = built.stdout + built.stderr
    assert "does not exist" not in output  # html_static_path: MathJax is served here too
    assert "Finished generating HTML for book" in output
    assert (clone / "_build" / "html" / "_static" / "es5" / "tex-mml-svg.js").is_file()
    assert (clone / "_build" / "html" / "chapters" / "01-soft-join.html").is_file()


def test_make_check_checks_my_work(built, clone):
    """``make check`` (and ``PAGE=week-20``) runs the self-check on the untouched starter:
    every check is reported not done yet, and the status is not 0 until they pass."""
    assert built.returncode == 0
    for command, starter in (
        (["make", "check"], "exercises/homework/starter.py"),
        (["make", "check", "PAGE=week-20"], "exercises/week-20/starter.py"),
    ):
        result = subprocess.run(
            ["nice", "-n", "10", *command],
            cwd=clone,
            env=_student_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        output = result.stdout + result.stderr
        assert result.returncode != 0, output[-2000:]
        assert "[not done yet]" in output and "Traceback" not in output, output[-3000:]
        assert f"Self-check of {starter}" in output, output[:500]
        assert re.search(r"\d+ not done yet \(of \d+ checks\)", output), output[-2000:]


def test_no_page_notebook_or_link_names_the_instructors_repository(built, clone):
    """Every file of the built HTML (pages, downloads, ``_sources`` notebooks, scripts) and the
    reader notebooks Binder writes (``binder/postBuild``'s command) name only the student
    repository; its launch links open it."""
    assert built.returncode == 0
    subprocess.run(
        [".venv/bin/python", "tools/reader_notebooks.py", "write", "--links", "notebook"],
        cwd=clone,
        env=_student_env(),
        check=True,
        capture_output=True,
    )
    scanned, found = 0, []
    for folder in (clone / "_build" / "html", clone / "notebooks"):
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in {
                ".html",
                ".ipynb",
                ".js",
                ".txt",
                ".json",
                ".md",
            }:
                scanned += 1
                text = path.read_text(encoding="utf-8", errors="replace")
                found += [
                    f"{path.relative_to(clone)}: {m[0]}"
                    for m in NAMES_INSTRUCTOR.finditer(text)
                ]
    assert scanned > 50 and not found, found[:20]
    page = (clone / "_build" / "html" / "chapters" / "01-soft-join.html").read_text(
        encoding="utf-8"
    )
    assert f"https://mybinder.org/v2/gh/{STUDENT}/{SETTINGS['launch_branch']}?" in page
    assert f'href="https://github.com/{STUDENT}"' in page
    notebooks = list((clone / "notebooks").rglob("*.ipynb"))
    assert notebooks
    # Every notebook's first cell names the student edition (its repository, or its Pages for
    # a page with no code), never the instructor's.
    student_pages = (
        f"{SETTINGS['student_owner'].lower()}.github.io/{SETTINGS['student_name']}/"
    )
    for notebook in notebooks:
        preamble = "".join(
            json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]["source"]
        )
        assert STUDENT in preamble or student_pages in preamble, notebook.name
        assert not NAMES_INSTRUCTOR.search(preamble), notebook.name
