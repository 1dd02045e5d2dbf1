"""The Binder rehearsal's own logic (tools/binder_check.py), without a browser or its venv.

`make binder-check` itself needs minutes (a separate venv, JupyterLab, chromium), so it is not
part of `make test`; these tests pin down the parts that decide its verdict: the comparison of
JupyterLab's outputs with the reference notebooks (nbval's rules), what it counts in a page's
MyST source, and which path it opens.
"""

from __future__ import annotations

import copy
import sys

import nbformat
import pytest

from book_pages import ROOT, reference_path

sys.path.insert(0, str(ROOT / "tools"))

import binder_check  # noqa: E402 (needs the path above)

PAGE = ROOT / "chapters" / "01-soft-join.md"


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
    return as_lab_cells(nbformat.read(reference_path(PAGE), as_version=4))


def first_stdout(cells: list[dict]) -> tuple[int, dict]:
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
    assert result.compared == result.equal == len(reference_cells)


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
    outputs = reference_cells[number]["outputs"]
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
    reference_cells[0]["source"] = reference_cells[0]["source"] + "\nprint('new')"
    result = binder_check.compare_with_reference(PAGE, reference_cells)
    assert not result.ok and "make refresh" in result.stale


def test_page_markup_counts_what_myst_must_draw(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n"
        "# Title\n\nInline $x^2$ and {glue:text}`ch_gap:.2f` and {glue}`ch_plain`.\n\n$$\nA = QK^\\top\n$$\n\n"
        "```{admonition} Predict\n:class: tip\nText.\n```\n\n"
        ":::{dropdown} Hint\nA hint.\n:::\n\n"
        "```{literalinclude} ../code/x.py\n:pyobject: f\n```\n\n"
        "```{code-cell} ipython3\nprint(1)\n```\n",
        encoding="utf-8",
    )
    markup = binder_check.page_markup(page)
    assert markup["code_cells"] == 1
    assert (
        markup["admonitions"],
        markup["dropdowns"],
        markup["math"],
        markup["literalincludes"],
    ) == (1, 1, 2, 1)
    assert markup["glue_keys"] == ["ch_gap", "ch_plain"]


def test_launch_path_is_read_from_the_built_link(tmp_path, monkeypatch):
    monkeypatch.setattr(binder_check, "BUILD", tmp_path)
    assert binder_check.launch_urlpath(PAGE) == (
        "lab/tree/chapters/01-soft-join.md",
        "_config.yml",
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
