"""Finding the data folder from anywhere, and loaders that fail with a useful message."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from transformer_lab import cloudwave
from transformer_lab.datasets import DATA_DIR_ENV, find_data_dir, load_customer360, load_feedback

REPO_DATA = Path(__file__).resolve().parents[1] / "data"
FEEDBACK_LINE = {
    "feedback_id": "FB-000001",
    "customer_id": "C-00001",
    "created_at": "2026-03-14",
    "channel": "chat",
    "category": "praise",
    "feedback_text": "not bad at all, works great",
    "rating": 5,
}


@pytest.fixture
def no_override(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def make_data_dir(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in (cloudwave.FEEDBACK_FILE, cloudwave.CUSTOMER360_FILE):
        shutil.copyfile(REPO_DATA / name, folder / name)
    return folder


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_finds_repository_data_from_a_subfolder(no_override, monkeypatch):
    monkeypatch.chdir(REPO_DATA.parent / "chapters")
    assert find_data_dir() == REPO_DATA


def test_falls_back_to_the_package_location(no_override, tmp_path):
    # tmp_path has no data/ anywhere above it, so the walk up from the package must find it
    assert find_data_dir(start=tmp_path) == REPO_DATA


def test_working_directory_wins_over_the_package(no_override, tmp_path):
    data = make_data_dir(tmp_path / "project" / "data")
    deep = tmp_path / "project" / "notebooks" / "week20"
    deep.mkdir(parents=True)
    assert find_data_dir(start=deep) == data


def test_a_data_folder_without_the_files_is_skipped(no_override, tmp_path):
    (tmp_path / "data").mkdir()
    assert find_data_dir(start=tmp_path) == REPO_DATA


def test_environment_variable_overrides(monkeypatch, tmp_path):
    data = make_data_dir(tmp_path / "elsewhere")
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    assert find_data_dir() == data
    assert len(load_customer360()) == len(pd.read_csv(data / cloudwave.CUSTOMER360_FILE))


def test_bad_environment_variable_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=rf"{DATA_DIR_ENV}=.*lacks feedback.json, customer360.csv.*make data"):
        find_data_dir()


def test_nothing_found_names_make_data(no_override, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no data/ folder holding missing.csv.*make data"):
        find_data_dir(start=tmp_path, files=["missing.csv"])


def test_load_feedback_types_and_columns():
    frame = load_feedback()
    assert tuple(frame.columns) == cloudwave.FEEDBACK_COLUMNS
    assert len(frame) >= 10_000 and frame["rating"].dtype == "int64"
    assert isinstance(frame["feedback_text"].iloc[0], str)


def test_load_customer360_types_and_columns():
    frame = load_customer360()
    assert tuple(frame.columns) == cloudwave.CUSTOMER360_COLUMNS
    assert frame["seats"].dtype == "int64" and frame["monthly_spend"].dtype == "float64"


def test_bad_json_line_names_its_line_number(tmp_path):
    good = json.dumps(FEEDBACK_LINE)
    path = write_lines(tmp_path / "feedback.json", [good, good, '{"feedback_id": "FB-3", '])
    with pytest.raises(ValueError, match=r"line 3: not valid JSON"):
        load_feedback(path)


def test_feedback_line_missing_a_column(tmp_path):
    broken = {key: value for key, value in FEEDBACK_LINE.items() if key != "category"}
    path = write_lines(tmp_path / "feedback.json", [json.dumps(FEEDBACK_LINE), json.dumps(broken)])
    with pytest.raises(ValueError, match=r"line 2, is missing column\(s\) category"):
        load_feedback(path)


@pytest.mark.parametrize("line", ['["a list"]', json.dumps(FEEDBACK_LINE | {"rating": "5"}), json.dumps(FEEDBACK_LINE | {"rating": 9})])
def test_feedback_line_of_the_wrong_kind(tmp_path, line):
    path = write_lines(tmp_path / "feedback.json", [line])
    with pytest.raises(ValueError, match=r"line 1: (expected a JSON object|rating should be an integer 1-5)"):
        load_feedback(path)


def test_empty_feedback_file(tmp_path):
    path = write_lines(tmp_path / "feedback.json", [""])
    with pytest.raises(ValueError, match="no feedback records.*make data"):
        load_feedback(path)


def test_customer360_missing_column(tmp_path):
    frame = pd.read_csv(REPO_DATA / cloudwave.CUSTOMER360_FILE).drop(columns=["nps_score"])
    path = tmp_path / "customer360.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"missing column\(s\) nps_score; expected customer_id"):
        load_customer360(path)


def test_customer360_empty_and_bad_values(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="is empty"):
        load_customer360(empty)
    header = ",".join(cloudwave.CUSTOMER360_COLUMNS)
    holes = write_lines(tmp_path / "holes.csv", [header, "C-00001,3,Team,4,76.00,1,20,,0"])
    with pytest.raises(ValueError, match="column nps_score has a missing value"):
        load_customer360(holes)
    labels = write_lines(tmp_path / "labels.csv", [header, "C-00001,3,Team,4,76.00,1,20,7,2"])
    with pytest.raises(ValueError, match="churned should hold only 0 and 1"):
        load_customer360(labels)
