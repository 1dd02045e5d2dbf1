"""The usage grid: hourly active users per customer over the week before renewal (``usage_grid.csv``)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from transformer_lab.cloudwave.draws import hour_share, poisson
from transformer_lab.cloudwave.schema import USAGE_GRID_COLUMNS

N_GRID_CUSTOMERS = 300
USAGE_SEED = 168  # 7 days × 24 hours


def _count(rng: random.Random, mean: float) -> int:
    """A count with the given mean: Poisson when small, its normal approximation when large."""
    if mean < 30.0:
        return poisson(rng, mean)
    return int(round(max(0.0, rng.gauss(mean, math.sqrt(mean)))))


def generate_usage_grid(
    customers: Sequence[dict[str, object]],
    n: int = N_GRID_CUSTOMERS,
    seed: int = USAGE_SEED,
) -> list[dict[str, object]]:
    """Hourly active users in the last week before renewal for ``n`` of ``customers`` (long format).

    One dict per (customer, day_of_week 0=Monday … 6, hour 0 … 23), keyed as ``USAGE_GRID_COLUMNS``,
    in customer-id order: ``n`` × 168 rows. Each team works a nine-hour day from its own start hour
    (7–10, its time zone) with a lunch dip, little at night and a team-specific weekend level; the
    level follows its ``logins_30d`` per seat. Churners fade out: their activity falls day by day.
    """
    if not customers:
        raise ValueError(
            "generate_usage_grid needs at least one customer row, got an empty sequence"
        )
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(customers)), min(n, len(customers))))
    rows = []
    for index in chosen:
        customer = customers[index]
        seats = int(customer["seats"])
        busy_share = min(
            0.9, int(customer["logins_30d"]) / seats / 12.0
        )  # seats active in a busy hour
        start = rng.choice((7, 8, 8, 9, 9, 9, 10))
        weekend = rng.choice((0.03, 0.05, 0.1, 0.25))
        fade = rng.uniform(0.55, 0.9) if customer["churned"] else 0.0
        for day in range(7):
            level = (weekend if day >= 5 else 1.0) * (1.0 - fade * day / 6)
            for hour in range(24):
                mean = seats * busy_share * level * hour_share(hour - start)
                rows.append(
                    {
                        "customer_id": customer["customer_id"],
                        "day_of_week": day,
                        "hour": hour,
                        "active_users": min(seats, _count(rng, mean)),
                    }
                )
    return rows


def usage_grid_csv(rows: Sequence[dict[str, object]]) -> str:
    """Format usage-grid rows as CSV text (header, comma-separated, ``\\n`` line ends)."""
    lines = [",".join(USAGE_GRID_COLUMNS)]
    lines += [
        f"{r['customer_id']},{r['day_of_week']:d},{r['hour']:d},{r['active_users']:d}"
        for r in rows
    ]
    return "\n".join(lines) + "\n"
