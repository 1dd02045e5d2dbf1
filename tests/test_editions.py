"""The student edition holds no answer (tools/editions.py, ``make student``).

Every answer is fingerprinted: the normalised syntax tree of each function body in the
instructor's references and known mistakes, and in the solutions kept as source text
(docstrings stripped, argument and local names replaced by their order of appearance, so a
renamed copy still matches). No fingerprint may occur in a ``.py`` file, a string of Python
source inside one, a code cell of a MyST page or a notebook of the edition, nor in a code
block of the built HTML. The hidden checks' inputs, drawn afresh, occur nowhere either. The
same scan of the tree as it was at 6d18159 finds the answers, so the test can fail.

Cost: assembling the edition's sources is a copy (well under a second); ``make student`` also
builds its HTML, as long as ``make book`` takes, and is not part of ``make test``.
"""

from __future__ import annotations

import ast
import html
import io
import json
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from transformer_lab_instructor import live, references, solutions, week20

import editions
from transformer_lab.selfcheck import answers, embedding, masks, multihead, positions

ROOT = Path(__file__).resolve().parents[1]
OLD_TREE = "6d18159"  # the last commit whose package and tools held the answers
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
PYTHON_BLOCK = re.compile(r"^```(?:python|py)\n(.*?)^```", re.S | re.M)
HTML_PRE = re.compile(r"<pre[^>]*>(.*?)</pre>", re.S)
TAG = re.compile(r"<[^>]+>")


class _Locals(ast.NodeTransformer):
    """Arguments and names bound in a body become ``v0, v1, ...`` in order of appearance."""

    def __init__(self, bound: set[str]):
        self.bound, self.names = bound, {}

    def _name(self, name: str) -> str:
        if name not in self.bound:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self._name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg, node.annotation = self._name(node.arg), None
        return node


def _bound(function: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def fingerprint(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The normalised body of ``function``: no docstring, locals renamed."""
    body = list(function.body)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    renamer = _Locals(_bound(function))
    renamer.visit(function.args)
    tree = ast.Module(body=[renamer.visit(node) for node in body], type_ignores=[])
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def functions(source: str) -> list[tuple[str, str]]:
    """``(name, fingerprint)`` of every function in ``source``, including functions inside
    string constants that are Python source themselves; ``[]`` if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            found.append((node.name, fingerprint(node)))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "def " in node.value
        ):
            found += functions(node.value)
    return found


def code_of(path: Path) -> list[str]:
    """The Python a reader of ``path`` sees: the file, its code cells or its code blocks."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py" or text.startswith("#!/usr/bin/env python"):
        return [text]
    if path.suffix == ".md":
        return CODE_CELL.findall(text) + PYTHON_BLOCK.findall(text)
    if path.suffix == ".ipynb":
        cells = json.loads(text).get("cells", [])
        return [
            "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells
            if c.get("cell_type") == "code"
        ]
    if path.suffix == ".html":
        return [html.unescape(TAG.sub("", block)) for block in HTML_PRE.findall(text)]
    return []


def _without_magics(code: str) -> str:
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()
    )


def answer_fingerprints() -> dict[str, str]:
    """fingerprint -> the answer it belongs to: references, known mistakes, solutions."""
    prints: dict[str, str] = {}
    for module in (references, live, week20):
        source = Path(module.__file__).read_text(encoding="utf-8")
        for name, body in functions(source):
            prints.setdefault(body, f"{module.__name__}.{name}")
    for label in ("SOLUTION", "STRETCH", "WEEK20"):
        for name, body in functions(getattr(solutions, label)):
            prints.setdefault(body, f"solutions.{label}:{name}")
    return prints


def matches(root: Path, names: list[str] | None = None) -> list[tuple[str, str, str]]:
    """``(file, function, answer)`` for every answer body found under ``root``."""
    prints = answer_fingerprints()
    if names is None:
        names = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    found = []
    for name in names:
        for code in code_of(root / name):
            for function, body in functions(_without_magics(code)):
                if body in prints:
                    found.append((name, function, prints[body]))
    return found


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("edition") / "student"
    editions.assemble_student(dest)
    return dest


def test_the_fingerprints_cover_every_answer():
    prints = set(answer_fingerprints().values())
    for name in ("causal_padding_mask", "multi_head_attention"):
        assert f"transformer_lab_instructor.references.{name}" in prints
    assert "transformer_lab_instructor.live.computed" in prints
    # Week 20's answers in other forms: the forwards with their switches (the repaired forward
    # of Task 4 among them), the sinusoid table, the toy table, the cut-and-padded ids
    for name in ("praise_forward", "sines_table", "toy_table", "encoded"):
        assert f"transformer_lab_instructor.week20.{name}" in prints
    assert {p.split(":")[0] for p in prints} >= {
        "solutions.SOLUTION",
        "solutions.STRETCH",
        "solutions.WEEK20",
    }


def test_a_renamed_copy_of_an_answer_still_matches():
    source = (
        "def mask(pad):\n    '''another docstring'''\n    n = pad.shape[1]\n"
        "    future = torch.ones(n, n, dtype=torch.bool, device=pad.device).triu(\n"
        "        diagonal=1\n    )\n    return future[None, :, :] | pad[:, None, :]\n"
    )
    [(_, body)] = functions(source)
    assert answer_fingerprints()[body].endswith("references.causal_padding_mask")


def test_the_student_edition_holds_no_answer(edition):
    assert not (edition / "instructor").exists()
    assert (edition / "code" / "transformer_lab" / "selfcheck" / "answers.py").is_file()
    assert matches(edition) == []


def test_the_main_builds_code_blocks_hold_no_answer():
    built = ROOT / "_build" / "html"
    if not built.is_dir():
        pytest.skip("no _build/html: run make book")
    pages = [p.relative_to(built).as_posix() for p in built.rglob("*.html")]
    assert matches(built, pages) == []


def test_the_tree_of_6d18159_holds_answers(tmp_path):
    """The same scan fails on the tree before the answers moved (skipped without history)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", OLD_TREE], cwd=ROOT, capture_output=True
    )
    if archive.returncode != 0:
        pytest.skip(f"commit {OLD_TREE} is not in this clone's history")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tmp_path, filter="data")
    found = matches(tmp_path)
    where = {name for name, _, _ in found}
    assert "code/transformer_lab/selfcheck/_reference.py" in where
    assert "tools/classroom.py" in where and "tests/selfcheck/solutions.py" in where
    print(f"\n{len(found)} answer bodies in the tree of {OLD_TREE}")


def _hidden_inputs() -> list:
    with answers.using(answers.HIDDEN):
        return [
            *masks.probe_paddings(),
            *(t for probe in multihead.main_probes() for t in probe[:2]),
            multihead.gradient_probe()[0],
            *(probe[0] for probe in positions.toy_probes()),
            positions.model_probe(answers.fresh_seed(3)).embed.weight.detach(),
        ], embedding.probes()


def test_no_hidden_input_is_stored_or_shipped(edition):
    tensors, sizes = _hidden_inputs()
    stored = json.loads(answers.DATA.read_text(encoding="utf-8"))["checks"]
    keys = {key for check in stored.values() for key in check}
    text = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in edition.rglob("*")
        if p.is_file() and p.suffix in {".py", ".json", ".md", ".ipynb", ".yml", ".txt"}
    )
    for tensor in tensors:
        assert answers.input_key((tensor,)) not in keys
        if tensor.dtype != torch_bool():
            assert answers.encode(tensor)["bytes"] not in text
    for size, width in sizes:
        assert f"({size}, {width})" not in text


def torch_bool():
    import torch

    return torch.bool


def test_two_hidden_runs_draw_different_inputs():
    first, second = _hidden_inputs()[0], _hidden_inputs()[0]
    assert any(
        a.shape != b.shape or not (a == b).all()
        for a, b in zip(first, second)
        if a.dtype != torch_bool()
    )


def test_the_stored_answers_are_what_the_generator_writes_today():
    from transformer_lab_instructor import stored

    assert answers.DATA.read_text(encoding="utf-8") == stored.text(), (
        "run python -m transformer_lab_instructor.stored"
    )


def test_the_autograder_zip_has_gradescopes_layout(tmp_path):
    import zipfile

    path = tmp_path / "autograder.zip"
    names = editions.write_autograder(path)
    with zipfile.ZipFile(path) as archive:
        listed = archive.namelist()
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
    assert listed[:2] == ["setup.sh", "run_autograder"] and listed == names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    assert "instructor/transformer_lab_instructor/live.py" in listed
    assert "code/transformer_lab/selfcheck/data/stored_outputs.json" in listed
    assert not any(name.startswith(("tests/", "chapters/")) for name in listed)


def makefile_targets(makefile: Path) -> list[str]:
    """The targets a Makefile's ``.PHONY`` line names."""
    for line in makefile.read_text(encoding="utf-8").splitlines():
        if line.startswith(".PHONY:"):
            return line.split()[1:]
    return []


def test_every_target_of_the_student_makefile_works_there(edition):
    """Before: the edition kept the main Makefile, whose ``test`` (no tests/), ``bench`` (no
    tools/bench.py), ``student`` and ``autograder`` (no instructor/) cannot work there. Each
    target left is dry-run in the edition (``make -n``: every prerequisite resolves) and each
    tool its recipes run is in the edition; ``help`` and ``clean`` run for real."""
    makefile = edition / "Makefile"
    targets = makefile_targets(makefile)
    assert set(editions.MAIN_ONLY_TARGETS) & set(targets) == set()
    assert set(targets) == (
        set(makefile_targets(ROOT / "Makefile")) - set(editions.MAIN_ONLY_TARGETS)
    ) | set(editions.STUDENT_ONLY_TARGETS)
    for target in targets:
        dry = subprocess.run(
            ["make", "-n", "-C", str(edition), target], capture_output=True, text=True
        )
        assert dry.returncode == 0, (target, dry.stderr)
        for tool in re.findall(r"tools/[\w/]+\.py", dry.stdout):
            assert (edition / tool).is_file(), (target, tool)
    shown = subprocess.run(
        ["make", "-s", "-C", str(edition), "help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert {
        line.split()[1] for line in shown.splitlines() if line.startswith("make ")
    } == set(targets) - {"help", "browser", "sandbox"}
    (edition / "_build").mkdir(exist_ok=True)
    subprocess.run(["make", "-s", "-C", str(edition), "clean"], check=True)
    assert not (edition / "_build").exists()
    # What the tools those targets run read from tests/ is in the edition too.
    assert (edition / "tests" / "nbval_sanitize.cfg").is_file()
