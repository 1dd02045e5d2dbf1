"""The Customer 360 table: one row per customer, with the hidden churn rule behind ``churned``."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from transformer_lab.cloudwave.draws import poisson
from transformer_lab.cloudwave.schema import CUSTOMER360_COLUMNS, PLAN_TIERS

N_CUSTOMERS = 5000
CUSTOMER_SEED = 360

PLAN_SHARE = (0.42, 0.30, 0.19, 0.09)
PRICE_PER_SEAT = {"Starter": 9.0, "Team": 19.0, "Business": 39.0, "Enterprise": 79.0}
SEAT_RANGE = {
    "Starter": (1, 5),
    "Team": (3, 30),
    "Business": (10, 160),
    "Enterprise": (60, 1500),
}


def _log_uniform_int(rng: random.Random, low: int, high: int) -> int:
    """An integer spread evenly on a log scale between ``low`` and ``high`` (both included)."""
    value = math.exp(math.log(low) + rng.random() * (math.log(high + 1) - math.log(low)))
    return min(high, int(value))


def churn_logit(
    tenure_months: int,
    plan_tier: str,
    seats: int,
    support_tickets_90d: int,
    logins_30d: int,
    nps_score: int,
) -> float:
    """The hidden churn risk (log-odds) before noise: thresholds and plan × usage interactions.

    - new customers (under 6 months) leave more, and so do customers at the 12-month renewal;
    - paid team plans with few logins per seat (unused seats) leave much more — but only on
      Team/Business: a Starter user logs in alone, an Enterprise contract is sticky;
    - many tickets hurt only when the customer is also unhappy (NPS 6 or less);
    - promoters (NPS 9–10) stay.
    """
    logins_per_seat = logins_30d / seats
    logit = -3.2
    logit += 1.8 if tenure_months < 6 else 0.0
    logit += 1.2 if 11 <= tenure_months <= 13 else 0.0
    if plan_tier in ("Team", "Business") and logins_per_seat < 2.5:
        logit += 3.0
    if plan_tier == "Starter" and logins_30d < 5:
        logit += 2.2
    if support_tickets_90d >= 4 and nps_score <= 6:
        logit += 2.4
    logit -= 1.5 if plan_tier == "Enterprise" else 0.0
    logit -= 1.0 if nps_score >= 9 else 0.0
    return logit


def generate_customers(
    n: int = N_CUSTOMERS, seed: int = CUSTOMER_SEED
) -> list[dict[str, object]]:
    """``n`` Customer 360 rows as dicts with the keys of ``CUSTOMER360_COLUMNS``, in that order."""
    rng = random.Random(seed)
    rows = []
    for number in range(1, n + 1):
        plan = rng.choices(PLAN_TIERS, weights=PLAN_SHARE)[0]
        seats = _log_uniform_int(rng, *SEAT_RANGE[plan])
        tenure = min(72, 1 + int(-math.log(1.0 - rng.random()) * 20))
        discount = 1.0 - (
            0.25 * rng.random() if plan == "Enterprise" else 0.05 * rng.random()
        )
        spend = seats * PRICE_PER_SEAT[plan] * discount + (
            15.0 if rng.random() < 0.2 else 0.0
        )
        engagement = rng.gauss(
            0.0, 1.0
        )  # latent: how much the team actually uses CloudWave
        troubled = rng.random() < 0.2  # latent: a customer with a rough integration
        tickets = poisson(rng, (0.6 + 0.5 * math.log(seats)) * (3.0 if troubled else 1.0))
        logins_per_seat = max(0.0, 5.0 * math.exp(0.9 * engagement))
        logins = (
            poisson(rng, logins_per_seat * seats)
            if seats <= 60
            else int(
                round(
                    max(
                        0.0,
                        rng.gauss(
                            logins_per_seat * seats,
                            math.sqrt(logins_per_seat * seats + 1.0),
                        ),
                    )
                )
            )
        )
        satisfaction = 7.2 + 1.1 * engagement - 0.35 * tickets + rng.gauss(0.0, 1.6)
        nps = max(0, min(10, int(round(satisfaction))))
        logit = churn_logit(tenure, plan, seats, tickets, logins, nps) + rng.gauss(0.0, 0.5)
        churned = 1 if rng.random() < 1.0 / (1.0 + math.exp(-logit)) else 0
        rows.append(
            {
                "customer_id": f"C-{number:05d}",
                "tenure_months": tenure,
                "plan_tier": plan,
                "seats": seats,
                "monthly_spend": round(spend, 2),
                "support_tickets_90d": tickets,
                "logins_30d": logins,
                "nps_score": nps,
                "churned": churned,
            }
        )
    return rows


def customers_csv(rows: Sequence[dict[str, object]]) -> str:
    """Format Customer 360 rows as CSV text (header, comma-separated, ``\\n`` line ends)."""
    lines = [",".join(CUSTOMER360_COLUMNS)]
    for row in rows:
        lines.append(
            f"{row['customer_id']},{row['tenure_months']:d},{row['plan_tier']},{row['seats']:d},"
            f"{row['monthly_spend']:.2f},{row['support_tickets_90d']:d},{row['logins_30d']:d},"
            f"{row['nps_score']:d},{row['churned']:d}"
        )
    return "\n".join(lines) + "\n"
