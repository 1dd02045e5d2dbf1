"""Finding and loading the CloudWave data sets, from any working directory.

``find_data_dir()`` looks, in order:

1. in the folder named by the environment variable ``CLOUDWAVE_DATA_DIR``, if it is set;
2. for a ``data/`` folder holding the files, in the working directory and each folder above it;
3. the same, walking up from where this package is installed (the repository's ``data/``).

The loaders check the columns and say which file, line and column is wrong instead of failing
later with a ``KeyError`` deep inside a page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from transformer_lab.cloudwave import CUSTOMER360_COLUMNS, CUSTOMER360_FILE, FEEDBACK_COLUMNS, FEEDBACK_FILE

DATA_DIR_ENV = "CLOUDWAVE_DATA_DIR"
DATA_FILES = (FEEDBACK_FILE, CUSTOMER360_FILE)
REGENERATE_HINT = "run `make data` (or `python -m transformer_lab.cloudwave`) from the repository root"


def _holds_data(folder: Path, files: Iterable[str]) -> bool:
    return all((folder / name).is_file() for name in files)


def _walk_up(start: Path, files: tuple[str, ...]) -> Path | None:
    """The first ``data/`` folder holding ``files`` in ``start`` or one of its parents."""
    for folder in (start, *start.parents):
        candidate = folder / "data"
        if _holds_data(candidate, files):
            return candidate
    return None


def find_data_dir(start: Path | str | None = None, files: Iterable[str] = DATA_FILES) -> Path:
    """Return the folder that holds the CloudWave data files (``feedback.json``, ``customer360.csv``).

    ``start`` replaces the working directory as the first place to walk up from (tests use it).
    Raises ``FileNotFoundError`` naming every place searched and how to regenerate the data.
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
    for origin in starts:
        found = _walk_up(origin, files)
        if found is not None:
            return found
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


def read_feedback_records(path: Path | str) -> list[dict[str, object]]:
    """Parse a JSON-lines feedback file into dicts, checking every line.

    Raises ``ValueError`` with the 1-based line number for a line that is not JSON, not a JSON
    object, lacks one of ``FEEDBACK_COLUMNS`` or carries a rating that is not an integer 1–5.
    Blank lines are skipped.
    """
    path = Path(path)
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}, line {number}: not valid JSON ({error.msg}, column {error.colno})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}, line {number}: expected a JSON object, got {type(record).__name__}")
            _require_columns(f"{path}, line {number},", record, FEEDBACK_COLUMNS)
            rating = record["rating"]
            if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
                raise ValueError(f"{path}, line {number}: rating should be an integer 1-5, got {rating!r}")
            records.append(record)
    if not records:
        raise ValueError(f"{path} holds no feedback records; {REGENERATE_HINT}")
    return records


def load_feedback(path: Path | str | None = None) -> pd.DataFrame:
    """The feedback comments as a DataFrame with the columns of ``FEEDBACK_COLUMNS`` (in order).

    ``path`` defaults to ``find_data_dir() / "feedback.json"``. Text columns are ``str``,
    ``rating`` is ``int64``; extra fields in the file are kept after the standard ones.
    """
    path = Path(path) if path is not None else find_data_dir() / FEEDBACK_FILE
    frame = pd.DataFrame.from_records(read_feedback_records(path))
    extra = [name for name in frame.columns if name not in FEEDBACK_COLUMNS]
    frame = frame[list(FEEDBACK_COLUMNS) + extra]
    return frame.astype({name: str for name in FEEDBACK_COLUMNS if name != "rating"} | {"rating": "int64"})


def load_customer360(path: Path | str | None = None) -> pd.DataFrame:
    """The Customer 360 table, one row per customer, columns of ``CUSTOMER360_COLUMNS`` (in order).

    ``path`` defaults to ``find_data_dir() / "customer360.csv"``. Raises ``ValueError`` for an
    empty file, a missing column, a missing value or a churn label other than 0/1.
    """
    path = Path(path) if path is not None else find_data_dir() / CUSTOMER360_FILE
    try:
        frame = pd.read_csv(path, dtype={"customer_id": str, "plan_tier": str})
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path} is empty; {REGENERATE_HINT}") from None
    _require_columns(str(path), frame.columns, CUSTOMER360_COLUMNS)
    frame = frame[list(CUSTOMER360_COLUMNS)]
    if frame.isna().any().any():
        column = frame.columns[frame.isna().any()][0]
        row = int(frame[column].isna().to_numpy().nonzero()[0][0])
        raise ValueError(f"{path}: column {column} has a missing value (data row {row + 1})")
    if not frame["churned"].isin([0, 1]).all():
        raise ValueError(f"{path}: churned should hold only 0 and 1, got {sorted(frame['churned'].unique())}")
    return frame
