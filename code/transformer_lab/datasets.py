"""Finding and loading the CloudWave data sets, from any working directory.

``find_data_dir()`` looks, in order:

1. in the folder named by the environment variable ``CLOUDWAVE_DATA_DIR``, if it is set;
2. for a ``data/`` folder holding the files, in the working directory and each folder above it;
3. the same, walking up from where this package is installed (the repository's ``data/``).

If the first ``data/`` found is not the repository's own (a stale copy in a parent folder, say),
``find_data_dir`` warns with the path it used. ``CLOUDWAVE_DATA_DIR`` chooses a folder explicitly.

The loaders check every row against the rules of the data card (``data/README.md``): the columns,
each value's type and range, the allowed categories, unique ids and well-formed dates. A bad
value is a ``ValueError`` that names the file, the line (JSON lines) or data row (CSV) and the
column, instead of a wrong number on a page or a failure later inside pandas or scikit-learn.
The rules are the data card's, not today's exact rows: a regenerated file passes as long as it
keeps them. (A hand-written checker, not a schema library such as pandera: pandera reports a
frame's index and a table of failure cases, without the file or the line a reader opens, and
its checks run after pandas has already turned a malformed value into something else.)
One rule for byte-order marks: a UTF-8 byte-order mark at the start of a file (as Excel and
Notepad write them) is accepted and ignored, in the JSON-lines files and the CSV files alike.
"""

from __future__ import annotations

import csv
import datetime
import json
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from transformer_lab.cloudwave.schema import (
    CATEGORIES,
    CHANNELS,
    CUSTOMER360_COLUMNS,
    CUSTOMER360_FILE,
    EVENT_TYPES,
    EVENTS_COLUMNS,
    EVENTS_FILE,
    FEEDBACK_COLUMNS,
    FEEDBACK_FILE,
    PLAN_TIERS,
    USAGE_GRID_COLUMNS,
    USAGE_GRID_FILE,
)
from transformer_lab.validation import is_int

DATA_DIR_ENV = "CLOUDWAVE_DATA_DIR"
DATA_FILES = (FEEDBACK_FILE, CUSTOMER360_FILE)
REGENERATE_HINT = (
    "run `make data` (or `python -m transformer_lab.cloudwave`) from the repository root"
)
# UTF-8; a byte-order mark at the start is skipped (the same for every format).
ENCODING = "utf-8-sig"
# Allowed values of the numeric Customer 360 columns: (lowest, highest or None, whole numbers only).
CUSTOMER360_RANGES: dict[str, tuple[float, float | None, bool]] = {
    "tenure_months": (0, None, True),
    "seats": (1, None, True),
    "monthly_spend": (0.0, None, False),
    "support_tickets_90d": (0, None, True),
    "logins_30d": (0, None, True),
    "nps_score": (0, 10, True),
    "churned": (0, 1, True),
}


ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
ISO_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


def is_text(value: object) -> bool:
    """A string with something in it besides spaces (ids, categories, comments)."""
    return isinstance(value, str) and bool(value.strip())


def is_iso_date(value: object) -> bool:
    """A real calendar date written ``YYYY-MM-DD`` (``2026-02-30`` is not one)."""
    if not isinstance(value, str) or not ISO_DATE.fullmatch(value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def iso_moment(value: object) -> datetime.datetime | None:
    """``value`` as a date-time if it is one written ``YYYY-MM-DDTHH:MM:SS``, else ``None``."""
    if not isinstance(value, str) or not ISO_MOMENT.fullmatch(value):
        return None
    try:
        return datetime.datetime.fromisoformat(value)
    except ValueError:
        return None


def is_rating(value: object) -> bool:
    """A whole number of stars, 1-5 (``True`` and ``"5"`` are not)."""
    return is_int(value) and 1 <= value <= 5


# The data card's rule for each field of feedback.json: (what it must be, the test of a value).
FEEDBACK_RULES: dict[str, tuple[str, Callable[[object], bool]]] = {
    "feedback_id": ("a non-empty string", is_text),
    "customer_id": ("a non-empty string", is_text),
    "created_at": ("an ISO date like 2025-04-01", is_iso_date),
    "channel": (f"one of {', '.join(CHANNELS)}", lambda value: value in CHANNELS),
    "category": (f"one of {', '.join(CATEGORIES)}", lambda value: value in CATEGORIES),
    "feedback_text": ("a non-empty string", is_text),
    "rating": ("an integer 1-5", is_rating),
}


def _holds_data(folder: Path, files: Iterable[str]) -> bool:
    return all((folder / name).is_file() for name in files)


def _walk_up(start: Path, files: tuple[str, ...]) -> Path | None:
    """The first ``data/`` folder holding ``files`` in ``start`` or one of its parents."""
    for folder in (start, *start.parents):
        candidate = folder / "data"
        if _holds_data(candidate, files):
            return candidate
    return None


def find_data_dir(
    start: Path | str | None = None, files: Iterable[str] = DATA_FILES
) -> Path:
    """Return the folder that holds the CloudWave data files (``feedback.json``, ``customer360.csv``).

    ``start`` replaces the working directory as the first place to walk up from (tests use it).
    Raises ``FileNotFoundError`` naming every place searched and how to regenerate the data.
    Warns (``UserWarning``, naming both folders) when the folder found from ``start`` is not the
    one found from the package, i.e. not the repository's own ``data/``.
    """
    files = tuple(files)
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        folder = Path(override).expanduser().resolve()
        if not _holds_data(folder, files):
            missing = [name for name in files if not (folder / name).is_file()]
            raise FileNotFoundError(
                f"{DATA_DIR_ENV}={override!r} but {folder} lacks {', '.join(missing)}; "
                f"point it at a folder holding {', '.join(files)}, unset it, or {REGENERATE_HINT}"
            )
        return folder
    starts = [Path(start or Path.cwd()).resolve(), Path(__file__).resolve().parent]
    found, own = (_walk_up(origin, files) for origin in starts)
    if found is not None and own is not None and found != own:
        warnings.warn(
            f"using the data folder {found} (found above {starts[0]}), not the repository's own "
            f"{own}; set {DATA_DIR_ENV} to choose a folder explicitly",
            stacklevel=2,
        )
    if found is not None or own is not None:
        return found or own
    raise FileNotFoundError(
        f"no data/ folder holding {', '.join(files)} above {starts[0]} or above the package at "
        f"{starts[1]}, and {DATA_DIR_ENV} is not set; {REGENERATE_HINT}"
    )


def _require_columns(source: str, found: Iterable[str], expected: Iterable[str]) -> None:
    found = list(found)
    missing = [name for name in expected if name not in found]
    if missing:
        raise ValueError(
            f"{source} is missing column(s) {', '.join(missing)}; expected {', '.join(expected)}, "
            f"found {', '.join(found) or 'none'}"
        )


def _json_objects(
    path: Path, columns: Iterable[str]
) -> Iterator[tuple[int, dict[str, object]]]:
    """Yield (1-based line number, record) for each non-blank line of a JSON-lines file.

    Raises ``ValueError`` naming the file and line for a line that is not JSON, not a JSON object,
    or lacks one of ``columns``.
    """
    with path.open(encoding=ENCODING) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{path}, line {number}: not valid JSON ({error.msg}, column {error.colno}); "
                    f"a cut-off or edited file? {REGENERATE_HINT}"
                ) from None
            if not isinstance(record, dict):
                raise ValueError(
                    f"{path}, line {number}: expected a JSON object, got {type(record).__name__}"
                )
            _require_columns(f"{path}, line {number},", record, columns)
            yield number, record


def check_record(
    path: Path,
    number: int,
    record: dict[str, object],
    rules: dict[str, tuple[str, Callable[[object], bool]]],
) -> None:
    """Raise ``ValueError`` naming the file, line and field of the first value breaking ``rules``."""
    for column, (expected, holds) in rules.items():
        value = record[column]
        if isinstance(value, (list, dict)) or not holds(value):
            raise ValueError(
                f"{path}, line {number}: {column} should be {expected}, got {value!r}"
            )


def require_unique(path: Path, column: str, numbered: Iterable[tuple[int, object]]) -> None:
    """Raise ``ValueError`` naming both lines when a value of ``column`` repeats."""
    first_seen: dict[object, int] = {}
    for number, value in numbered:
        if value in first_seen:
            raise ValueError(
                f"{path}, line {number}: {column} should be unique, got {value!r} again "
                f"(first on line {first_seen[value]})"
            )
        first_seen[value] = number


def read_feedback_records(path: Path | str) -> list[dict[str, object]]:
    """Parse a JSON-lines feedback file into dicts, checking every line against the data card.

    Raises ``ValueError`` naming the file, the 1-based line and the field for a line that is not
    JSON, not a JSON object, lacks one of ``FEEDBACK_COLUMNS``, breaks one of ``FEEDBACK_RULES``
    (a text that is not a string or is empty, a date that is not an ISO date, a channel or
    category not on the card, a rating that is not an integer 1-5), or repeats a ``feedback_id``.
    Blank lines are skipped.
    """
    path = Path(path)
    numbered = []
    for number, record in _json_objects(path, FEEDBACK_COLUMNS):
        check_record(path, number, record, FEEDBACK_RULES)
        numbered.append((number, record))
    if not numbered:
        raise ValueError(f"{path} holds no feedback records; {REGENERATE_HINT}")
    require_unique(
        path,
        "feedback_id",
        ((number, record["feedback_id"]) for number, record in numbered),
    )
    return [record for _, record in numbered]


def load_feedback(path: Path | str | None = None) -> pd.DataFrame:
    """The feedback comments as a DataFrame with the columns of ``FEEDBACK_COLUMNS`` (in order).

    ``path`` defaults to ``find_data_dir() / "feedback.json"``. Text columns are ``str``,
    ``rating`` is ``int64``; extra fields in the file are kept after the standard ones.
    """
    path = Path(path) if path is not None else find_data_dir() / FEEDBACK_FILE
    frame = pd.DataFrame.from_records(read_feedback_records(path))
    extra = [name for name in frame.columns if name not in FEEDBACK_COLUMNS]
    frame = frame[list(FEEDBACK_COLUMNS) + extra]
    return frame.astype(
        {name: str for name in FEEDBACK_COLUMNS if name != "rating"} | {"rating": "int64"}
    )


def load_customer360(path: Path | str | None = None) -> pd.DataFrame:
    """The Customer 360 table, one row per customer, columns of ``CUSTOMER360_COLUMNS`` (in order).

    ``path`` defaults to ``find_data_dir() / "customer360.csv"``. Raises ``ValueError`` naming the
    file, data row and column for an empty file, a missing column, a missing value, a repeated
    ``customer_id``, a plan tier not in ``PLAN_TIERS``, or a number that is not a number, not whole
    where it must be, or outside ``CUSTOMER360_RANGES`` (e.g. a churn label other than 0/1).
    """
    path = Path(path) if path is not None else find_data_dir() / CUSTOMER360_FILE
    frame = _read_csv(path, {"customer_id": str, "plan_tier": str})
    _require_columns(str(path), frame.columns, CUSTOMER360_COLUMNS)
    frame = frame[list(CUSTOMER360_COLUMNS)]
    _require_no_missing(path, frame)
    for column, (low, high, whole) in CUSTOMER360_RANGES.items():
        frame[column] = _numbers(path, frame, column, low, high, whole)
    _require_values(
        path,
        frame,
        "plan_tier",
        ~frame["plan_tier"].isin(PLAN_TIERS),
        f"one of {', '.join(PLAN_TIERS)}",
    )
    _require_values(
        path,
        frame,
        "customer_id",
        frame["customer_id"].duplicated(),
        "a customer_id not seen before",
    )
    return frame


def _require_no_missing(path: Path, frame: pd.DataFrame) -> None:
    """Raise ``ValueError`` naming the file, column and data row of the first empty cell (or the
    line of a row with fewer fields than the header, which pandas fills with empty cells)."""
    if frame.isna().any().any():
        ragged = _ragged_row(path)
        if ragged:
            raise ValueError(ragged)
        column = frame.columns[frame.isna().any()][0]
        row = int(frame[column].isna().to_numpy().nonzero()[0][0])
        raise ValueError(
            f"{path}: column {column} has a missing value (data row {row + 1}); "
            f"a cut-off or edited file? {REGENERATE_HINT}"
        )


def _require_values(
    path: Path, frame: pd.DataFrame, column: str, bad: pd.Series, expected: str
) -> None:
    """Raise ``ValueError`` naming the file, the first data row where ``bad`` holds, and the column."""
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise ValueError(
            f"{path}: column {column} should hold {expected}, got {str(frame[column].iloc[row])!r} (data row {row + 1})"
        )


def _numbers(
    path: Path,
    frame: pd.DataFrame,
    column: str,
    low: float,
    high: float | None,
    whole: bool,
) -> pd.Series:
    """``frame[column]`` as int64 (``whole``) or float64 after checking every value is in range."""
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = (
        ~np.isfinite(values)
        | (values < low)
        | (values > (high if high is not None else np.inf))
    )
    if whole:
        bad |= values != values.round()
    kind = "whole numbers" if whole else "numbers"
    allowed = f"{low}-{high}" if high is not None else f"{low} or more"
    _require_values(path, frame, column, bad, f"{kind} {allowed}")
    return values.astype("int64" if whole else "float64")


def _read_csv(path: Path, dtype: dict[str, type]) -> pd.DataFrame:
    """Read a CSV file with the package's encoding rule.

    An empty file, or a row with more fields than the header, is a ``ValueError`` naming the
    file and the line (pandas' own message names neither the file nor the field).
    """
    try:
        return pd.read_csv(path, dtype=dtype, encoding=ENCODING)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty; {REGENERATE_HINT}") from None
    except pd.errors.ParserError as error:
        raise ValueError(
            _ragged_row(path) or f"{path}: not a valid CSV file ({error})"
        ) from None


def _ragged_row(path: Path) -> str | None:
    """A message naming the first line of ``path`` whose number of fields is not the header's."""
    with path.open(encoding=ENCODING, newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        for row in reader:
            if row and len(row) != len(header):
                extra = row[len(header) :]
                found = f", the extra one(s) {extra}" if extra else ""
                return (
                    f"{path}, line {reader.line_num} (data row {reader.line_num - 1}): "
                    f"{len(row)} fields{found}; the header has {len(header)} "
                    f"({', '.join(header)})"
                )
    return None


def load_usage_grid(path: Path | str | None = None) -> pd.DataFrame:
    """Hourly active users per customer in long format, columns of ``USAGE_GRID_COLUMNS`` (in order).

    ``path`` defaults to ``usage_grid.csv`` in ``find_data_dir``. Raises ``ValueError`` for an
    empty file, a missing column, a value that is not a whole number, a day outside 0–6, an hour
    outside 0–23, a negative count, a repeated cell, or a customer without all 7 × 24 cells.
    """
    path = (
        Path(path)
        if path is not None
        else find_data_dir(files=(USAGE_GRID_FILE,)) / USAGE_GRID_FILE
    )
    frame = _read_csv(path, {"customer_id": str})
    _require_columns(str(path), frame.columns, USAGE_GRID_COLUMNS)
    frame = frame[list(USAGE_GRID_COLUMNS)]
    if frame.empty:
        raise ValueError(f"{path} has a header but no rows; {REGENERATE_HINT}")
    _require_no_missing(path, frame)
    for column, low, high in (
        ("day_of_week", 0, 6),
        ("hour", 0, 23),
        ("active_users", 0, None),
    ):
        frame[column] = _numbers(path, frame, column, low, high, whole=True)
    cells = frame.duplicated(["customer_id", "day_of_week", "hour"])
    if cells.any():
        row = int(cells.to_numpy().nonzero()[0][0])
        raise ValueError(
            f"{path}: data row {row + 1} repeats a (customer_id, day_of_week, hour) cell"
        )
    counts = frame.groupby("customer_id", sort=False).size()
    if (counts != 7 * 24).any():
        customer = counts.index[(counts != 7 * 24).to_numpy()][0]
        raise ValueError(
            f"{path}: customer {customer} has {counts[customer]} cells, expected 7 × 24 = 168"
        )
    return frame


def usage_grid_array(frame: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """Pivot a ``load_usage_grid`` frame into customer ids and an array (customers, 7 days, 24 hours).

    Customers come in first-seen order; ``array[i, d, h]`` is the active users of customer ``i`` on
    day ``d`` (0 = Monday) at hour ``h``.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            f"frame must be a pandas DataFrame from load_usage_grid, got {type(frame).__name__}"
        )
    _require_columns("frame", frame.columns, USAGE_GRID_COLUMNS)
    ids = list(pd.unique(frame["customer_id"]))
    grid = np.zeros((len(ids), 7, 24), dtype=np.int64)
    rows = pd.Index(ids).get_indexer(frame["customer_id"])
    grid[rows, frame["day_of_week"].to_numpy(), frame["hour"].to_numpy()] = frame[
        "active_users"
    ].to_numpy()
    return ids, grid


# The data card's rule for the id fields of events.json (the event and timestamp are checked
# with the session order in ``load_events``).
EVENTS_ID_RULES: dict[str, tuple[str, Callable[[object], bool]]] = {
    "session_id": ("a non-empty string", is_text),
    "customer_id": ("a non-empty string", is_text),
}


def load_events(path: Path | str | None = None) -> pd.DataFrame:
    """Product events, one row per event, columns of ``EVENTS_COLUMNS`` (in order), in file order.

    ``path`` defaults to ``events.json`` in ``find_data_dir``. Every line must be a JSON object with
    the four fields, non-empty string ids, an ISO ``timestamp`` and an ``event`` from
    ``EVENT_TYPES``; within a session
    the timestamps must not go backwards. Raises ``ValueError`` naming the line otherwise.
    """
    path = (
        Path(path)
        if path is not None
        else find_data_dir(files=(EVENTS_FILE,)) / EVENTS_FILE
    )
    records, last_seen = [], {}
    for number, record in _json_objects(path, EVENTS_COLUMNS):
        check_record(path, number, record, EVENTS_ID_RULES)
        if record["event"] not in EVENT_TYPES:
            raise ValueError(
                f"{path}, line {number}: event should be one of {', '.join(EVENT_TYPES)}, got {record['event']!r}"
            )
        moment = iso_moment(record["timestamp"])
        if moment is None:
            raise ValueError(
                f"{path}, line {number}: timestamp should be ISO like 2026-03-02T09:15:00, got {record['timestamp']!r}"
            )
        session = record["session_id"]
        if session in last_seen and moment < last_seen[session]:
            raise ValueError(
                f"{path}, line {number}: session {session} goes back in time ({record['timestamp']})"
            )
        last_seen[session] = moment
        records.append({key: record[key] for key in EVENTS_COLUMNS})
    if not records:
        raise ValueError(f"{path} holds no events; {REGENERATE_HINT}")
    return pd.DataFrame.from_records(records, columns=list(EVENTS_COLUMNS)).astype(str)


def event_sequences(events: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Each session's events as ids in time order, padded: (session ids, ids (S, L), lengths (S,)).

    Event ``EVENT_TYPES[k]`` gets id ``k + 1``; id 0 pads the sequences shorter than the longest, L.
    Sessions come in first-seen order and keep their events in file order.
    """
    if not isinstance(events, pd.DataFrame):
        raise TypeError(
            f"events must be a pandas DataFrame from load_events, got {type(events).__name__}"
        )
    _require_columns("events", events.columns, EVENTS_COLUMNS)
    unknown = sorted(set(events["event"]) - set(EVENT_TYPES))
    if unknown:
        raise ValueError(
            f"events hold unknown event type(s) {unknown}; expected {list(EVENT_TYPES)}"
        )
    codes = events["event"].map({name: k + 1 for k, name in enumerate(EVENT_TYPES)})
    # One row per session, in first-seen order; each event's column is its place in its session.
    rows, sessions = pd.factorize(events["session_id"], sort=False)
    columns = pd.Series(rows).groupby(rows).cumcount().to_numpy()
    lengths = np.bincount(rows, minlength=len(sessions)).astype(np.int64)
    padded = np.zeros((len(sessions), int(lengths.max(initial=0))), dtype=np.int64)
    padded[rows, columns] = codes.to_numpy(dtype=np.int64)
    return [str(session) for session in sessions], padded, lengths
