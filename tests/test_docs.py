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


# "Python 3.11", "python3.11", "python-3.11" (binder/runtime.txt), python-version: "3.11".
PYTHON_VERSION = re.compile(
    r"(?:\bPython[ -]?|\bpython[ -]?|python-version:\s*\")(\d+\.\d+)\b(?!\.\d)"
)


def tracked_text_files() -> list[str]:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    kinds = (".md", ".py", ".yml", ".yaml", ".cfg", ".toml", ".txt", ".in", "Makefile")
    return [
        path
        for path in tracked
        if path.endswith(kinds)
        and not path.startswith(("data/", "tests/references/"))
        and (ROOT / path).exists()
    ]


def test_every_python_version_named_is_pyprojects():
    """pyproject.toml's requires-python is the one home; every other mention is checked here."""
    from check_python import REQUIRED, required_python

    assert REQUIRED == required_python(ROOT / "pyproject.toml")
    wanted = "{}.{}".format(*REQUIRED)
    if not tracked_text_files():
        pytest.skip("not a git checkout")
    found = {
        f"{path}: {match.group(0)}"
        for path in tracked_text_files()
        for match in PYTHON_VERSION.finditer((ROOT / path).read_text(encoding="utf-8"))
        if match.group(1) != wanted
    }
    # Other Pythons named on purpose: the checker's floor, and the tests that feed it others.
    allowed = (
        "tools/check_python.py: Python 3.7",
        "tests/test_check_python.py:",
        "tests/test_docs.py:",
    )
    assert {line for line in found if not line.startswith(allowed)} == set()


def test_the_python_version_check_can_fail(tmp_path):
    from check_python import required_python

    (tmp_path / "pyproject.toml").write_text('requires-python = ">=3.12,<3.13"\n')
    assert required_python(tmp_path / "pyproject.toml") == (3, 12)
    assert PYTHON_VERSION.findall('Python 3.12 and python-version: "3.10"') == [
        "3.12",
        "3.10",
    ]


def test_the_package_map_names_every_module():
    """transformer_lab/__init__.py's docstring is the one map of the package."""
    import transformer_lab

    package = ROOT / "code" / "transformer_lab"
    modules = {
        path.stem if path.is_file() else path.name
        for path in package.iterdir()
        if (
            path.suffix == ".py"
            and path.stem != "__init__"
            and not path.stem.startswith("_")
        )
        or (path / "__init__.py").is_file()
    }
    named = set(re.findall(r"``(\w+)``", transformer_lab.__doc__))
    assert modules - named == set()


def test_every_tool_is_in_the_layout_table():
    maintaining = (ROOT / "MAINTAINING.md").read_text(encoding="utf-8")
    layout = maintaining.split("## Layout", 1)[1].split("\n## ", 1)[0]
    missing = [
        path.name
        for path in sorted((ROOT / "tools").iterdir())
        if path.suffix in {".py", ".txt"} and path.name not in layout
    ]
    assert missing == []


# `char_transformer.LENGTH`, `set_classifier.PATIENCE`: a package module and one of its constants.
MODULE_CONSTANT = re.compile(r"`((?:[a-z_]+\.)+)([A-Z][A-Z0-9_]+)`")


def named_constants(text: str) -> list[tuple[str, str]]:
    return [(module.rstrip("."), name) for module, name in MODULE_CONSTANT.findall(text)]


def test_every_constant_the_docs_name_exists():
    import importlib

    docs = [*DOCS, "data/README.md"]
    named = {
        (doc, module, name)
        for doc in docs
        for module, name in named_constants((ROOT / doc).read_text(encoding="utf-8"))
    }
    assert named, "the docs name no module.CONSTANT: the pattern is stale"
    missing = []
    for doc, module, name in sorted(named):
        try:
            found = hasattr(importlib.import_module(f"transformer_lab.{module}"), name)
        except ImportError:
            found = False
        if not found:
            missing.append(f"{doc}: {module}.{name}")
    assert missing == []


def test_the_constant_check_can_fail():
    assert named_constants("e.g. `char_transformer.EPOCHS` and `a.b.C_1`") == [
        ("char_transformer", "EPOCHS"),
        ("a.b", "C_1"),
    ]


def test_every_module_has_its_mirror_test_file():
    """CONTRIBUTING: every module of the package has tests/test_MODULE.py."""
    package = ROOT / "code" / "transformer_lab"
    missing = [
        path.name
        for path in sorted(package.glob("*.py"))
        if path.stem != "__init__"
        and not (ROOT / "tests" / f"test_{path.stem.lstrip('_')}.py").is_file()
    ]
    assert missing == []


# "JupyterLab 4.4.9", "Jupyter Server 2.17.0", "jupytext (1.19.6)", "torch is pinned to 2.13.0".
VERSION_IN_PROSE = re.compile(
    r"\b(Jupyter\s+Server|[A-Za-z][\w-]*)(?: \(| is pinned to |\s)(\d+\.\d+\.\d+)\b"
)
LOCKS = ("requirements.in", "requirements.txt", "binder/requirements.txt")


def normalised(name: str) -> str:
    return re.sub(r"[\s_.-]+", "-", name).lower()


def pinned_versions() -> dict[str, set[str]]:
    pins: dict[str, set[str]] = {}
    for lock in (*LOCKS, "tools/repo2docker_base.txt"):
        for line in (ROOT / lock).read_text(encoding="utf-8").splitlines():
            name, _, version = line.partition("==")
            if version and not line.startswith("#"):
                pins.setdefault(normalised(name), set()).add(version.split("+")[0].strip())
    return pins


def stale_versions(text: str, pins: dict[str, set[str]]) -> list[str]:
    """Each "package X.Y.Z" in ``text`` whose package is pinned, but never at that version."""
    return [
        f"{name} {version}"
        for name, version in VERSION_IN_PROSE.findall(text)
        if normalised(name) in pins and version not in pins[normalised(name)]
    ]


def test_versions_named_in_the_maintainers_guide_are_the_locks():
    pins = pinned_versions()
    text = (ROOT / "MAINTAINING.md").read_text(encoding="utf-8")
    assert len(VERSION_IN_PROSE.findall(text)) >= 5, (
        "no versions found: the pattern is stale"
    )
    assert stale_versions(text, pins) == []


def test_the_version_check_can_fail():
    pins = {"jupyterlab": {"4.4.9"}, "jupyter-server": {"2.17.0"}, "torch": {"2.13.0"}}
    text = (
        "JupyterLab 4.4.8, Jupyter Server 2.17.0; torch is pinned to 2.12.0; Ubuntu 24.04.1"
    )
    assert stale_versions(text, pins) == ["JupyterLab 4.4.8", "torch 2.12.0"]
