"""The reader notebooks (tools/reader_notebooks.py) show the lesson the HTML shows, and no book-keeping.

Every page with code is converted here from its source and committed reference, as Binder's
postBuild and the HTML's download button do, and what a reader would see is checked: no glue key
or raw MyST in the prose, every listing, caption and dropdown there, every link resolving, no
book-keeping in view. `make binder-check` then runs them in JupyterLab; these tests are the fast
half (no kernel).
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

from book_pages import ROOT, read_page, reference_path

sys.path.insert(0, str(ROOT / "tools"))

import reader_notebooks as rn  # noqa: E402

PAGES = rn.reader_pages()
FENCED = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", flags=re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
ANCHOR = re.compile(r'<a id="([^"]+)"></a>|^\(([^()\s]+)\)=$', flags=re.M)
# What jupyterlab-myst draws in Binder's notebooks (targets and its own dropdowns); nothing else.
BINDER_MYST = re.compile(r"^\([^()\s]+\)=$|^:{3,}(\{dropdown\}.*)?$", flags=re.M)


@pytest.fixture(scope="module")
def book() -> rn.Book:
    return rn.read_book()


@pytest.fixture(scope="module")
def notebooks(book) -> dict[str, dict[str, nbformat.NotebookNode]]:
    settings = rn.repository_settings({})
    return {
        links: {
            rn.page_id(page): rn.make_reader_notebook(page, links, book, settings)
            for page in PAGES
        }
        for links in ("notebook", "html")
    }


def prose(notebook) -> str:
    """The Markdown a reader sees, without fenced code (listings may quote anything)."""
    text = "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return re.sub(r"`[^`\n]*`", "", FENCED.sub("", text))


def anchors(notebook) -> set[str]:
    found = ANCHOR.findall("\n".join(c.source for c in notebook.cells))
    return {html or myst for html, myst in found}


@pytest.mark.parametrize("links", ["notebook", "html"])
@pytest.mark.parametrize("page", PAGES, ids=rn.page_id)
def test_no_glue_key_and_no_raw_myst_in_the_prose(page, links, notebooks):
    notebook = notebooks[links][rn.page_id(page)]
    text = prose(notebook)
    if links == "notebook":
        text = BINDER_MYST.sub("", text)
    reference = nbformat.read(reference_path(page), as_version=4)
    keys = sorted(rn.glue_values(reference))
    shown = [key for key in keys if re.search(rf"\b{re.escape(key)}\b", text)]
    assert not shown, f"glue keys shown as names: {shown}"
    raw = re.findall(
        r"\{[a-z][\w:-]*\}`|^(?:`{3,}|:{3,})\{|^\([\w-]+\)=$", text, flags=re.M
    )
    assert not raw, f"raw MyST roles or directives in the prose: {raw}"


@pytest.mark.parametrize("links", ["notebook", "html"])
@pytest.mark.parametrize("page", PAGES, ids=rn.page_id)
def test_every_listing_dropdown_and_caption_is_there(page, links, notebooks):
    notebook = notebooks[links][rn.page_id(page)]
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    source = page.read_text(encoding="utf-8")
    for obj in re.findall(r"^:pyobject:\s*(\S+)", source, flags=re.M):
        name = obj.split(".")[-1]
        assert re.search(rf"^\s*(def|class) {name}\b", markdown, flags=re.M), (
            f"the listing of {obj} is missing"
        )
    dropdowns = len(re.findall(r"^\s*(?:`{3,}|:{3,})\{dropdown\}", source, flags=re.M))
    drawn = "<details>" if links == "html" else "{dropdown}"
    assert markdown.count(drawn) == dropdowns
    assert "<details open" not in markdown and ":open:" not in markdown
    captions = [
        rn.figure_caption(cell)
        for cell in read_page(page).cells
        if cell.cell_type == "code" and rn.figure_caption(cell)
    ]
    shown = [c for c in notebook.cells if c.metadata.get("reader") == rn.CAPTION]
    assert len(shown) == len(captions)
    for (caption, _), cell in zip(captions, shown):
        assert re.match(
            r"(<a id=\"[^\"]+\"></a>|\([^()\s]+\)=)?\n?\*\*Fig\. \d+\*\* ", cell.source
        )
        assert caption.split()[-1] in cell.source


@pytest.mark.parametrize("links", ["notebook", "html"])
@pytest.mark.parametrize("page", PAGES, ids=rn.page_id)
def test_every_link_resolves(page, links, notebooks, book):
    these = notebooks[links]
    notebook = these[rn.page_id(page)]
    here = (ROOT / "notebooks" / rn.page_id(page)).parent
    html = rn.repository_settings({})["html"] + "/"
    for target in LINK.findall(prose(notebook).replace("\n", " ")):
        path, _, fragment = target.partition("#")
        assert target != "#", "a link to '#'"
        if path.startswith(html):
            page_html = path[len(html) :]
            source = [
                p
                for p in rn.toc_pages()
                if rn.page_id(p).rsplit(".", 1)[0] + ".html" == page_html
            ]
            assert source, f"{target}: not a page of the book"
            ids = {t.anchor for t in book.targets.values() if t.page == source[0]}
        elif path.startswith("http"):
            continue  # an external link the page itself makes
        elif not path:
            assert links == "notebook", (
                f"{target}: a same-page link in a downloadable notebook"
            )
            ids = anchors(notebook)
        else:
            assert links == "notebook", (
                f"{target}: a relative link in a downloadable notebook"
            )
            other = (
                (here / path).resolve().relative_to(ROOT / "notebooks").with_suffix(".md")
            )
            assert other.as_posix() in these, f"{target}: no such reader notebook"
            if fragment:
                # JupyterLab opens (or shows) the notebook and scrolls to the cell of that id.
                assert fragment.startswith("cell-id="), f"{target}: not a cell id"
                label = fragment.removeprefix("cell-id=")
                cells = [c for c in these[other.as_posix()].cells if c.id == label]
                assert cells, f"{target}: no cell {label!r} there"
                assert label in anchors(nbformat.v4.new_notebook(cells=cells)), (
                    f"{target}: the cell {label!r} does not hold that target"
                )
                continue
            ids = set()
        assert not fragment or fragment in ids, f"{target}: no anchor {fragment!r} there"


@pytest.mark.parametrize("page", PAGES, ids=rn.page_id)
def test_no_bookkeeping_in_view_and_every_visible_cell_kept(page, notebooks):
    notebook = notebooks["notebook"][rn.page_id(page)]
    code = [c for c in notebook.cells if c.cell_type == "code"]
    for cell in code:
        assert "glue(" not in cell.source and "myst_nb" not in cell.source
        if cell.metadata.get("reader") == rn.BOOKKEEPING:
            assert cell.metadata["jupyter"] == {
                "source_hidden": True,
                "outputs_hidden": True,
            }
            assert not re.search(r"^\s*assert\b", cell.source, flags=re.M)
    visible = [
        c
        for c in read_page(page).cells
        if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])
    ]
    shown = [c for c in code if c.metadata.get("reader") not in rn.NOT_THE_PAGES]
    assert len(shown) == len(visible)
    for cell in shown:
        if set(cell.metadata.get("tags", [])) & {"remove-input", "hide-input"}:
            assert cell.metadata["jupyter"]["source_hidden"] is True


def test_a_hidden_cell_keeps_only_what_later_cells_read():
    source = (
        "import torch\nfrom myst_nb import glue\nscale = 2\nunused = 3\n"
        "torch.manual_seed(0)\nassert scale > 1\nglue('k', scale, display=False)\n"
    )
    assert (
        rn.needed_part(source, {"scale"}) == "import torch\nscale = 2\ntorch.manual_seed(0)"
    )
    assert rn.needed_part("x = 1\nassert x\n", set()) == ""
    free, bound = rn.free_and_bound("import torch\ny = torch.ones(2) * scale\n")
    assert free == {"torch", "scale"} - {"torch"} and bound == {"torch", "y"}


@pytest.fixture()
def tmp_path(tmp_path_factory) -> Path:
    """A folder inside the repository (pages are placed relative to it), under the ignored _build/."""
    folder = ROOT / "_build" / "reader-test" / tmp_path_factory.mktemp("page").name
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()


def write_page(tmp_path: Path, markdown: str, code: str = "print(1)") -> Path:
    page = tmp_path / "page.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        f"# A page\n\n{markdown}\n\n```{{code-cell}} ipython3\n{code}\n```\n",
        encoding="utf-8",
    )
    return page


def convert(
    tmp_path, book, markdown: str, glue: dict | None = None, links: str = "notebook"
):
    page = write_page(tmp_path, markdown)
    cell = nbformat.v4.new_code_cell("print(1)", execution_count=1)
    for key, value in (glue or {}).items():
        cell.outputs.append(
            nbformat.v4.new_output(
                "display_data",
                data={"application/papermill.record/text/plain": repr(value)},
                metadata={
                    "scrapbook": {
                        "name": key,
                        "mime_prefix": "application/papermill.record/",
                    }
                },
            )
        )
    reference = nbformat.v4.new_notebook(cells=[cell])
    return rn.make_reader_notebook(page, links, book, rn.repository_settings({}), reference)


def test_glue_formats_as_myst_nb_does(tmp_path, book):
    notebook = convert(
        tmp_path,
        book,
        "Gap {glue:text}`g:.2f`, count {glue:text}`n:,`, word {glue:text}`w`.",
        {"g": 0.456, "n": 2048, "w": "larger"},
    )
    assert "Gap 0.46, count 2,048, word larger." in notebook.cells[1].source


def test_an_unknown_glue_key_role_or_directive_is_an_error(tmp_path, book):
    with pytest.raises(rn.ReaderError, match="no glued value 'missing'"):
        convert(tmp_path, book, "{glue:text}`missing`")
    with pytest.raises(rn.ReaderError, match="role {numref}"):
        convert(tmp_path, book, "{numref}`fig-masks`")
    with pytest.raises(rn.ReaderError, match="directive {tab-set}"):
        convert(tmp_path, book, ":::{tab-set}\nx\n:::")
    with pytest.raises(rn.ReaderError, match="no such label"):
        convert(tmp_path, book, "{ref}`no-such-label`")


def test_dropdowns_admonitions_and_listings(tmp_path, book):
    markdown = (
        "```{admonition} Predict\n:class: tip\nOne.\n```\n\n:::{dropdown} Hint 1\nTwo `{x}`.\n\n"
        "```{literalinclude} ../../../code/transformer_lab/metrics.py\n:pyobject: accuracy\n```\n:::\n\n"
        "See {ref}`the masks <fig-masks>`."
    )
    download = convert(tmp_path, book, markdown, links="html").cells[1].source
    assert "> **Predict**\n>\n> One." in download
    assert "<details>\n<summary>Hint 1</summary>\n\nTwo `{x}`." in download
    assert "```python\ndef accuracy(" in download and download.count("</details>") == 1
    html = rn.repository_settings({})["html"]
    assert f"[the masks]({html}/chapters/01-soft-join.html#fig-masks)" in download
    binder = convert(tmp_path, book, markdown).cells[1].source
    assert ":::{dropdown} Hint 1\nTwo `{x}`." in binder and binder.count("\n:::\n") == 1
    assert re.search(
        r"\[the masks\]\((\.\./)+chapters/01-soft-join\.ipynb#cell-id=fig-masks\)", binder
    )


def test_a_page_whose_code_changed_is_stale(tmp_path, book):
    page = write_page(tmp_path, "Text.", code="print(2)")
    reference = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    with pytest.raises(rn.StaleReference, match="no longer matches"):
        rn.make_reader_notebook(
            page, "notebook", book, rn.repository_settings({}), reference
        )


STUDENT = "https://github.com/cloudwave-academy/week20-transformers-student"


def test_the_repository_follows_the_github_run_and_else_the_config():
    """The repository button names this repository; what readers open names the student one."""
    local = rn.repository_settings({})
    assert local["url"] == "https://github.com/cloudwave-academy/week20-transformers"
    assert local["branch"] == "main"
    assert (local["student_url"], local["launch_branch"]) == (STUDENT, "main")
    assert (
        local["html"] == "https://cloudwave-academy.github.io/week20-transformers-student"
    )
    fork = rn.repository_settings(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": "Student/w20",
            "GITHUB_REF_NAME": "fix",
        }
    )
    assert (fork["url"], fork["branch"], fork["student_url"], fork["html"]) == (
        "https://github.com/Student/w20",
        "fix",
        "https://github.com/Student/w20-student",
        "https://student.github.io/w20-student",
    )
    # Not in a GitHub run: a stray variable changes nothing.
    assert rn.repository_settings({"GITHUB_REPOSITORY": "x/y"}) == local


def test_a_pull_request_names_a_branch_of_the_base_repository():
    """In a pull request's run GITHUB_REPOSITORY is the base; a fork's branch is not there."""
    pull = rn.repository_settings(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": "cloudwave-academy/week20-transformers",
            "GITHUB_HEAD_REF": "patch-1",  # the fork's branch
            "GITHUB_BASE_REF": "main",
            "GITHUB_REF_NAME": "17/merge",
        }
    )
    assert (pull["url"], pull["branch"], pull["student_url"], pull["launch_branch"]) == (
        "https://github.com/cloudwave-academy/week20-transformers",
        "main",
        STUDENT,
        "main",
    )


@pytest.fixture()
def student_edition_config(tmp_path, monkeypatch):
    """``repository_settings`` reading the student edition's ``_config.yml`` (tools/editions.py)."""
    import editions

    (tmp_path / "_config.yml").write_text(
        editions.student_config(
            (ROOT / "_config.yml").read_text(encoding="utf-8"), rn.repository_settings({})
        ),
        encoding="utf-8",
    )
    monkeypatch.setattr(rn, "ROOT", tmp_path)


def test_the_student_edition_names_only_its_own_repository(student_edition_config):
    local = rn.repository_settings({})
    assert local["url"] == local["student_url"] == STUDENT
    assert "week20-transformers-student" in local["html"]


def test_a_binder_session_links_to_the_repository_it_was_launched_from(
    student_edition_config,
):
    """BinderHub's variables in a launched session of the student edition (binder/start
    rewrites the notebooks): a fork of the student repository links to the fork."""
    fork = rn.repository_settings(
        {
            "BINDER_REPO_URL": "https://github.com/Student/w20",
            "BINDER_REF_URL": "https://github.com/Student/w20/tree/0123abc",
        }
    )
    assert (fork["student_url"], fork["branch"], fork["launch_branch"], fork["html"]) == (
        "https://github.com/Student/w20",
        "0123abc",
        "0123abc",
        "https://student.github.io/w20",
    )
    assert "Student/w20/0123abc/requirements.txt" in rn.install_command(fork)
    # A ref URL of another repository is not trusted for the ref.
    odd = rn.repository_settings(
        {
            "BINDER_REPO_URL": "https://github.com/Student/w20.git",
            "BINDER_REF_URL": "https://github.com/x/y/tree/main",
        }
    )
    assert (odd["student_url"], odd["launch_branch"]) == (
        "https://github.com/Student/w20",
        "main",
    )


def test_the_install_command_is_one_pip_install_with_cpu_torch_and_jupyterlab():
    settings = rn.repository_settings({})
    words = shlex.split(rn.install_command(settings))
    assert words[:4] == ["python", "-m", "pip", "install"]
    assert words[words.index("--extra-index-url") + 1] == rn.TORCH_CPU_INDEX
    lock = words[words.index("-c") + 1]
    assert lock == (
        "https://raw.githubusercontent.com/cloudwave-academy/week20-transformers-student/"
        "main/requirements.txt"
    )
    assert words[-1] == (f"transformer-lab[notebook] @ {STUDENT}/archive/main.zip")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["name"] == "transformer-lab"
    assert "jupyterlab" in pyproject["project"]["optional-dependencies"]["notebook"]
    assert "anywidget" in pyproject["project"]["dependencies"]


def test_the_intro_needs_nothing_it_cannot_find(notebooks):
    """Its reading times are glued when the book is built; its notebook has no code to run (the
    book-keeping cell's guard for the book's _toc.yml is a check, left out like an assert)."""
    for links in ("notebook", "html"):
        intro = notebooks[links]["intro.md"]
        assert not [cell for cell in intro.cells if cell.cell_type == "code"]
        assert "_toc.yml" not in "".join(cell.source for cell in intro.cells)


@pytest.mark.parametrize("links", ["notebook", "html"])
def test_every_notebook_gives_the_install_command(links, notebooks):
    command = rn.install_command(rn.repository_settings({}))
    for notebook in notebooks[links].values():
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        if not code:  # book-keeping only (the intro, the Week 20 page): it needs nothing
            assert "no code to run" in notebook.cells[0].source
            assert "pip install" not in notebook.cells[0].source
            continue
        assert f"```\n{command}\n```" in notebook.cells[0].source
        # The first code cell installs the package if missing and makes the data.
        assert code[0].metadata["reader"] == rn.SETUP
        assert code[0].source.startswith("# Set-up, run first")


def test_an_explorer_is_kept_as_its_text_line_until_the_notebook_runs(notebooks):
    """Its widget's model lived in the reference's kernel; its HTML alone is dead controls."""
    seen = 0
    for notebook in notebooks["notebook"].values():
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                text = "".join(output.get("data", {}).get("text/plain", ""))
                if text.startswith("Explorer: "):
                    seen += 1
                    assert set(output["data"]) == {"text/plain"}
                    assert "once this cell has run in Jupyter" in text
    assert seen == 5  # chapters 1 (3), 3 and 5


def test_text_bounds_cut_a_listing_as_sphinx_does():
    context = rn.Context(Path("chapters/x.md"), None, {}, "notebook", {})
    lines = ["a", "# start here", "b", "def stop():", "c"]
    cut = rn.text_bounds(lines, {"start-at": "start here", "end-before": "stop()"}, context)
    assert cut == ["# start here", "b"]
    cut = rn.text_bounds(lines, {"start-after": "start here", "end-at": "stop()"}, context)
    assert cut == ["b", "def stop():"]
    with pytest.raises(rn.ReaderError, match="start-at: text not found"):
        rn.text_bounds(lines, {"start-at": "nowhere"}, context)


def test_a_loop_of_asserts_is_bookkeeping():
    source = "total = 1\nfor x in [1, 2]:\n    assert x > 0\nprint(total)"
    assert "assert" not in rn.needed_part(source, {"total"})
    assert "total = 1" in rn.needed_part(source, {"total"})


def test_the_set_up_cell_makes_the_data_where_the_package_finds_it():
    """A downloaded notebook of chapter 4 or 6 stopped at its first data load ("no data/
    folder"): the package installed outside the clone finds none. The set-up cell makes it next
    to the notebook, where the package looks first, and leaves no name behind."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="reader-download-") as outside:
        set_up_makes_the_data(Path(outside))


def set_up_makes_the_data(tmp_path: Path) -> None:
    """The test above, in ``tmp_path``: a folder outside the clone."""
    import os
    import shutil
    import subprocess

    site = tmp_path / "site-packages"  # the package as pip installs it: no data/ above it
    shutil.copytree(
        ROOT / "code" / "transformer_lab",
        site / "transformer_lab",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    folder = tmp_path / "downloads"
    folder.mkdir()
    check = (
        "\nimport transformer_lab\nfrom transformer_lab.datasets import find_data_dir\n"
        "print(transformer_lab.__file__)\nprint(find_data_dir())\n"
        "print([name for name in dir() if 'set_up' in name])\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(site)}
    environment.pop("CLOUDWAVE_DATA_DIR", None)

    settings = rn.repository_settings({})
    starter = "exercises/homework/starter.py"
    # The repository's files served from the clone instead of GitHub (no network here).
    setup = rn.setup_source(settings, [starter]).replace(
        rn.raw_files_url(settings), ROOT.as_uri()
    )

    def run():
        return subprocess.run(
            [sys.executable, "-c", setup + check],
            cwd=folder,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )

    first = run()
    assert first.returncode == 0, first.stderr[-2000:]
    lines = first.stdout.strip().splitlines()
    assert lines[0] == f"made the book's CloudWave data in {folder / 'data'}"
    assert lines[2] == str(site / "transformer_lab" / "__init__.py")  # not the clone's
    assert lines[3] == str(folder / "data") and lines[4] == "[]"
    assert (folder / "data" / "feedback.json").is_file()
    # The homework's starter, which the package finds from the notebook's folder upwards.
    assert first.stdout.count(f"downloaded {starter} from the repository") == 1
    assert (folder / starter).read_bytes() == (ROOT / starter).read_bytes()
    again = run()  # the data and the starter are there now: nothing to make or download
    assert again.returncode == 0 and "made" not in again.stdout, again.stdout
    assert "downloaded" not in again.stdout
