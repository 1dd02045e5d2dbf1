"""How large an effect an experiment can detect: the power calculation of chapter 4.

A comparison that cannot detect the effect it asks about can only return "no evidence", so the
book states, before reading a result, the smallest true difference its test would find with
probability ``power`` at two-sided level 1 − ``level`` (the *minimal detectable effect*):

    (q((1 + level) / 2) + q(power)) · sd / √n

with q the standard normal quantile, for n independent examples (``detectable_effect``).

For n runs whose spread is estimated from the runs themselves (the t test behind
``protocol.seed_interval``) the shortcut with Student-t quantiles overstates the power at small
n (at n = 3 the effect it names is found with probability 0.77, not 0.80). ``power_over_runs``
computes the power exactly, from the noncentral t distribution, and
``detectable_effect_over_runs`` solves it for the effect. The ``sd`` must come from a pilot or a
stated assumption, never from the runs the calculation vouches for: power computed after the
result from the result's own spread says nothing the interval does not.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import ndtri, stdtrit
from scipy.stats import nct

from transformer_lab.validation import require_int, require_number


def _check(sd: float, level: float, power: float) -> tuple[float, float, float]:
    return (
        require_number("sd", sd, minimum=0),
        require_number("level", level, above=0, below=1),
        require_number("power", power, above=0, below=1),
    )


def detectable_effect(sd: float, n: int, level: float = 0.95, power: float = 0.8) -> float:
    """Smallest mean difference that ``n`` independent paired differences of spread ``sd``
    detect with probability ``power`` at two-sided level 1 − ``level`` (normal quantiles)."""
    sd, level, power = _check(sd, level, power)
    n = require_int("n", n, minimum=1)
    return float((ndtri((1 + level) / 2) + ndtri(power)) * sd / math.sqrt(n))


def power_over_runs(effect: float, sd: float, runs: int, level: float = 0.95) -> float:
    """Probability that a two-sided one-sample t test at level 1 − ``level`` over ``runs``
    results of spread ``sd`` rejects "mean 0" when the true mean is ``effect`` (noncentral t
    with ``runs`` − 1 degrees of freedom; needs at least 2 runs)."""
    effect = require_number("effect", effect)
    sd, level, _ = _check(sd, level, 0.5)
    runs = require_int("runs", runs, minimum=2)
    if sd == 0:
        raise ValueError(
            "sd must be above 0: with no spread every nonzero effect is certain"
        )
    dof, shift = runs - 1, effect * math.sqrt(runs) / sd
    critical = float(stdtrit(dof, (1 + level) / 2))
    # each tail alone: SciPy returns NaN for a far tail, whose probability is 0 to float precision
    tails = (nct.sf(critical, dof, shift), nct.sf(critical, dof, -shift))
    return float(sum(0.0 if math.isnan(tail) else tail for tail in tails))


def detectable_effect_over_runs(
    sd: float, runs: int, level: float = 0.95, power: float = 0.8
) -> float:
    """The smallest true mean that ``runs`` results of spread ``sd`` detect with probability
    ``power`` at two-sided level 1 − ``level``: ``power_over_runs`` solved for the effect
    (exact; the Student-t shortcut overstates the power at few runs). Needs at least 2 runs."""
    sd, level, power = _check(sd, level, power)
    runs = require_int("runs", runs, minimum=2)
    if sd == 0:
        return 0.0
    high = sd
    while power_over_runs(high, sd, runs, level) < power:
        high *= 2
    return float(
        brentq(lambda e: power_over_runs(e, sd, runs, level) - power, 0.0, high, xtol=1e-12)
    )
