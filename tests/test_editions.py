"""The student edition holds no answer (tools/editions.py, ``make student``).

Every answer is fingerprinted: the normalised syntax tree of each function body in the
instructor's references and known mistakes, and in the solutions kept as source text
(docstrings stripped, argument and local names replaced by their order of appearance, so a
renamed copy still matches). No fingerprint may occur in a ``.py`` file, a string of Python
source inside one, a code cell of a MyST page or a notebook of the edition, nor in a code
block of the built HTML. The hidden checks' inputs, drawn afresh, occur nowhere either. The
same scan of the tree as it was at 6d18159 finds the answers, so the test can fail.

Answers in other forms, for the stretch exercises and Week 20: the stored outputs
decoded at each task's own inputs (the page's own instance, e.g. login / failed / again with
seed 5), the strings of each check's module holding every line of its answer that the student
must find (or, for Task 4, a fix of a planted bug), package functions holding every such line
of an answer, and package functions that pass a stretch or Week-20 check as they are. The same
scans of 1bb8d3d's edition find Task 2's table, Exercise 11's answer, Task 4's fixes and
Exercise 12's answer (``set_classifier.multi_head_self_attention``).

Cost: assembling the edition's sources is a copy (well under a second); ``make student`` also
builds its HTML, as long as ``make book`` takes, and is not part of ``make test``.
"""

from __future__ import annotations

import ast
import html
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from transformer_lab_instructor import live, references, solutions, week20

import editions

# An older tree's package (before checks/) is what findings_in_other_forms's scan loads.
try:
    from transformer_lab.selfcheck.checks import (
        answers,
        embedding,
        masks,
        multihead,
        positions,
    )
except ModuleNotFoundError:
    from transformer_lab.selfcheck import answers, embedding, masks, multihead, positions

ROOT = Path(__file__).resolve().parents[1]


def _registry():
    """The self-check's registry, in this tree's package or an older tree's (before checks/)."""
    try:
        from transformer_lab.selfcheck.checks import registry
    except ModuleNotFoundError:
        from transformer_lab.selfcheck import registry
    return registry


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
    assert (
        edition / "code" / "transformer_lab" / "selfcheck" / "checks" / "answers.py"
    ).is_file()
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
    } == set(targets) - {"help", "sandbox"}
    (edition / "_build").mkdir(exist_ok=True)
    subprocess.run(["make", "-s", "-C", str(edition), "clean"], check=True)
    assert not (edition / "_build").exists()
    # What the tools those targets run read from tests/ is in the edition too.
    assert (edition / "tests" / "nbval_sanitize.cfg").is_file()


# ------------------------------------------------------------------ answers in other forms
#
# The scans above find an answer's *code*. These find it in the other forms the issue names:
# the stored outputs decoded at a task's own inputs, advice strings that hold a complete answer
# or a planted bug's fix, and a function of the package that is itself an answer (it passes the
# check of a stretch or Week-20 task, or its body is an answer's with names, aliases and input
# checks aside). Each runs on the student edition's own files.

STORED = "code/transformer_lab/selfcheck/data/stored_outputs.json"


def own_instances() -> list[tuple[str, str, tuple]]:
    """``(check, where the page gives it, args)``: the inputs each task's page and starter use
    for the table, mask or output they ask the student to produce (read from the pages)."""
    import torch
    from torch import nn

    from transformer_lab import char_transformer
    from transformer_lab.attention import toy_inputs
    from transformer_lab.set_task import make_sets

    starter = (ROOT / "exercises" / "week-20" / "starter.py").read_text(encoding="utf-8")
    toy_seed = int(re.search(r"^TOY_SEED = (\d+)", starter, re.M)[1])
    tokens = len(ast.literal_eval(re.search(r"^TOY_TOKENS = (\(.*?\))", starter, re.M)[1]))
    found = [
        # Task 2: login / failed / again, d = 4 (week20_runs.print_toy_table), the starter's
        # seed and the page's "run again with --toy-seed 1"
        *(
            (
                "toy_weights",
                f"Task 2, --toy-seed {seed}",
                tuple(toy_inputs(tokens, 4, seed)[:3]),
            )
            for seed in (toy_seed, 1)
        ),
        # Task 5: the table the model adds, sinusoidal_positions(L, D) of chapter 4's model
        (
            "sinusoidal_positions",
            "Task 5, (L, D) of chapter 4's model",
            (char_transformer.LENGTH, char_transformer.D_MODEL),
        ),
        # Exercise 11: the page's prediction (4 real tokens, 2 padded) and the starter's batch
        # (homework_runs.causal_mask_example)
        (
            "causal_padding_mask",
            "Exercise 11, the predicted 6 x 6 mask",
            (torch.tensor([[False] * 4 + [True] * 2]),),
        ),
        (
            "causal_padding_mask",
            "Exercise 11, the starter's example",
            (torch.tensor([[False] * 4 + [True] * 2, [False] * 2 + [True] * 4]),),
        ),
    ]
    # Exercise 12: the starter's comparison (homework_runs.multi_head_example), 1 and 4 heads
    with torch.random.fork_rng(devices=[]):
        x, padding, _ = make_sets(8, seed=14)
        torch.manual_seed(40)
        x = nn.Linear(2, 16)(x).detach()
        for heads in (1, 4):
            mha = nn.MultiheadAttention(16, heads, batch_first=True).eval()
            with torch.no_grad():
                mha.in_proj_bias.normal_()
                mha.out_proj.bias.normal_()
            found.append(
                ("multi_head_attention", f"Exercise 12, {heads} head(s)", (x, padding, mha))
            )
    return found


def _tensors(value) -> list:
    """The tensors of an answer: itself, or each part of a tuple (an output and its weights)."""
    if isinstance(value, (tuple, list)):
        return [t for part in value for t in _tensors(part)]
    return [value] if hasattr(value, "shape") else []


def _decoded_outputs(stored: dict) -> list[tuple[str, str, object]]:
    """Every tensor of the stored file, decoded: ``(check, answer key, tensor)``."""
    return [
        (check, key, tensor)
        for check, inputs in stored.items()
        for entry in inputs.values()
        for key, data in entry.items()
        for tensor in _tensors(answers.decode(data))
    ]


def _same_tensor(a, b) -> bool:
    import torch

    return (
        tuple(a.shape) == tuple(b.shape)
        and a.numel() > 1
        and torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6)
    )


def stored_answers_at_own_inputs(edition: Path) -> list[str]:
    """The tasks whose own inputs are a stored probe, or whose right answer at their own inputs
    is any stored output (a lookup in the file, or decoding it, gives the answer)."""
    import torch

    stored = json.loads((edition / STORED).read_text(encoding="utf-8"))["checks"]
    outputs = _decoded_outputs(stored)
    found = []
    for check, where, args in own_instances():
        if answers.input_key(args) in stored.get(check, {}):
            found.append(f"{where}: its own inputs are a stored probe of {check}")
        with torch.no_grad():
            right = _tensors(live.ANSWERS[check]["reference"](*args))
        for other, key, value in outputs:
            if any(_same_tensor(value, part) for part in right):
                found.append(f"{where}: its answer is stored as {other}/{key}")
    return found


def test_no_stored_output_is_a_tasks_own_answer(edition):
    assert stored_answers_at_own_inputs(edition) == []


# --- advice strings: code fragments that are a complete answer, or a planted bug's fix

# torch.nn.functional under its usual names
_FUNCTIONAL = {("nn", "functional"), ("torch", "nn", "functional"), ("F",)}
# Size in nodes of the normalised syntax tree (contexts and operators not counted) from which a
# line of an answer counts as one the student must find; a planted bug's fix can be short.
MIN_LINE_NODES = 5
MIN_FIX_NODES = 5
# A package function holds an answer when it holds every line to find, and there are this many.
MIN_BODY_LINES = 2


class _Shape(ast.NodeTransformer):
    """Names anonymised (unless ``names``), torch.nn.functional spelt F, trailing full slices
    dropped (``t[None, :, :]`` is ``t[None]``): what is left is the shape of the code."""

    def __init__(self, names: bool = False):
        self.names = names

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        chain, value = [], node.value
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.attr and value.value
        if isinstance(value, ast.Name) and (value.id, *reversed(chain)) in _FUNCTIONAL:
            return ast.Attribute(ast.Name("F", ast.Load()), node.attr, ast.Load())
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(node.id if self.names else "_", ast.Load())

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        index = node.slice
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        while len(items) > 1 and _full_slice(items[-1]):
            items.pop()
        node.slice = items[0] if len(items) == 1 else ast.Tuple(items, ast.Load())
        return node


def _full_slice(node: ast.AST) -> bool:
    return isinstance(node, ast.Slice) and not (node.lower or node.upper or node.step)


def shape(node: ast.AST, names: bool = False) -> tuple[str, int]:
    """``(dump, size)`` of an expression's normalised shape (``names``: names kept)."""
    import copy

    normal = _Shape(names).visit(copy.deepcopy(node))
    size = sum(
        1
        for n in ast.walk(normal)
        if not isinstance(
            n, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
        )
    )
    return ast.dump(normal, annotate_fields=False), size


def _answer_functions() -> dict[str, list[tuple[str, ast.FunctionDef]]]:
    """check -> its answers as a student writes them: the stretch exercises' and Week 20's
    solutions and the references, by the check's name."""
    found: dict[str, list] = {}
    sources = [
        (f"solutions.{label}", getattr(solutions, label)) for label in ("STRETCH", "WEEK20")
    ]
    sources.append(("references", Path(references.__file__).read_text(encoding="utf-8")))
    for label, source in sources:
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef):
                found.setdefault(node.name, []).append((f"{label}:{node.name}", node))
    return found


def public_code(edition: Path) -> set[str]:
    """Shapes of every expression the student is given: the pages' code cells and code blocks
    (the hints among them), the starters, and the models the Week-20 tasks start from (chapter
    4's and Task 4's broken one, their ``self.`` read as the tasks' ``model.``)."""
    sources = []
    for page in [*edition.glob("chapters/*.md"), *edition.glob("exercises/**/*.md")]:
        sources += code_of(page)
    given = [
        "exercises/week-20/starter.py",
        "exercises/homework/starter.py",
        "code/transformer_lab/char_transformer.py",
        "code/transformer_lab/broken_transformer.py",
    ]
    for name in given:
        sources.append(
            (edition / name).read_text(encoding="utf-8").replace("self.", "model.")
        )
    shapes = set()
    for source in sources:
        try:
            tree = ast.parse(_without_magics(source))
        except SyntaxError:
            continue
        shapes.update(
            shape(node)[0] for node in ast.walk(tree) if isinstance(node, ast.expr)
        )
    return shapes


def key_lines(function: ast.FunctionDef, public: set[str]) -> set[str]:
    """The lines of an answer the student must find: the values of its statements (each part
    of a tuple on its own), big enough, that no page, hint or starter prints."""
    values = []
    for node in ast.walk(function):
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.Return, ast.AugAssign, ast.Expr)) and value:
            values += value.elts if isinstance(value, ast.Tuple) else [value]
    lines = {dump for dump, size in map(shape, values) if size >= MIN_LINE_NODES}
    return lines - public


def _check_modules() -> dict[str, Path]:
    """check -> the file of the self-check module that checks it (and holds its advice)."""
    import importlib

    registry = _registry()
    return {
        check.name: Path(importlib.import_module(check.run.__module__).__file__)
        for check in registry.EVERY_CHECK
    }


def bug_fixes(edition: Path) -> dict[str, str]:
    """shape (names kept) -> the fix it is, for Task 4: the expressions of the repaired forward
    that the broken forward does not have, and each comparison of the broken forward turned."""
    source = (edition / "code/transformer_lab/broken_transformer.py").read_text(
        encoding="utf-8"
    )
    # the broken model's methods call self.embed ...; the repaired forward, model.embed ...
    broken_tree = ast.parse(source.replace("self.", "model."))
    broken = {
        shape(n, names=True)[0] for n in ast.walk(broken_tree) if isinstance(n, ast.expr)
    }
    fixes = {}
    for _, repaired in _answer_functions()["repaired_forward"]:
        for node in ast.walk(repaired):
            if isinstance(node, ast.expr):
                dump, size = shape(node, names=True)
                if size >= MIN_FIX_NODES and dump not in broken:
                    fixes.setdefault(dump, f"Task 4's fix {ast.unparse(node)}")
    opposite = {ast.NotEq: ast.Eq, ast.Eq: ast.NotEq, ast.Lt: ast.GtE, ast.GtE: ast.Lt}
    for node in ast.walk(broken_tree):
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and type(node.ops[0]) in opposite
        ):
            turned = ast.Compare(
                node.left, [opposite[type(node.ops[0])]()], node.comparators
            )
            fixes.setdefault(
                shape(turned, names=True)[0], f"Task 4's fix {ast.unparse(turned)}"
            )
    return fixes


def code_fragments(text: str) -> list[ast.expr]:
    """The code inside a sentence: at each word, the longest piece that parses as Python and
    holds a call, an index, an attribute or an operator (``"combine both with |: a[None] |
    b[:, None]"`` gives ``a[None] | b[:, None]``); of a statement, its value."""
    starts = [m.start() for m in re.finditer(r"(?:(?<=\s)|^)\S", text)]
    ends = [m.end() for m in re.finditer(r"\S(?=\s|$)", text)]
    found, covered = [], -1
    if len(starts) > 80:
        return found
    for start in starts:
        if start < covered:
            continue
        for end in reversed([e for e in ends if e > start]):
            try:
                tree = ast.parse(text[start:end].rstrip(".,;:"))
            except (SyntaxError, ValueError):
                continue
            values = [
                getattr(node, "value", None)
                for node in tree.body
                if isinstance(node, (ast.Expr, ast.Assign, ast.Return))
            ]
            values = [
                v
                for v in values
                if isinstance(v, (ast.BinOp, ast.Call, ast.Subscript, ast.Compare))
            ]
            if values:
                found += values
                covered = end
            break
    return found


def strings_of(source: str) -> list[str]:
    """The string constants of a module, f-strings' literal parts joined by a space."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            found.append(
                " ".join(p.value for p in node.values if isinstance(p, ast.Constant))
            )
    return found


def advice_with_answers(edition: Path) -> list[str]:
    """What the strings of a check's module (its advice, messages and hints) hand out: every
    line of one of the check's answers that the student must find (a complete answer), or, for
    Task 4, any fix of a planted bug (a mistake's name may ship, its fix may not)."""
    import transformer_lab

    public, answers_of, fixes = (
        public_code(edition),
        _answer_functions(),
        bug_fixes(edition),
    )
    package = edition / "code" / "transformer_lab"
    found = []
    for check, module in _check_modules().items():
        path = package / module.relative_to(Path(transformer_lab.__file__).parent)
        held: set[str] = set()
        for text in strings_of(path.read_text(encoding="utf-8")):
            for fragment in code_fragments(text):
                held.add(shape(fragment)[0])
                if check == "repaired_forward":
                    for node in ast.walk(fragment):
                        fix = (
                            fixes.get(shape(node, names=True)[0])
                            if isinstance(node, ast.expr)
                            else None
                        )
                        if fix:
                            found.append(f"{path.name}: {text[:70]!r} holds {fix}")
        for name, function in answers_of.get(check, []):
            lines = key_lines(function, public)
            if lines and lines <= held:
                found.append(
                    f"{path.name}: its strings hold {name}, each of its {len(lines)} lines"
                )
    return sorted(set(found))


def test_no_advice_string_holds_an_answer_or_a_fix(edition):
    assert advice_with_answers(edition) == []


# --- the package's own functions: none is an answer, by its code or by what it computes

# What each parameter of a check's signature is, and what an annotation may say to accept it.
_KINDS = {
    "tensor": ("Tensor",),
    "module": ("Module", "MultiheadAttention", "Parts", "Classifier", "Any"),
    "int": ("int",),
    "tokenizer": ("Tokenizer", "Any"),
    "texts": ("list", "Sequence", "Iterable", "str"),
}
_PARAMETER_KINDS = {
    "mha": "module",
    "model": "module",
    "length": "int",
    "d_model": "int",
    "tokenizer": "tokenizer",
    "texts": "texts",
}


def package_functions() -> list[tuple[str, object]]:
    """``(module.name, function)`` for every function defined at the top of a package module."""
    import importlib
    import inspect
    import pkgutil

    import transformer_lab

    found = []
    for info in pkgutil.walk_packages(transformer_lab.__path__, "transformer_lab."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module that cannot load here holds nothing to call
            continue
        for name, function in vars(module).items():
            if inspect.isfunction(function) and function.__module__ == module.__name__:
                found.append(
                    (f"{module.__name__.removeprefix('transformer_lab.')}.{name}", function)
                )
    return found


def _fits(function, parameters: list[str]) -> bool:
    """Whether ``function`` takes the check's arguments and returns a tensor, by its type hints
    (the package's functions all have them): only such functions are called."""
    import inspect

    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= len(parameters) <= len(positional):
        return False
    if "Tensor" not in str(signature.return_annotation):  # every answer returns a tensor
        return False
    for parameter, name in zip(positional, parameters):
        words = _KINDS[_PARAMETER_KINDS.get(name, "tensor")]
        if not any(word in str(parameter.annotation) for word in words):
            return False
    return True


def hidden_checks():
    """The checks whose answers the student edition must not hold: the stretch exercises'
    and Week 20's (the homework's core exercises practise code the chapters print)."""
    registry = _registry()
    return [*registry.STRETCH_CHECKS, *registry.WEEK20_CHECKS]


def package_functions_that_pass() -> list[str]:
    """``module.function passes <check>``: the package functions that, handed in as they are,
    pass the public self-check of a stretch or Week-20 task (a pasted copy would)."""
    import contextlib
    import io as _io
    import signal

    def give_up(signum, frame):
        raise TimeoutError

    found = []
    functions = package_functions()
    for check in hidden_checks():
        parameters = re.findall(r"\w+", check.signature.split("(", 1)[1])
        for name, function in functions:
            if not _fits(function, parameters):
                continue
            previous = signal.signal(signal.SIGALRM, give_up)
            signal.alarm(60)
            try:
                with contextlib.redirect_stdout(_io.StringIO()):
                    status = check.run(function).status
            except Exception:  # noqa: BLE001 - a function that breaks the check is no answer
                status = "error"
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, previous)
            if status == "passed":
                found.append(f"{name} passes {check.name}")
    return found


def package_bodies_with_answers(edition: Path) -> list[str]:
    """``file:function holds <answer>``: the functions of the student package whose statements
    hold every line of an answer that the student must find (names, torch.nn.functional's
    aliases, full slices and input checks aside), and exact copies (``matches``)."""
    public = public_code(edition)
    answers_of = [
        (name, key_lines(function, public))
        for functions in _answer_functions().values()
        for name, function in functions
    ]
    found = [
        f"{n}:{f} is {a}"
        for n, f, a in matches(
            edition,
            [p.relative_to(edition).as_posix() for p in (edition / "code").rglob("*.py")],
        )
    ]
    for path in sorted((edition / "code" / "transformer_lab").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            values = set()
            for node in ast.walk(function):
                value = getattr(node, "value", None)
                if (
                    isinstance(node, (ast.Assign, ast.Return, ast.AugAssign, ast.Expr))
                    and value
                ):
                    for part in value.elts if isinstance(value, ast.Tuple) else [value]:
                        values.add(shape(part)[0])
            for answer, lines in answers_of:
                # one line in common is no evidence: every forward calls its encoder alike
                if len(lines) >= MIN_BODY_LINES and lines <= values:
                    found.append(
                        f"{path.name}:{function.name} holds every line of {answer}"
                    )
    return sorted(found)


def test_no_function_of_the_package_is_an_answer_by_its_code(edition):
    assert package_bodies_with_answers(edition) == []


def test_no_function_of_the_package_passes_a_stretch_or_week20_check():
    assert package_functions_that_pass() == []


def findings_in_other_forms(edition: Path) -> dict[str, list[str]]:
    """Every answer in another form in ``edition``, by kind (the four tests above)."""
    return {
        "stored outputs at a task's own inputs": stored_answers_at_own_inputs(edition),
        "advice holding an answer or a fix": advice_with_answers(edition),
        "package functions holding an answer's code": package_bodies_with_answers(edition),
        "package functions passing a check": package_functions_that_pass(),
    }


FORMS_TREE = "1bb8d3d"  # the last tree with answers in every other form (measured there)


def test_the_tree_of_1bb8d3d_holds_answers_in_other_forms(tmp_path):
    """The scans above, run on the student edition of 1bb8d3d with its own package and answers
    (a fresh interpreter, that tree's ``code/`` and ``instructor/`` first on the path), find
    what was measured there: Task 2's table stored at the page's own inputs, Exercise 11's
    answer and Task 4's fixes in advice, and Exercise 12's answer in the package (skipped
    without that commit in the history)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", FORMS_TREE], cwd=ROOT, capture_output=True
    )
    if archive.returncode != 0:
        pytest.skip(f"commit {FORMS_TREE} is not in this clone's history")
    tree = tmp_path / "tree"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    edition = tmp_path / "edition"
    for name in editions.source_files(tree):
        if editions.in_student_edition(name):
            (edition / name).parent.mkdir(parents=True, exist_ok=True)
            (edition / name).write_bytes((tree / name).read_bytes())
    script = (
        "import json, sys; from pathlib import Path; import test_editions as t; "
        "print(json.dumps(t.findings_in_other_forms(Path(sys.argv[1]))))"
    )
    # that tree's package and instructor's package; these scans
    paths = [edition / "code", tree / "instructor", ROOT / "tests", ROOT / "tools"]
    result = subprocess.run(
        [sys.executable, "-c", script, str(edition)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths))},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"\nin the student edition of {FORMS_TREE}:")
    for kind, items in found.items():
        print(f"  {kind}: {len(items)}")
        for item in items:
            print(f"    {item}")
    stored, advice = (
        found["stored outputs at a task's own inputs"],
        found["advice holding an answer or a fix"],
    )
    assert any(item.startswith("Task 2, --toy-seed 5") for item in stored)
    assert any("causal_padding_mask" in item for item in advice)
    assert any("Task 4's fix x.transpose(0, 1)" in item for item in advice)
    assert any("Task 4's fix ids == PAD_ID" in item for item in advice)
    assert (
        "set_classifier.multi_head_self_attention passes multi_head_attention"
        in found["package functions passing a check"]
    )
