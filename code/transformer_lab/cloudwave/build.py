"""Write the four CloudWave data sets: ``python -m transformer_lab.cloudwave [--out DIR]``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from transformer_lab.cloudwave.customer360 import customers_csv, generate_customers
from transformer_lab.cloudwave.events import events_jsonl, generate_events
from transformer_lab.cloudwave.feedback import feedback_jsonl, generate_feedback
from transformer_lab.cloudwave.schema import (
    CUSTOMER360_FILE,
    EVENTS_FILE,
    FEEDBACK_FILE,
    USAGE_GRID_FILE,
)
from transformer_lab.cloudwave.usage import generate_usage_grid, usage_grid_csv


def write_data(out_dir: Path | str) -> list[Path]:
    """Generate the four data sets and write them into ``out_dir``; return their paths.

    Each data set draws from its own seeded ``random.Random``, so adding one never changes another.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    customers = generate_customers()
    feedback = generate_feedback([row["customer_id"] for row in customers])
    texts = {
        CUSTOMER360_FILE: customers_csv(customers),
        FEEDBACK_FILE: feedback_jsonl(feedback),
        USAGE_GRID_FILE: usage_grid_csv(generate_usage_grid(customers)),
        EVENTS_FILE: events_jsonl(generate_events(customers)),
    }
    paths = []
    for name, text in texts.items():
        paths.append(out / name)
        paths[-1].write_bytes(text.encode("utf-8"))
    return paths


def default_out_dir() -> Path:
    """The repository's ``data/`` folder (three levels above this module)."""
    return Path(__file__).resolve().parents[3] / "data"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Regenerate the synthetic CloudWave data sets."
    )
    parser.add_argument(
        "--out", type=Path, default=default_out_dir(), help="folder to write into"
    )
    args = parser.parse_args(argv)
    for path in write_data(args.out):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
