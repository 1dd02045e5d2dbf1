"""tools/rechecks.py (`make rechecks`): what it refuses, and the provenance it records."""

import pytest

import rechecks as tool
from transformer_lab.rechecks import load_record


def test_an_unknown_chapter_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        tool.main(["ch5"])
    assert (
        "no re-check for ['ch5']: choose among ['ch3', 'ch4', 'ch6']"
        in capsys.readouterr().err
    )


def test_outside_the_canonical_mode_it_refuses_unless_asked(monkeypatch, capsys):
    monkeypatch.setattr(tool, "numeric_mode_problem", lambda: "this is a arm64 CPU")
    with pytest.raises(SystemExit):
        tool.main(["ch3"])
    assert "NOT the canonical mode: this is a arm64 CPU" in capsys.readouterr().err


def test_a_record_holds_the_results_and_where_and_how_they_were_made(monkeypatch, tmp_path):
    path = tmp_path / "ch3.json"
    monkeypatch.setitem(tool.RECHECKS, "ch3", lambda: {"runs": ["a re-run"]})
    monkeypatch.setattr(
        tool,
        "write_record",
        lambda chapter, results, provenance: tool_write(chapter, results, provenance, path),
    )
    assert tool.main(["ch3"]) == 0
    record = load_record("ch3", path)
    made = record["provenance"]
    assert record["results"] == {"runs": ["a re-run"]}
    assert made["command"] == "python tools/rechecks.py ch3"
    assert made["numeric_mode"] == "canonical numeric mode"
    assert made["cpu"].startswith(tool.cpu_info()["model"])
    assert isinstance(made["wall_seconds"], int) and made["load_average"].count(",") == 2


def tool_write(chapter, results, provenance, path):
    from transformer_lab.rechecks import write_record

    return write_record(chapter, results, provenance, path)


def test_an_interval_keeps_what_the_pages_print():
    from transformer_lab.protocol import Interval

    fields = tool.interval(Interval(0.02, -0.01, 0.05))
    assert fields["text"] == "+0.020 (95 % CI -0.010 to +0.050)"
    assert fields["excludes_zero"] is False
    assert tool.interval(Interval(0.02, 0.01, 0.05))["excludes_zero"] is True


def test_no_record_when_the_recipe_changes_while_it_runs(monkeypatch, tmp_path, capsys):
    import transformer_lab.set_classifier as set_classifier

    def rerun_that_changes_the_recipe():
        monkeypatch.setattr(set_classifier, "BATCH_SIZE", 7)
        return {"runs": []}

    monkeypatch.setitem(tool.RECHECKS, "ch3", rerun_that_changes_the_recipe)
    monkeypatch.setattr(tool, "write_record", lambda *args: pytest.fail("wrote a record"))
    with pytest.raises(SystemExit):
        tool.main(["ch3"])
    assert "the recipe changed while it ran" in capsys.readouterr().err


def test_the_error_profile_reads_the_groups_of_chapter_3s_table():
    from transformer_lab.set_classifier import build_set_classifier
    from transformer_lab.set_task import make_sets

    x, padding, y = make_sets(256, seed=3)
    found = tool.error_profile(build_set_classifier("transformer"), (x, padding, y))
    assert 0 <= found["errors"] <= 256
    assert 0 <= found["error_rate_hard"] <= 1 and 0 <= found["error_rate_rest"] <= 1
    assert isinstance(found["holds"], bool)
    # an untrained model's loss does not sit on the hard sets: the pattern is not there
    assert found["holds"] is False


def test_check_names_every_result_that_differs():
    committed = {"runs": [{"best_epoch": 12, "loss": 0.25}], "n": 3}
    fresh = {"runs": [{"best_epoch": 14, "loss": 0.25}], "n": 3}
    assert tool.differences(committed, committed) == []
    assert tool.differences(committed, fresh) == ["results.runs[0].best_epoch: 12 -> 14"]
    assert tool.differences({"a": [1, 2]}, {"a": [1]}) == ["results.a: [1, 2] -> [1]"]


def test_check_mode_fails_on_other_results_and_writes_nothing(monkeypatch, capsys):
    monkeypatch.setitem(tool.RECHECKS, "ch6", lambda: {"page": "other numbers"})
    monkeypatch.setattr(tool, "write_record", lambda *args: pytest.fail("wrote a record"))
    with pytest.raises(SystemExit) as stopped:
        tool.main(["ch6", "--check"])
    assert stopped.value.code == 1
    out = capsys.readouterr()
    assert "ch6: results.page:" in out.out and "DIFFERS" in out.out
    assert "run `make rechecks` and commit the records" in out.err


def test_check_mode_passes_when_the_results_repeat(monkeypatch, capsys):
    committed = load_record("ch6")["results"]
    monkeypatch.setitem(tool.RECHECKS, "ch6", lambda: committed)
    assert tool.main(["ch6", "--check"]) == 0
    assert "ch6: " in capsys.readouterr().out
