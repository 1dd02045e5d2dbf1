"""Random draws and the working-day profile shared by the CloudWave generators."""

from __future__ import annotations

import math
import random


def poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw by Knuth's method (fine for the small means used here)."""
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def hour_share(hours_into_day: int) -> float:
    """Share of a team's busy-hour activity at ``hours_into_day`` after its working day starts."""
    if 0 <= hours_into_day <= 8:
        return 0.6 if hours_into_day in (3, 4) else 1.0  # working hours, with a lunch dip
    return {-1: 0.25, 9: 0.3, 10: 0.15, 11: 0.08}.get(hours_into_day, 0.02)
