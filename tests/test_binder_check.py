"""The Binder rehearsal's own logic (tools/binder_check.py), without a browser or its venv.

`make binder-check` itself needs minutes (a separate venv, JupyterLab, chromium), so it is not
part of `make test`; these tests pin down the parts that decide its verdict: the comparison of
JupyterLab's outputs with the reference notebooks (nbval's rules), what it counts in a page's
MyST source, and which path it opens.
"""

from __future__ import annotations

import copy
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

from book_pages import ROOT, reference_path
from book_site import html_dir

sys.path.insert(0, str(ROOT / "tools"))

import binder_check  # noqa: E402 (needs the path above)
import reader_notebooks as rn  # noqa: E402

PAGE = ROOT / "chapters" / "01-soft-join.md"
HOMEWORK = ROOT / "exercises" / "homework" / "index.md"


def as_lab_cells(notebook) -> list[dict]:
    """Code cells as JupyterLab's ``cell.toJSON()`` gives them (multi-line text as lists of lines)."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        as_json = copy.deepcopy(dict(cell))
        for output in as_json["outputs"]:
            if "text" in output:
                output["text"] = output["text"].splitlines(keepends=True)
            for mime, value in output.get("data", {}).items():
                if isinstance(value, str) and mime.startswith("text/"):
                    output["data"][mime] = value.splitlines(keepends=True)
        cells.append(as_json)
    return cells


@pytest.fixture()
def reference_cells() -> list[dict]:
    """The reader notebook's code cells holding the reference's outputs, as JupyterLab gives them
    after Run All (the notebook keeps an explorer's output as its text line until then)."""
    notebook = rn.make_reader_notebook(PAGE)
    reference = nbformat.read(reference_path(PAGE), as_version=4)
    visible = [
        cell
        for cell in reference.cells
        if cell.cell_type == "code" and "remove-cell" not in cell.metadata.get("tags", [])
    ]
    shown = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and cell.metadata.get("reader") not in rn.NOT_THE_PAGES
    ]
    for cell, ran in zip(shown, visible, strict=True):
        cell.outputs = [
            output
            for output in ran.outputs
            if "scrapbook" not in output.get("metadata", {})
        ]
    return as_lab_cells(notebook)


def first_stdout(cells: list[dict]) -> tuple[int, dict]:
    """(index among the page's cells, output) of the first stdout holding a number."""
    cells = [
        cell
        for cell in cells
        if (cell.get("metadata") or {}).get("reader") not in rn.NOT_THE_PAGES
    ]
    for number, cell in enumerate(cells):
        for output in cell["outputs"]:
            if output.get("name") == "stdout" and any(
                ch.isdigit() for ch in "".join(output["text"])
            ):
                return number, output
    raise AssertionError("the reference page prints no number at all")


def test_the_reference_itself_compares_equal(reference_cells):
    result = binder_check.compare_with_reference(PAGE, reference_cells)
    assert result.ok, result.differences or result.stale
    reference = nbformat.read(reference_path(PAGE), as_version=4)
    visible = [
        cell
        for cell in reference.cells
        if cell.cell_type == "code" and "remove-cell" not in cell.metadata.get("tags", [])
    ]
    assert result.compared == result.equal == len(visible)


def test_a_changed_digit_is_a_difference_naming_the_cell(reference_cells):
    number, output = first_stdout(reference_cells)
    text = "".join(output["text"])
    position = next(i for i, ch in enumerate(text) if ch.isdigit())
    output["text"] = (
        text[:position] + str((int(text[position]) + 1) % 10) + text[position + 1 :]
    )
    result = binder_check.compare_with_reference(PAGE, reference_cells)
    assert not result.ok
    assert len(result.differences) == 1 and result.differences[0].startswith(
        f"code cell {number + 1}:"
    )


def test_a_print_split_into_several_stream_outputs_compares_as_one(reference_cells):
    number, output = first_stdout(reference_cells)
    text = "".join(output["text"])
    outputs = next(cell["outputs"] for cell in reference_cells if output in cell["outputs"])
    index = outputs.index(output)
    outputs[index : index + 1] = [
        dict(output, text=text[: len(text) // 2]),
        dict(output, text=text[len(text) // 2 :]),
    ]
    assert binder_check.compare_with_reference(PAGE, reference_cells).ok


def one_cell_reference(tmp_path, monkeypatch, printed: str) -> None:
    """Make ``PAGE``'s reference a one-cell notebook that printed ``printed``."""
    cell = nbformat.v4.new_code_cell(
        "train()",
        execution_count=1,
        outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)],
    )
    path = tmp_path / "reference.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    monkeypatch.setattr(binder_check, "reference_path", lambda page: path)


def lab_cell(printed: str) -> list[dict]:
    return [
        {
            "cell_type": "code",
            "source": "train()",
            "metadata": {},
            "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}],
        }
    ]


def test_wall_clock_times_are_masked_as_in_make_test(tmp_path, monkeypatch):
    one_cell_reference(tmp_path, monkeypatch, "loss 0.4312, trained in 9.87 s (wall)\n")
    assert binder_check.compare_with_reference(
        PAGE, lab_cell("loss 0.4312, trained in 1.2 s (wall)\n")
    ).ok
    differs = binder_check.compare_with_reference(
        PAGE, lab_cell("loss 0.4313, trained in 9.87 s (wall)\n")
    )
    assert (
        not differs.ok
        and "0.4312" in differs.differences[0]
        and "0.4313" in differs.differences[0]
    )


def test_an_error_output_is_found_in_the_model():
    cells = lab_cell("fine\n")
    cells[0]["outputs"].append(
        {
            "output_type": "error",
            "ename": "ValueError",
            "evalue": "bad shape",
            "traceback": [],
        }
    )
    cells.append(
        {
            "cell_type": "code",
            "source": "",
            "metadata": {},
            "execution_count": 2,
            "outputs": [
                {
                    "output_type": "stream",
                    "name": "stderr",
                    "text": ["Traceback (most recent call last):\n", "KeyError: 'x'\n"],
                }
            ],
        }
    )
    assert binder_check.model_errors(cells) == [
        "code cell 1: ValueError: bad shape",
        "code cell 2: traceback on stderr: KeyError: 'x'",
    ]


def test_changed_code_makes_the_reference_stale(reference_cells):
    first = next(
        cell
        for cell in reference_cells
        if (cell.get("metadata") or {}).get("reader") not in rn.NOT_THE_PAGES
    )
    first["source"] = first["source"] + "\nprint('new')"
    result = binder_check.compare_with_reference(PAGE, reference_cells)
    assert not result.ok and "make refresh" in result.stale


def test_launch_path_is_read_from_the_built_link(tmp_path, monkeypatch):
    monkeypatch.setattr(binder_check, "BUILD", tmp_path)
    assert binder_check.launch_urlpath(PAGE) == (
        "lab/tree/notebooks/chapters/01-soft-join.ipynb",
        "reader_notebooks.binder_urlpath",
    )
    built = tmp_path / "html" / "chapters" / "01-soft-join.html"
    built.parent.mkdir(parents=True)
    built.write_text(
        '<a href="https://mybinder.org/v2/gh/o/n/main?urlpath=lab/tree/elsewhere.md">x</a>',
        encoding="utf-8",
    )
    assert binder_check.launch_urlpath(PAGE) == (
        "lab/tree/elsewhere.md",
        "built launch link",
    )


# --------------------------------------------------------------------------- what the reader sees


def drawn_from(notebook) -> dict:
    """What JupyterLab's survey reports for ``notebook``, approximated from its Markdown: the
    judge's input, so that its verdict can be tested without a browser."""
    markdown, code = [], []
    for index, cell in enumerate(notebook.cells, start=1):
        reader = cell.metadata.get("reader", "")
        if cell.cell_type == "markdown":
            fenced = re.findall(r"^```[a-z]*\n(.*?)^```", cell.source, flags=re.M | re.S)
            # jupyterlab-myst consumes targets and draws its dropdowns as <details>
            source = re.sub(
                r"^\([^()\s]+\)=$|^:{3,}(\{dropdown\})?", " ", cell.source, flags=re.M
            )
            source = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", " ", source, flags=re.S)
            prose = re.sub(
                r"`[^`]*`", " ", re.sub(r"^```.*?^```", " ", source, flags=re.M | re.S)
            )
            text = re.sub(
                r"^#+ (.*)$", "\n\u00a7\u00a7\\1\u00a7\u00a7\n", cell.source, flags=re.M
            )
            markdown.append(
                {
                    "index": index,
                    "reader": reader,
                    "text": re.sub(
                        r"<[^>]+>|\$\$.*?\$\$|\$[^$\n]+\$", " ", text, flags=re.S
                    ),
                    "prose": prose,
                    "pre": fenced,
                    "links": [
                        {"raw": href, "href": href, "text": label}
                        for label, href in re.findall(
                            r"\[([^\]]*)\]\(([^)\s]*)\)", cell.source
                        )
                    ],
                    "details": cell.source.count("<details>")
                    + cell.source.count("{dropdown}"),
                    "open_details": cell.source.count("<details open"),
                }
            )
        else:
            code.append(
                {
                    "index": index,
                    "reader": reader,
                    "input_hidden": cell.metadata.get("jupyter", {}).get(
                        "source_hidden", False
                    ),
                    "source": cell.source,
                }
            )
    everything = "\n".join(c.source for c in notebook.cells)
    ids = re.findall(r'<a id="([^"]+)">', everything) + re.findall(
        r"^\(([^()\s]+)\)=$", everything, flags=re.M
    )
    return {"markdown": markdown, "code": code, "unrendered": 0, "errors": [], "ids": ids}


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """The reader notebooks as binder/postBuild writes them, in a stand-in for Binder's home."""
    folder = tmp_path_factory.mktemp("home") / "notebooks"
    rn.write(rn.reader_pages(), folder, "notebook")
    return folder


def judge(page: Path, home: Path, plant=None) -> list[str]:
    path = home / page.resolve().relative_to(ROOT).with_suffix(".ipynb")
    notebook = nbformat.read(path, as_version=4)
    drawn = drawn_from(notebook)
    if plant:
        plant(drawn)
    expected = binder_check.expected_view(page, notebook)
    return binder_check.judge_view(page, path, drawn, expected, html_dir())


@pytest.mark.parametrize("page", [PAGE, HOMEWORK], ids=["ch1", "homework"])
def test_the_reader_notebooks_pass_the_judge(page, home):
    assert judge(page, home) == []


def test_a_planted_glue_key_fails(home):
    def plant(drawn):
        cell = next(c for c in drawn["markdown"] if "merge" in c["prose"])
        cell["prose"] += " ch1_coldest_gap "

    assert judge(PAGE, home, plant) == [
        "glue keys in the rendered prose: ['ch1_coldest_gap']"
    ]


def test_a_planted_hidden_cell_in_view_fails(home):
    hidden = next(
        cell.source
        for cell in rn.read_page(HOMEWORK).cells
        if "remove-cell" in cell.metadata.get("tags", [])
    )

    def plant(drawn):
        drawn["code"].insert(
            1, {"index": 3, "reader": "", "input_hidden": False, "source": hidden}
        )

    problems = judge(HOMEWORK, home, plant)
    assert len(problems) == 1 and problems[0].startswith(
        "book-keeping cell in view: cell 3"
    )


def test_a_collapsed_bookkeeping_cell_opened_fails(home):
    def plant(drawn):
        for cell in drawn["code"]:
            if cell["reader"] == rn.BOOKKEEPING:
                cell["input_hidden"] = False

    by_hand = ROOT / "exercises" / "by-hand" / "index.md"
    notebook = nbformat.read(home / "exercises" / "by-hand" / "index.ipynb", as_version=4)
    assert any(cell.metadata.get("reader") == rn.BOOKKEEPING for cell in notebook.cells)
    assert judge(by_hand, home) == []
    assert any(
        p.startswith("book-keeping cell in view") for p in judge(by_hand, home, plant)
    )


def test_a_missing_listing_caption_dropdown_and_a_dead_link_fail(home):
    def plant(drawn):
        for cell in drawn["markdown"]:
            cell["pre"] = []
            cell["text"] = cell["text"].replace("Fig. 2", "Fig.")
            cell["details"] = 0
        drawn["markdown"][3]["links"].append({"raw": "#", "href": "", "text": "chapter 2"})
        drawn["markdown"][3]["links"].append(
            {"raw": "#nowhere", "href": "", "text": "there"}
        )
        drawn["markdown"][3]["prose"] += " {ref}`sec-x` "

    problems = judge(PAGE, home, plant)
    assert "listing missing: ../code/transformer_lab/attention.py attention" in problems
    assert any(p.startswith("caption missing: 'Fig. 2 ") for p in problems)
    assert any(p.startswith("0 dropdowns drawn, the page has ") for p in problems)
    assert any(p.endswith("link 'chapter 2': goes to '#'") for p in problems)
    assert any(p.endswith("no anchor #nowhere on this notebook") for p in problems)
    assert "raw MyST in the rendered prose: ['{ref}']" in problems


def test_sections_of_the_html_and_their_differences(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(
        '<html><body><nav>Menu</nav><article class="bd-article"><section><h1>Title'
        '<a class="headerlink" href="#t">#</a></h1><p>It scores <span class="math">\\(x\\)</span>'
        " 0.983.</p>"
        '<div class="cell docutils"><div class="cell_input"><pre>print(1)</pre></div>'
        '<div class="cell_output"><img src="a.png"/><figure><figcaption><span>Fig. 1 </span>'
        "A caption.</figcaption></figure></div></div><h2>Next</h2><p>More.</p></section>"
        "</article><footer>Foot</footer></body></html>",
        encoding="utf-8",
    )
    built = binder_check.html_sections(page)
    assert built == [("Title", "It scores 0 983 Fig 1 A caption"), ("Next", "More")]
    shown = binder_check.sections(
        "\n\u00a7\u00a7Title\u00a7\u00a7\nIt scores 0.652. Fig. 1 A caption\n\u00a7\u00a7Next\u00a7\u00a7\nMore."
    )
    differences = binder_check.compare_sections(shown, built)
    assert differences == ["section 'Title': HTML '983' / notebook '652'"]


def test_wall_clock_times_in_prose_are_masked():
    built = [
        (
            "Run",
            " ".join(binder_check.words("trees train in 0.71 seconds of wall-clock time")),
        )
    ]
    shown = [
        (
            "Run",
            " ".join(binder_check.words("trees train in 0.10 seconds of wall-clock time")),
        )
    ]
    assert binder_check.compare_sections(shown, built) == []
    other = [("Run", " ".join(binder_check.words("trees train in 0.10 of the time")))]
    assert binder_check.compare_sections(other, built) != []


def test_a_build_older_than_a_page_is_rebuilt(tmp_path, monkeypatch):
    html = tmp_path / "html"
    assert binder_check.book_build_problem(html) == f"no {html}"
    html.mkdir()
    (html / "index.html").write_text("<html></html>", encoding="utf-8")
    page = ROOT / "chapters" / "01-soft-join.md"
    old = page.stat().st_mtime - 60
    os.utime(html / "index.html", (old, old))
    assert "changed after the last build" in binder_check.book_build_problem(html)
    newest = max(
        file.stat().st_mtime
        for name in binder_check.BOOK_SOURCES
        for file in ((ROOT / name).rglob("*") if (ROOT / name).is_dir() else [ROOT / name])
        if file.is_file()
        and not any(
            p in binder_check.UNBUILT or p.endswith(".egg-info") for p in file.parts
        )
    )
    os.utime(html / "index.html", (newest + 1, newest + 1))
    assert binder_check.book_build_problem(html) == ""
    cache = ROOT / "code" / "transformer_lab" / "__pycache__"
    created = not cache.exists()
    cache.mkdir(exist_ok=True)
    written = cache / "binder-check-test.pyc"
    written.write_bytes(b"")
    try:  # what Python writes beside the sources is not a change to the book
        os.utime(written, (newest + 2, newest + 2))
        assert binder_check.book_build_problem(html) == ""
    finally:
        written.unlink()
        if created:
            cache.rmdir()


def test_the_downloads_run_in_a_venv_outside_the_clone():
    """Inside the clone (where the standalone venv was, under _build/binder/), the installed
    package finds the clone's data/ by walking up, so a download that fails on a reader's
    machine ("no data/ folder") passed the rehearsal."""
    assert binder_check.outside_the_clone(binder_check.STANDALONE) is None
    inside = binder_check.outside_the_clone(ROOT / "_build" / "binder" / "standalone-venv")
    assert inside is not None and "inside the clone" in inside
