"""The minimal detectable effect of chapter 4's power calculation."""

import math

import pytest

from transformer_lab.power import (
    detectable_effect,
    detectable_effect_over_runs,
    power_over_runs,
)


def test_detectable_effect_matches_the_normal_formula():
    # (1.959964 + 0.841621) / sqrt(100)
    assert detectable_effect(1.0, 100) == pytest.approx(0.280159, abs=1e-6)
    assert detectable_effect(0.5, 400) == pytest.approx(0.280159 / 4, abs=1e-6)
    assert detectable_effect(1.0, 100, power=0.5) == pytest.approx(0.1959964, abs=1e-6)


def test_the_t_shortcut_overstates_power_at_three_runs():
    # t(0.975, 2) = 4.302653, t(0.8, 2) = 1.060660: the shortcut's effect has power 0.77
    shortcut = (4.302653 + 1.060660) / math.sqrt(3)
    assert power_over_runs(shortcut, 1.0, 3) == pytest.approx(0.77, abs=0.01)
    exact = detectable_effect_over_runs(1.0, 3)
    assert exact > shortcut
    assert power_over_runs(exact, 1.0, 3) == pytest.approx(0.8, abs=1e-6)


def test_power_over_runs_grows_with_the_effect_and_the_runs():
    assert power_over_runs(0.0, 1.0, 6) == pytest.approx(0.05, abs=1e-6)
    assert power_over_runs(1.0, 1.0, 6) < power_over_runs(2.0, 1.0, 6)
    assert power_over_runs(1.0, 1.0, 6) < power_over_runs(1.0, 1.0, 12)
    assert power_over_runs(-1.5, 1.0, 6) == pytest.approx(power_over_runs(1.5, 1.0, 6))


def test_detectable_effect_over_runs_needs_two_runs_and_nears_the_normal_one():
    assert detectable_effect_over_runs(1.0, 200) < detectable_effect(1.0, 200) * 1.01
    with pytest.raises(ValueError, match="runs"):
        detectable_effect_over_runs(1.0, 1)


@pytest.mark.parametrize(
    "sd, level, power", [(-1.0, 0.95, 0.8), (1.0, 1.0, 0.8), (1.0, 0.95, 0.0)]
)
def test_bad_settings_are_refused(sd, level, power):
    with pytest.raises(ValueError):
        detectable_effect(sd, 10, level, power)
