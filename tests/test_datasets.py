"""Finding the data folder from anywhere, and loaders that fail with a useful message."""

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from transformer_lab.cloudwave import schema
from transformer_lab.cloudwave.usage import N_GRID_CUSTOMERS
from transformer_lab.datasets import (
    DATA_DIR_ENV,
    event_sequences,
    find_data_dir,
    load_customer360,
    load_events,
    load_feedback,
    load_usage_grid,
    usage_grid_array,
)

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
    for name in (schema.FEEDBACK_FILE, schema.CUSTOMER360_FILE):
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


def test_working_directory_wins_over_the_package_and_says_so(no_override, tmp_path):
    data = make_data_dir(tmp_path / "project" / "data")
    deep = tmp_path / "project" / "notebooks" / "week20"
    deep.mkdir(parents=True)
    with pytest.warns(
        UserWarning,
        match=rf"using the data folder {data} .*not the repository's own {REPO_DATA}",
    ):
        assert find_data_dir(start=deep) == data


def test_the_repository_data_and_the_override_are_used_without_a_warning(
    monkeypatch, tmp_path
):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monkeypatch.delenv(DATA_DIR_ENV, raising=False)
        assert find_data_dir(start=REPO_DATA.parent / "chapters") == REPO_DATA
        monkeypatch.setenv(DATA_DIR_ENV, str(make_data_dir(tmp_path / "chosen")))
        assert find_data_dir(start=tmp_path) == tmp_path / "chosen"


def test_a_data_folder_without_the_files_is_skipped(no_override, tmp_path):
    (tmp_path / "data").mkdir()
    assert find_data_dir(start=tmp_path) == REPO_DATA


def test_environment_variable_overrides(monkeypatch, tmp_path):
    data = make_data_dir(tmp_path / "elsewhere")
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    assert find_data_dir() == data
    assert len(load_customer360()) == len(pd.read_csv(data / schema.CUSTOMER360_FILE))


def test_bad_environment_variable_is_explained(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(
        FileNotFoundError,
        match=rf"{DATA_DIR_ENV}=.*lacks feedback.json, customer360.csv.*make data",
    ):
        find_data_dir()


def test_nothing_found_names_make_data(no_override, tmp_path):
    with pytest.raises(
        FileNotFoundError, match=r"no data/ folder holding missing.csv.*make data"
    ):
        find_data_dir(start=tmp_path, files=["missing.csv"])


@pytest.mark.parametrize(
    "load, columns, dtypes",
    [
        (load_feedback, schema.FEEDBACK_COLUMNS, {"rating": "int64"}),
        (
            load_customer360,
            schema.CUSTOMER360_COLUMNS,
            {"seats": "int64", "monthly_spend": "float64", "churned": "int64"},
        ),
        (
            load_usage_grid,
            schema.USAGE_GRID_COLUMNS,
            dict.fromkeys(schema.USAGE_GRID_COLUMNS[1:], "int64"),
        ),
        (load_events, schema.EVENTS_COLUMNS, {}),
    ],
    ids=["feedback", "customer360", "usage grid", "events"],
)
def test_loaders_return_the_schema_columns_and_types(load, columns, dtypes):
    frame = load()
    assert tuple(frame.columns) == columns and len(frame) >= 5000
    assert {column: str(frame[column].dtype) for column in dtypes} == dtypes
    text_column = columns[0]  # every file starts with an id, read as text
    assert isinstance(frame[text_column].iloc[0], str)


def test_bad_json_line_names_its_line_number(tmp_path):
    good = json.dumps(FEEDBACK_LINE)
    path = write_lines(tmp_path / "feedback.json", [good, good, '{"feedback_id": "FB-3", '])
    with pytest.raises(ValueError, match=r"line 3: not valid JSON"):
        load_feedback(path)


def test_feedback_line_missing_a_column(tmp_path):
    broken = {key: value for key, value in FEEDBACK_LINE.items() if key != "category"}
    path = write_lines(
        tmp_path / "feedback.json", [json.dumps(FEEDBACK_LINE), json.dumps(broken)]
    )
    with pytest.raises(ValueError, match=r"line 2, is missing column\(s\) category"):
        load_feedback(path)


@pytest.mark.parametrize(
    "line",
    [
        '["a list"]',
        json.dumps(FEEDBACK_LINE | {"rating": "5"}),
        json.dumps(FEEDBACK_LINE | {"rating": 9}),
    ],
)
def test_feedback_line_of_the_wrong_kind(tmp_path, line):
    path = write_lines(tmp_path / "feedback.json", [line])
    with pytest.raises(
        ValueError,
        match=r"line 1: (expected a JSON object|rating should be an integer 1-5)",
    ):
        load_feedback(path)


def test_empty_feedback_file(tmp_path):
    path = write_lines(tmp_path / "feedback.json", [""])
    with pytest.raises(ValueError, match="no feedback records.*make data"):
        load_feedback(path)


def test_customer360_missing_column(tmp_path):
    frame = pd.read_csv(REPO_DATA / schema.CUSTOMER360_FILE).drop(columns=["nps_score"])
    path = tmp_path / "customer360.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(
        ValueError, match=r"missing column\(s\) nps_score; expected customer_id"
    ):
        load_customer360(path)


def test_customer360_empty_and_bad_values(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="is empty"):
        load_customer360(empty)
    header = ",".join(schema.CUSTOMER360_COLUMNS)
    holes = write_lines(tmp_path / "holes.csv", [header, "C-00001,3,Team,4,76.00,1,20,,0"])
    with pytest.raises(ValueError, match="column nps_score has a missing value"):
        load_customer360(holes)
    labels = write_lines(
        tmp_path / "labels.csv", [header, "C-00001,3,Team,4,76.00,1,20,7,2"]
    )
    with pytest.raises(
        ValueError,
        match=r"column churned should hold whole numbers 0-1, got '2' \(data row 1\)",
    ):
        load_customer360(labels)


GOOD_ROW = "C-00001,3,Team,4,76.00,1,20,7,0"


@pytest.mark.parametrize(
    "row, message",
    [
        (
            "C-00002,abc,Team,4,76.00,1,20,7,0",
            r"column tenure_months should hold whole numbers 0 or more, got 'abc'",
        ),
        (
            "C-00002,3,Team,2.5,76.00,1,20,7,0",
            r"column seats should hold whole numbers 1 or more, got '2.5'",
        ),
        (
            "C-00002,3,Team,4,-1,1,20,7,0",
            r"column monthly_spend should hold numbers 0.0 or more, got '-1.0'",
        ),
        (
            "C-00002,3,Team,4,inf,1,20,7,0",
            r"column monthly_spend should hold numbers 0.0 or more, got 'inf'",
        ),
        (
            "C-00002,3,Team,4,76.00,1,20,11,0",
            r"column nps_score should hold whole numbers 0-10, got '11'",
        ),
        (
            "C-00002,3,Platinum,4,76.00,1,20,7,0",
            r"column plan_tier should hold one of Starter, .*got 'Platinum'",
        ),
        (
            GOOD_ROW,
            r"column customer_id should hold a customer_id not seen before, got 'C-00001'",
        ),
    ],
)
def test_customer360_bad_cell_names_file_row_and_column(tmp_path, row, message):
    path = write_lines(
        tmp_path / "customer360.csv", [",".join(schema.CUSTOMER360_COLUMNS), GOOD_ROW, row]
    )
    with pytest.raises(ValueError, match=rf"customer360.csv: {message} \(data row 2\)"):
        load_customer360(path)


@pytest.mark.parametrize(
    "name, loader",
    [
        (schema.FEEDBACK_FILE, load_feedback),
        (schema.CUSTOMER360_FILE, load_customer360),
        (schema.USAGE_GRID_FILE, load_usage_grid),
        (schema.EVENTS_FILE, load_events),
    ],
)
def test_a_byte_order_mark_is_ignored_in_every_format(tmp_path, name, loader):
    """One rule for JSON lines and CSV alike: a UTF-8 byte-order mark at the start changes nothing."""
    text = (REPO_DATA / name).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)[
        : 7 * 24 + 1
    ]  # a header and one whole customer for the grid
    marked = tmp_path / name
    marked.write_text("\ufeff" + "".join(lines), encoding="utf-8")
    plain = tmp_path / f"plain-{name}"
    plain.write_text("".join(lines), encoding="utf-8")
    pd.testing.assert_frame_equal(loader(marked), loader(plain))


EVENT_LINE = {
    "session_id": "S-000001",
    "customer_id": "C-00001",
    "timestamp": "2026-03-02T09:00:00",
    "event": "login",
}


def grid_lines(customer: str = "C-00001") -> list[str]:
    return [
        f"{customer},{day},{hour},{day + hour}" for day in range(7) for hour in range(24)
    ]


def test_load_usage_grid_and_pivot_to_an_array():
    frame = load_usage_grid()
    ids, grid = usage_grid_array(frame)
    assert grid.shape == (N_GRID_CUSTOMERS, 7, 24) and len(ids) == len(set(ids))
    first = frame[frame["customer_id"] == ids[1]]
    cell = first[(first["day_of_week"] == 2) & (first["hour"] == 10)]["active_users"].item()
    assert grid[1, 2, 10] == cell
    assert grid.sum() == frame["active_users"].sum()


def test_usage_grid_array_keeps_each_cell_in_place(tmp_path):
    header = ",".join(schema.USAGE_GRID_COLUMNS)
    path = write_lines(
        tmp_path / "grid.csv", [header] + grid_lines("C-2")[::-1] + grid_lines("C-1")
    )
    ids, grid = usage_grid_array(load_usage_grid(path))
    assert ids == ["C-2", "C-1"]
    np.testing.assert_array_equal(grid[0], np.add.outer(np.arange(7), np.arange(24)))
    with pytest.raises(TypeError, match="DataFrame from load_usage_grid, got list"):
        usage_grid_array([1, 2])


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda lines: lines[:-1],
            r"customer C-00001 has 167 cells, expected 7 × 24 = 168",
        ),
        (
            lambda lines: lines + [lines[-1]],
            r"data row 169 repeats a \(customer_id, day_of_week, hour\) cell",
        ),
        (
            lambda lines: ["C-00001,7,0,3"] + lines[1:],
            r"column day_of_week should hold whole numbers 0-6, got '7' \(data row 1\)",
        ),
        (
            lambda lines: ["C-00001,0,0,-1"] + lines[1:],
            r"column active_users should hold whole numbers 0 or more, got '-1'",
        ),
        (
            lambda lines: ["C-00001,0,0,many"] + lines[1:],
            r"column active_users should hold whole numbers 0 or more, got 'many'",
        ),
        (
            lambda lines: ["C-00001,0,2.5,1"] + lines[1:],
            r"column hour should hold whole numbers 0-23, got '2.5'",
        ),
    ],
)
def test_usage_grid_with_bad_cells(tmp_path, change, message):
    header = ",".join(schema.USAGE_GRID_COLUMNS)
    path = write_lines(tmp_path / "grid.csv", [header] + change(grid_lines()))
    with pytest.raises(ValueError, match=message):
        load_usage_grid(path)


def test_usage_grid_empty_or_missing_column(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="is empty.*make data"):
        load_usage_grid(empty)
    header_only = write_lines(
        tmp_path / "header.csv", [",".join(schema.USAGE_GRID_COLUMNS)]
    )
    with pytest.raises(ValueError, match="header but no rows"):
        load_usage_grid(header_only)
    no_hour = write_lines(
        tmp_path / "no_hour.csv", ["customer_id,day_of_week,active_users", "C-1,0,3"]
    )
    with pytest.raises(
        ValueError,
        match=r"missing column\(s\) hour; expected customer_id, day_of_week, hour",
    ):
        load_usage_grid(no_hour)


def test_load_events_and_pad_the_sequences():
    events = load_events()
    assert len(events) > 10_000
    sessions, codes, lengths = event_sequences(events)
    assert codes.shape == (
        events["session_id"].nunique(),
        lengths.max(),
    ) and lengths.sum() == len(events)
    assert sessions[:2] == ["S-000001", "S-000002"]
    first = events[events["session_id"] == sessions[0]]["event"].tolist()
    assert [schema.EVENT_TYPES[k - 1] for k in codes[0, : lengths[0]]] == first
    assert (codes[0, lengths[0] :] == 0).all() and (
        codes[np.arange(len(lengths)), lengths - 1] > 0
    ).all()


def test_event_sequences_keep_the_order_within_a_session():
    frame = pd.DataFrame(
        [
            EVENT_LINE | {"session_id": "S-2", "event": "login_failed"},
            EVENT_LINE | {"session_id": "S-1", "event": "logout"},
            EVENT_LINE | {"session_id": "S-2", "event": "password_reset"},
        ]
    )
    sessions, codes, lengths = event_sequences(frame)
    index = {name: k + 1 for k, name in enumerate(schema.EVENT_TYPES)}
    assert sessions == ["S-2", "S-1"] and lengths.tolist() == [2, 1]
    assert codes.tolist() == [
        [index["login_failed"], index["password_reset"]],
        [index["logout"], 0],
    ]
    with pytest.raises(ValueError, match=r"unknown event type\(s\) \['dance'\]"):
        event_sequences(frame.assign(event="dance"))
    with pytest.raises(TypeError, match="DataFrame from load_events, got dict"):
        event_sequences({})


@pytest.mark.parametrize(
    "lines, message",
    [
        ([json.dumps(EVENT_LINE), "{oops"], r"line 2: not valid JSON"),
        (["[1, 2]"], r"line 1: expected a JSON object, got list"),
        (
            [json.dumps({k: v for k, v in EVENT_LINE.items() if k != "event"})],
            r"line 1, is missing column\(s\) event",
        ),
        (
            [json.dumps(EVENT_LINE | {"event": "dance"})],
            r"line 1: event should be one of login, .*got 'dance'",
        ),
        (
            [json.dumps(EVENT_LINE | {"timestamp": "yesterday"})],
            r"line 1: timestamp should be ISO .*got 'yesterday'",
        ),
        (
            [
                json.dumps(EVENT_LINE),
                json.dumps(EVENT_LINE | {"timestamp": "2026-03-02T08:59:59"}),
            ],
            r"line 2: session S-000001 goes back in time",
        ),
        ([""], r"holds no events.*make data"),
    ],
)
def test_bad_event_files_name_the_line(tmp_path, lines, message):
    path = write_lines(tmp_path / "events.json", lines)
    with pytest.raises(ValueError, match=message):
        load_events(path)


@pytest.mark.parametrize(
    "load, name",
    [(load_usage_grid, schema.USAGE_GRID_FILE), (load_events, schema.EVENTS_FILE)],
    ids=["grid", "events"],
)
def test_loaders_name_the_missing_file_and_make_data(
    no_override, monkeypatch, tmp_path, load, name
):
    # a data folder with only feedback.json and customer360.csv: found, but lacks this loader's file
    monkeypatch.setenv(DATA_DIR_ENV, str(make_data_dir(tmp_path / "only_two")))
    with pytest.raises(FileNotFoundError, match=rf"lacks {name}.*make data"):
        load()


def corrupt_line(number: int, **changes) -> list[str]:
    """The first lines of the committed feedback.json, with line ``number`` changed."""
    lines = (REPO_DATA / schema.FEEDBACK_FILE).read_text(encoding="utf-8").splitlines()[:60]
    record = json.loads(lines[number - 1])
    lines[number - 1] = json.dumps(record | changes)
    return lines


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"feedback_text": 42},
            r"line 7: feedback_text should be a non-empty string, got 42",
        ),
        (
            {"feedback_text": None},
            r"line 7: feedback_text should be a non-empty string, got None",
        ),
        (
            {"feedback_text": "  "},
            r"line 7: feedback_text should be a non-empty string, got '  '",
        ),
        (
            {"customer_id": None},
            r"line 7: customer_id should be a non-empty string, got None",
        ),
        (
            {"created_at": "not a date"},
            r"line 7: created_at should be an ISO date like 2025-04-01, got 'not a date'",
        ),
        ({"created_at": "2026-02-30"}, r"line 7: created_at should be an ISO date"),
        (
            {"category": "complaint"},
            r"line 7: category should be one of praise, .*'complaint'",
        ),
        ({"channel": ["chat"]}, r"line 7: channel should be one of email, .*\['chat'\]"),
        ({"rating": True}, r"line 7: rating should be an integer 1-5, got True"),
    ],
)
def test_each_corruption_of_a_feedback_row_names_file_line_and_field(
    tmp_path, changes, message
):
    path = write_lines(tmp_path / "feedback.json", corrupt_line(7, **changes))
    with pytest.raises(ValueError, match=rf"feedback.json, {message}"):
        load_feedback(path)


def test_a_repeated_feedback_id_names_both_lines(tmp_path):
    first = json.loads(corrupt_line(1)[2])["feedback_id"]
    path = write_lines(tmp_path / "feedback.json", corrupt_line(40, feedback_id=first))
    with pytest.raises(
        ValueError,
        match=rf"feedback.json, line 40: feedback_id should be unique, got '{first}' again "
        r"\(first on line 3\)",
    ):
        load_feedback(path)


def test_the_committed_feedback_file_keeps_the_data_cards_rules():
    frame = load_feedback()
    assert frame["feedback_id"].is_unique
    assert set(frame["category"]) <= set(schema.CATEGORIES)


def test_a_csv_row_with_an_extra_field_names_file_and_line(tmp_path):
    lines = (REPO_DATA / schema.CUSTOMER360_FILE).read_text(encoding="utf-8").splitlines()
    lines = lines[:80]
    lines[50] += ",surplus"
    path = write_lines(tmp_path / "customer360.csv", lines)
    with pytest.raises(
        ValueError,
        match=r"customer360.csv, line 51 \(data row 50\): 10 fields, the extra one\(s\) "
        r"\['surplus'\]; the header has 9 \(customer_id, tenure_months",
    ):
        load_customer360(path)


def test_a_missing_id_in_the_usage_grid_names_its_row(tmp_path):
    header = ",".join(schema.USAGE_GRID_COLUMNS)
    path = write_lines(tmp_path / "grid.csv", [header, ",0,0,3"] + grid_lines()[1:])
    with pytest.raises(
        ValueError, match=r"column customer_id has a missing value \(data row 1\)"
    ):
        load_usage_grid(path)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"session_id": 7}, r"line 1: session_id should be a non-empty string, got 7"),
        ({"customer_id": ""}, r"line 1: customer_id should be a non-empty string, got ''"),
        ({"timestamp": "now"}, r"line 1: timestamp should be ISO .*got 'now'"),
        (
            {"timestamp": "2026-03-02"},
            r"line 1: timestamp should be ISO .*got '2026-03-02'",
        ),
    ],
)
def test_bad_event_ids_and_moments_name_the_line(tmp_path, changes, message):
    path = write_lines(tmp_path / "events.json", [json.dumps(EVENT_LINE | changes)])
    with pytest.raises(ValueError, match=message):
        load_events(path)


def test_a_csv_row_with_a_field_too_few_names_file_and_line(tmp_path):
    lines = (REPO_DATA / schema.CUSTOMER360_FILE).read_text(encoding="utf-8").splitlines()
    lines = lines[:20]
    lines[10] = lines[10].rsplit(",", 1)[0]
    path = write_lines(tmp_path / "customer360.csv", lines)
    with pytest.raises(
        ValueError,
        match=r"customer360.csv, line 11 \(data row 10\): 8 fields; the header has 9",
    ):
        load_customer360(path)
