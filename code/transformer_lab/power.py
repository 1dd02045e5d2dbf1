"""How large an effect an experiment can detect: the power calculation of chapter 4.

A comparison that cannot detect the effect it asks about can only return "no evidence", so the
book states, before reading a result, the smallest true difference its test would find with
probability ``power`` at two-sided level 1 − ``level`` (the *minimal detectable effect*):

    (q((1 + level) / 2) + q(power)) · sd / √n

with q the standard normal quantile for n independent examples (``detectable_effect``), or the
Student-t quantile with n − 1 degrees of freedom for n runs whose sd is measured from the runs
themselves (``detectable_effect_over_runs``, the test behind ``protocol.seed_interval``).
"""

from __future__ import annotations

import math

from scipy.special import ndtri, stdtrit

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


def detectable_effect_over_runs(
    sd: float, runs: int, level: float = 0.95, power: float = 0.8
) -> float:
    """The same for ``runs`` results whose spread ``sd`` is estimated from the runs: Student-t
    quantiles with ``runs`` − 1 degrees of freedom (needs at least 2 runs)."""
    sd, level, power = _check(sd, level, power)
    runs = require_int("runs", runs, minimum=2)
    dof = runs - 1
    return float(
        (stdtrit(dof, (1 + level) / 2) + stdtrit(dof, power)) * sd / math.sqrt(runs)
    )
