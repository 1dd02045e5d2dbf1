"""transformer_lab.rechecks: a re-check record is refused once the recipe it checked changes."""

import json
from importlib.metadata import version

import pytest

import transformer_lab.bakeoff as bakeoff
import transformer_lab.set_classifier as set_classifier
from transformer_lab.rechecks import (
    EXPERIMENTS,
    PROVENANCE_WIDTH,
    RERUN_COMMAND,
    StaleRecordError,
    code_hash,
    data_hash,
    describe_provenance,
    fingerprint,
    load_record,
    modules_behind,
    public_version,
    recipe_changes,
    recipe_of,
    record_path,
    write_record,
)

PROVENANCE = {
    "command": "python tools/rechecks.py ch3",
    "date": "2026-12-02",
    "cpu": "Some CPU (2 cores)",
    "numeric_mode": "canonical numeric mode",
    "wall_seconds": 600,
    "load_average": "0.10, 0.20, 0.30",
}


def test_the_code_hash_ignores_comments_and_docstrings_but_not_code():
    source = 'def f(x):\n    """Twice x."""\n    return 2 * x  # double\n'
    reworded = 'def f(x):\n    """Two times x, reworded."""\n    # a new comment\n    return 2 * x\n'
    changed = 'def f(x):\n    """Twice x."""\n    return 3 * x\n'
    assert code_hash(source) == code_hash(reworded)
    assert code_hash(source) != code_hash(changed)
    # a function whose body is only a docstring still hashes (its body becomes `pass`)
    assert code_hash('def g():\n    """Nothing."""\n') == code_hash("def g():\n    pass\n")


def test_a_record_made_on_linux_is_current_on_macos_and_windows():
    # PyTorch's Linux CPU wheel is 2.13.0+cpu, the same release elsewhere 2.13.0
    assert public_version("2.13.0+cpu") == public_version("2.13.0") == "2.13.0"
    # a Windows checkout may turn a data file's line endings into CRLF
    assert data_hash(b'{"a": 1}\r\n{"b": 2}\n') == data_hash(b'{"a": 1}\n{"b": 2}\n')
    assert data_hash(b"1,2\n") != data_hash(b"1,3\n")


def test_the_modules_behind_an_experiment_follow_its_imports():
    behind = modules_behind(("transformer_lab.set_classifier",))
    # set_classifier imports training, which imports protocol: both shape the numbers
    assert {"transformer_lab.training", "transformer_lab.protocol"} <= set(behind)
    assert "transformer_lab.bakeoff" not in behind
    assert behind == sorted(behind)


def test_the_recipe_holds_constants_code_data_and_versions():
    recipe = recipe_of("ch6")
    assert recipe["constants"]["transformer_lab.bakeoff.PATIENCE"] == repr(bakeoff.PATIENCE)
    assert "transformer_lab.bakeoff" in recipe["code"]
    assert set(recipe["data"]) == {"customer360.csv"}
    assert {"python", "torch", "numpy", "scikit-learn"} <= set(recipe["versions"])


def test_the_fingerprint_changes_when_a_recipe_constant_changes(monkeypatch):
    before = recipe_of("ch3")
    monkeypatch.setattr(set_classifier, "PATIENCE", set_classifier.PATIENCE + 1)
    after = recipe_of("ch3")
    assert fingerprint(after) != fingerprint(before)
    assert recipe_changes(before, after) == [
        f"transformer_lab.set_classifier.PATIENCE {set_classifier.PATIENCE - 1} -> "
        f"{set_classifier.PATIENCE}"
    ]
    assert fingerprint(recipe_of("ch3")) == fingerprint(after)  # and only then


def test_a_record_of_the_current_recipe_loads(tmp_path):
    path = write_record("ch3", {"answer": 42}, PROVENANCE, tmp_path / "ch3.json")
    record = load_record("ch3", path)
    assert record["results"] == {"answer": 42} and record["provenance"] == PROVENANCE
    described = describe_provenance(record)
    assert " ".join(described.split("\n")) == (
        "made by `python tools/rechecks.py ch3` on 2026-12-02, Some CPU (2 cores), "
        "canonical numeric mode, in 10 min (load average 0.10, 0.20, 0.30)"
    )
    # wrapped for a page's output column
    assert max(map(len, described.splitlines())) <= PROVENANCE_WIDTH < len(described)
    quick = {**record, "provenance": {**PROVENANCE, "wall_seconds": 30}}
    assert ", in 30 s (load" in " ".join(describe_provenance(quick).split("\n"))


def test_a_stale_record_raises_naming_make_rechecks_and_the_change(tmp_path, monkeypatch):
    path = write_record("ch3", {}, PROVENANCE, tmp_path / "ch3.json")
    monkeypatch.setattr(set_classifier, "LEARNING_RATE", 0.5)
    with pytest.raises(StaleRecordError) as raised:
        load_record("ch3", path)
    message = str(raised.value)
    assert f"`{RERUN_COMMAND}`" in message and "is stale" in message
    assert "transformer_lab.set_classifier.LEARNING_RATE 0.02 -> 0.5" in message


def test_a_record_with_changed_code_is_stale(tmp_path):
    path = write_record("ch3", {}, PROVENANCE, tmp_path / "ch3.json")
    record = json.loads(path.read_text())
    record["recipe"]["code"]["transformer_lab.training"] = "0" * 64
    record["fingerprint"] = fingerprint(record["recipe"])
    path.write_text(json.dumps(record))
    with pytest.raises(StaleRecordError, match="code of transformer_lab.training"):
        load_record("ch3", path)


def test_a_missing_record_raises_naming_make_rechecks(tmp_path):
    with pytest.raises(StaleRecordError, match=f"no re-check record .*`{RERUN_COMMAND}`"):
        load_record("ch4", tmp_path / "ch4.json")


def test_an_unknown_chapter_is_named():
    with pytest.raises(
        ValueError, match="chapter must be one of \\['ch3', 'ch4', 'ch6'\\]"
    ):
        recipe_of("ch5")


@pytest.mark.parametrize("chapter", sorted(EXPERIMENTS))
def test_the_committed_records_are_current(chapter):
    # raises when the recipe changed since the record was made, or the lock's versions did
    record = load_record(chapter, strict_versions=True)
    assert record_path(chapter).parent.name == "recheck_records"
    assert record["provenance"]["numeric_mode"] == "canonical numeric mode"
    assert record["results"]


def test_other_library_versions_are_named_not_refused(tmp_path):
    path = write_record("ch3", {}, PROVENANCE, tmp_path / "ch3.json")
    record = json.loads(path.read_text())
    record["recipe"]["versions"]["numpy"] = "0.0.1"
    record["fingerprint"] = fingerprint(record["recipe"])
    path.write_text(json.dumps(record))
    loaded = load_record("ch3", path)  # a reader off the lock still gets the page
    assert loaded["version_changes"] == [
        f"numpy 0.0.1 -> {public_version(version('numpy'))}"
    ]
    described = " ".join(describe_provenance(loaded).split("\n"))
    assert "other library versions than yours (numpy 0.0.1 -> " in described
    with pytest.raises(StaleRecordError, match="numpy 0.0.1 -> "):
        load_record("ch3", path, strict_versions=True)


def test_a_record_whose_recipe_was_edited_by_hand_is_stale(tmp_path):
    path = write_record("ch3", {}, PROVENANCE, tmp_path / "ch3.json")
    record = json.loads(path.read_text())
    record["recipe"]["constants"]["transformer_lab.set_classifier.LEARNING_RATE"] = "0.5"
    path.write_text(json.dumps(record))
    with pytest.raises(StaleRecordError, match="does not match its own recipe"):
        load_record("ch3", path)


def test_chapter_3s_learning_rates_are_the_outcome_of_the_recorded_search():
    search = load_record("ch3", strict_versions=True)["results"]["learning_rate_search"]
    assert set(search) == set(set_classifier.ARCHITECTURES)
    for name, losses in search.items():
        assert sorted(map(float, losses)) == sorted(set_classifier.LEARNING_RATE_CANDIDATES)
        assert float(min(losses, key=losses.get)) == set_classifier.LEARNING_RATES[name]


def test_chapter_4s_primary_comparison_pools_every_run_of_the_recipe():
    import transformer_lab.char_transformer as char_transformer
    from transformer_lab.protocol import seed_interval

    found = load_record("ch4", strict_versions=True)["results"]
    pooled = found["pooled"]
    runs = char_transformer.RUNS + char_transformer.RECHECK_OTHER_RUNS
    assert pooled["runs"] == len(runs)
    gaps = found["page"]["accuracy_gaps"] + found["other_runs"]["accuracy_gaps"]
    assert pooled["accuracy_gaps"] == gaps
    assert pooled["natural_gap"]["estimate"] == pytest.approx(seed_interval(gaps).estimate)
    # every run's per-template nets cover the templates of the pairs, counted once
    for part in ("page", "other_runs"):
        for nets in found[part]["template_nets"]:
            assert set(nets) == set(found["pair_counts"])
