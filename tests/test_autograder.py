"""The autograder rehearsed as Gradescope runs it, without Docker: ``make autograder``'s zip is
unpacked into a folder that plays ``/autograder/source``, and its ``run_autograder`` runs on a
right, a wrong, a hard-coding and a hostile submission, with every path overridden. Each run
must write a ``results.json`` valid in Gradescope's documented format
(https://gradescope-autograders.readthedocs.io/en/latest/specs/).

Slow (two passes of the self-check per submission, in fresh workers): about a minute in all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from transformer_lab_instructor.solutions import SOLUTION, STRETCH, WEEK20
from transformer_lab_instructor.week20 import sines_table

import editions
from classroom import with_body
from transformer_lab.selfcheck import PASSED, check_file
from transformer_lab.selfcheck.checks import masks, tokenizer
from transformer_lab.selfcheck.checks.embedding import PROBES
from transformer_lab.selfcheck.checks.positions import TABLE_PROBES
from transformer_lab.tokenizer import TINY_CORPUS, tokens_per_word, train_bpe_tokenizer

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
TOP_FIELDS = {
    "score": (int, float),
    "max_score": (int, float),
    "execution_time": (int, float),
    "output": str,
    "visibility": str,
    "stdout_visibility": str,
    "extra_data": dict,
    "tests": list,
}
TEST_FIELDS = {
    "score": (int, float),
    "max_score": (int, float),
    "status": str,
    "name": str,
    "number": str,
    "output": str,
    "tags": list,
    "visibility": str,
    "extra_data": dict,
}


def gradescope_problems(results: object) -> list[str]:
    """What makes ``results`` an invalid Gradescope ``results.json`` ([] when it is valid)."""
    if not isinstance(results, dict):
        return ["not a JSON object"]
    problems = [
        f"{key}: {type(value).__name__}"
        for key, value in results.items()
        if key in TOP_FIELDS and not isinstance(value, TOP_FIELDS[key])
    ]
    tests = results.get("tests", [])
    if "score" not in results and not all("score" in t for t in tests):
        problems.append("a score is required, overall or on every test")
    for key in ("visibility", "stdout_visibility"):
        if key in results and results[key] not in VISIBILITIES:
            problems.append(f"{key} {results[key]!r}")
    for index, test in enumerate(tests if isinstance(tests, list) else []):
        for key, value in test.items():
            if key in TEST_FIELDS and not isinstance(value, TEST_FIELDS[key]):
                problems.append(f"tests[{index}].{key}: {type(value).__name__}")
        if test.get("visibility", "visible") not in VISIBILITIES:
            problems.append(f"tests[{index}].visibility {test['visibility']!r}")
        if test.get("status", "passed") not in ("passed", "failed"):
            problems.append(f"tests[{index}].status {test['status']!r}")
    # this grader's own promises: the fields the issue asks for on every test
    for index, test in enumerate(tests if isinstance(tests, list) else []):
        missing = {"name", "score", "max_score", "visibility", "output"} - set(test)
        if missing:
            problems.append(f"tests[{index}] lacks {sorted(missing)}")
    if "max_score" not in results:
        problems.append("no max_score")
    return problems


def test_the_validator_rejects_what_gradescope_rejects():
    assert gradescope_problems([]) == ["not a JSON object"]
    bad = {"max_score": 1, "tests": [{"name": "x", "visibility": "soon", "output": 3}]}
    problems = gradescope_problems(bad)
    assert any("score is required" in p for p in problems)
    assert any("visibility 'soon'" in p for p in problems)
    assert any("output: int" in p for p in problems)


def hard_coded() -> str:
    """The homework with three functions that look their public answers up instead of
    computing them: the embedding sizes, the causal mask on every public padding, and the
    token counts of the public words (by the tokenizer's vocabulary size)."""
    table = {probe: probe[0] * probe[1] for probe in PROBES}
    masks_table = {
        tuple(map(tuple, p.tolist())): masks.reference(p).tolist()
        for p in [*masks.probe_paddings(), *(probe for (probe,) in masks.SMALL_PROBES)]
    }
    source = SOLUTION.replace(
        "def embedding_parameters(vocab_size, d):\n    return vocab_size * d",
        f"def embedding_parameters(vocab_size, d):\n    return {table!r}[(vocab_size, d)]",
    )
    assert source != SOLUTION
    counts = {}
    for size in tokenizer.PUBLIC_INPUTS.count_sizes:
        trained = train_bpe_tokenizer(list(TINY_CORPUS), size)
        for word, count in tokens_per_word(trained, list(tokenizer.WORDS)).items():
            counts[(trained.get_vocab_size(), word)] = count
    return source + (
        "\n\ndef causal_padding_mask(padding):\n"
        f"    table = {masks_table!r}\n"
        "    key = tuple(map(tuple, padding.tolist()))\n"
        "    return torch.tensor(table[key], dtype=torch.bool)\n"
        "\n\ndef tokens_per_word(tokenizer, words):\n"
        f"    table = {counts!r}\n"
        "    return {w: table.get((tokenizer.get_vocab_size(), w), 1) for w in words}\n"
    )


def hostile(source_folder: Path, results: Path) -> str:
    """Loops, exits, and reaches for the instructor's answers and the results file."""
    source = with_body(SOLUTION, "masked_mean", "while True: pass")
    source = with_body(source, "accuracy", "import os; os._exit(3)")
    source = with_body(
        source,
        "attention",
        f"open({str(results)!r}, 'w').write('{{\"score\": 100}}')",
    )
    references = source_folder / "instructor" / "transformer_lab_instructor"
    return source + (
        "\n\ndef causal_padding_mask(padding):\n"
        f"    exec(open({str(references / 'references.py')!r}).read(), globals())\n"
        "    return globals()['causal_padding_mask'](padding)\n"
        "\n\ndef multi_head_attention(x, padding, mha):\n"
        "    from transformer_lab_instructor.references import multi_head_attention\n"
        "    return multi_head_attention(x, padding, mha)\n"
    )


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("autograder") / "source"
    archive = folder.parent / "autograder.zip"
    editions.write_autograder(archive)
    with zipfile.ZipFile(archive) as unzipped:
        unzipped.extractall(folder)
        for info in unzipped.infolist():
            (folder / info.filename).chmod(info.external_attr >> 16 & 0o777 or 0o644)
    return folder


def run_autograder(
    source: Path,
    tmp_path: Path,
    name: str,
    text: str,
    page: str = "homework",
    time_limit: float = 5,
) -> dict:
    """Run the autograder on ``text``; ``time_limit``: CPU seconds per check (a right
    submission's checks must finish inside it on a loaded machine)."""
    submission = tmp_path / name / "submission"
    submission.mkdir(parents=True)
    (submission / "starter.py").write_text(text, encoding="utf-8")
    results = tmp_path / name / "results" / "results.json"
    env = dict(
        os.environ,
        AUTOGRADER_SOURCE=str(source),
        AUTOGRADER_SUBMISSION=str(submission),
        AUTOGRADER_RESULTS=str(results),
        AUTOGRADER_PYTHON=sys.executable,
        AUTOGRADER_TIME_LIMIT=str(time_limit),
        AUTOGRADER_PAGE=page,
    )
    completed = subprocess.run(
        [str(source / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    data = json.loads(results.read_text(encoding="utf-8"))
    assert gradescope_problems(data) == [], gradescope_problems(data)
    return data


def _by_kind(data: dict) -> tuple[dict, dict]:
    public = {t["name"].removeprefix("Public check, "): t for t in data["tests"]}
    hidden = {t["name"].removeprefix("Hidden check, "): t for t in data["tests"]}
    return (
        {k: v for k, v in public.items() if v["visibility"] == "visible"},
        {k: v for k, v in hidden.items() if v["visibility"] == "after_due_date"},
    )


def test_a_right_submission_earns_every_point_from_the_hidden_checks(source, tmp_path):
    data = run_autograder(source, tmp_path, "right", SOLUTION + STRETCH)
    public, hidden = _by_kind(data)
    assert len(public) == len(hidden) == 8
    assert all(t["max_score"] == 0 for t in public.values()), "public: feedback only"
    assert all(t["status"] == "passed" for t in [*public.values(), *hidden.values()])
    assert data["score"] == 8 and data["max_score"] == 6  # the stretch is extra credit


def test_a_wrong_submission_is_named_in_public_and_loses_the_hidden_point(source, tmp_path):
    text = with_body(SOLUTION, "embedding_parameters", "d = d + 1")
    public, hidden = _by_kind(run_autograder(source, tmp_path, "wrong", text))
    name = "Exercise 7: embedding_parameters(vocab_size, d)"
    assert public[name]["status"] == "failed" and "[FAILED]" in public[name]["output"]
    assert hidden[name]["score"] == 0 and hidden[name]["max_score"] == 1


def test_hard_coding_the_public_results_passes_the_self_check_and_fails_the_autograder(
    source, tmp_path
):
    text = hard_coded()
    path = tmp_path / "hard_coded.py"
    path.write_text(text, encoding="utf-8")
    own = {r.name: r.status for r in check_file(path).results}
    assert own["embedding_parameters"] == own["causal_padding_mask"] == PASSED
    assert own["tokens_per_word"] == PASSED
    public, hidden = _by_kind(run_autograder(source, tmp_path, "hard", text))
    for name in (
        "Exercise 7: embedding_parameters(vocab_size, d)",
        "Exercise 11: causal_padding_mask(padding)",
        "Exercise 9: tokens_per_word(tokenizer, words)",
    ):
        assert public[name]["status"] == "passed", public[name]
        assert hidden[name]["status"] == "failed", hidden[name]
        assert hidden[name]["score"] == 0


def test_a_hostile_submission_gets_a_valid_results_file_and_no_stolen_answer(
    source, tmp_path
):
    # 1 s: the endless loop is stopped at the limit in each pass (public, hidden), so a longer
    # limit is only waited out; the checks asserted below fail whatever the limit
    data = run_autograder(
        source, tmp_path, "hostile", hostile(source, tmp_path), time_limit=1
    )
    public, hidden = _by_kind(data)
    for tests in (public, hidden):
        assert tests["Exercise 2: masked_mean(x, padding)"]["status"] == "failed"
        assert tests["Exercise 1: accuracy(logits, labels)"]["status"] == "failed"
        assert tests["Exercise 11: causal_padding_mask(padding)"]["status"] == "failed"
        assert tests["Exercise 12: multi_head_attention(x, padding, mha)"]["status"] == (
            "failed"
        )
    assert data["score"] < 8 and data["score"] != 100


def test_no_submission_at_all_still_writes_a_valid_results_file(source, tmp_path):
    results = tmp_path / "empty" / "results.json"
    (tmp_path / "empty").mkdir()
    env = dict(
        os.environ,
        AUTOGRADER_SOURCE=str(source),
        AUTOGRADER_SUBMISSION=str(tmp_path / "nothing"),
        AUTOGRADER_RESULTS=str(results),
        AUTOGRADER_PYTHON=sys.executable,
    )
    subprocess.run([str(source / "run_autograder")], env=env, check=True, timeout=300)
    data = json.loads(results.read_text(encoding="utf-8"))
    assert gradescope_problems(data) == [] and data["score"] == 0


def week20_hard_coded() -> str:
    """Week 20 with Task 5's table looked up for the public sizes instead of computed."""
    tables = {size: sines_table(*size).float().tolist() for size in TABLE_PROBES}
    head, _, rest = WEEK20.partition("def sinusoidal_positions(length, d_model):\n")
    body_end = rest.index("\n\n\ndef ")
    return (
        head
        + "def sinusoidal_positions(length, d_model):\n"
        + f"    return torch.tensor({tables!r}[(length, d_model)])\n"
        + rest[body_end:]
    )


def test_week20_hidden_checks_draw_fresh_inputs_and_grade_them(source, tmp_path):
    """Week 20's hidden checks: new models, toy matrices, table sizes and comments per run. A
    right file earns every point; a table hard-coded for the public sizes passes the public
    check and fails the hidden one."""
    data = run_autograder(source, tmp_path, "w20-right", WEEK20, page="week-20")
    public, hidden = _by_kind(data)
    assert len(public) == len(hidden) == 6
    assert all(t["status"] == "passed" for t in [*public.values(), *hidden.values()])
    text = week20_hard_coded()
    public, hidden = _by_kind(run_autograder(source, tmp_path, "w20-hard", text, "week-20"))
    name = "Task 5: sinusoidal_positions(length, d_model)"
    assert public[name]["status"] == "passed", public[name]
    assert hidden[name]["status"] == "failed" and hidden[name]["score"] == 0
