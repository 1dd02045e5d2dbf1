"""The explorers' data: every state computed by the package, rounded once, exported compactly."""

from __future__ import annotations

import json
import re

import matplotlib
import pytest
import torch

from transformer_lab.attention import attention, soft_join
from transformer_lab.explorers import (
    Explorer,
    log_temperatures,
    mask_explorer,
    mask_states,
    palette,
    temperature_explorer,
    temperature_states,
    width_explorer,
    width_states,
)
from transformer_lab.plotting import SEQUENTIAL_CMAP


def plans_join():
    """Four unit-length plan keys, five tickets whose queries are their plan's key."""
    generator = torch.Generator().manual_seed(3)
    keys = torch.nn.functional.normalize(
        torch.randn(4, 6, generator=generator, dtype=torch.float64), dim=1
    )
    own = [1, 3, 0, 1, 2]
    values = torch.tensor(
        [[9.0, 72.0], [19.0, 24.0], [39.0, 8.0], [79.0, 2.0]], dtype=torch.float64
    )
    return keys[own], keys, values, values[own]


def exported(explorer: Explorer) -> dict:
    """The JSON inside the explorer's HTML, parsed back."""
    found = re.search(
        r'<script type="application/json" class="tl-explorer-data">(.*?)</script>',
        explorer._repr_html_(),
        flags=re.DOTALL,
    )
    assert found, "the explorer's HTML holds no data script"
    return json.loads(found.group(1))


def test_log_temperatures_run_from_warm_to_cold_in_even_log_steps():
    temperatures = log_temperatures(warm=1.0, coldest=0.001, per_decade=4)
    assert temperatures[0] == 1.0 and temperatures[-1] == 0.001
    assert len(temperatures) == 13
    assert temperatures[4] == 0.1 and temperatures[8] == 0.01
    assert all(a > b for a, b in zip(temperatures, temperatures[1:]))


def test_log_temperatures_reject_a_cold_end_above_the_warm_one():
    with pytest.raises(ValueError, match="coldest must be below warm"):
        log_temperatures(warm=0.01, coldest=1.0)


def test_palette_is_the_books_colormap():
    stops = palette()
    cmap = matplotlib.colormaps[SEQUENTIAL_CMAP]
    assert stops[0] == matplotlib.colors.to_hex(cmap(0.0))
    assert stops[-1] == matplotlib.colors.to_hex(cmap(1.0))
    assert all(re.fullmatch(r"#[0-9a-f]{6}", stop) for stop in stops)


def test_temperature_states_are_soft_join_rounded():
    query_keys, keys, values, exact = plans_join()
    temperatures = [1.0, 0.1, 0.001]
    states = temperature_states(query_keys, keys, values, exact, temperatures)
    for state, temperature in zip(states, temperatures):
        mixed, weights = soft_join(query_keys, keys, values, temperature)
        assert state["temperature"] == temperature
        assert state["label"] == f"τ = {temperature:g}"
        assert torch.allclose(torch.tensor(state["weights"]), weights.float(), atol=5e-4)
        assert torch.allclose(
            torch.tensor(state["mixed"], dtype=torch.float64), mixed, atol=5e-3
        )
        gaps = (mixed - exact).abs().amax(dim=0)
        assert torch.allclose(
            torch.tensor(state["gaps"], dtype=torch.float64), gaps, atol=5e-3
        )
    assert not states[0]["equal"] and states[0]["gaps"][0] > 1
    assert states[-1]["equal"] and states[-1]["gaps"] == [0.0, 0.0]
    assert states[-1]["weights"][0] == [0.0, 1.0, 0.0, 0.0]


def test_temperature_explorer_exports_every_state_compactly():
    query_keys, keys, values, exact = plans_join()
    temperatures = log_temperatures()
    explorer = temperature_explorer(
        query_keys,
        keys,
        values,
        exact,
        row_labels=list("abcde"),
        key_labels=list("ABCD"),
        value_labels=["price $", "SLA h"],
        temperatures=temperatures,
    )
    data = exported(explorer)
    assert data == json.loads(json.dumps(explorer.data))
    assert [state["temperature"] for state in data["states"]] == temperatures
    assert data["exact"] == exact.tolist()
    assert len(explorer.json()) < 5000  # a few kB
    html = explorer._repr_html_()
    assert '<div class="tl-explorer" data-explorer="temperature" hidden>' in html
    assert '<label for="tl-temperature-step">' in html
    assert 'id="tl-temperature-step"' in html and f'max="{len(temperatures) - 1}"' in html
    assert 'aria-live="polite"' in html
    assert "interactive in the HTML book" in repr(explorer)


def test_explorer_json_cannot_close_its_script_element():
    explorer = Explorer("demo", "a title", "", {"label": "</script><b>"})
    assert "</script><b>" not in explorer.json()
    assert json.loads(explorer.json()) == {"label": "</script><b>"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"row_labels": list("abcd")}, "row_labels needs 5 labels, got 4"),
        ({"key_labels": list("ABC")}, "key_labels needs 4 labels, got 3"),
        ({"temperatures": [1.0]}, "at least 2 temperatures"),
        ({"exact": torch.zeros(5, 3)}, r"exact must have shape \(Lq, Dv\) = \(5, 2\)"),
    ],
)
def test_temperature_explorer_names_bad_arguments(change, message):
    query_keys, keys, values, exact = plans_join()
    arguments = {
        "exact": exact,
        "row_labels": list("abcde"),
        "key_labels": list("ABCD"),
        "value_labels": ["price $", "SLA h"],
        "temperatures": [1.0, 0.1],
    } | change
    with pytest.raises(ValueError, match=message):
        temperature_explorer(query_keys, keys, values, **arguments)


def test_width_states_are_softmax_and_attention_of_one_query():
    widths = [4, 64, 1024]
    states = width_states(widths, n_keys=8, seed=1)
    generator = torch.Generator().manual_seed(1)
    for state, width in zip(states, widths):
        q = torch.randn(1, 1, width, generator=generator)
        k = torch.randn(1, 8, width, generator=generator)
        scores = (q @ k.transpose(-2, -1))[0, 0]
        raw, scaled = torch.softmax(scores, -1), torch.softmax(scores / width**0.5, -1)
        assert state["width"] == width
        assert torch.allclose(torch.tensor(state["raw"]["weights"]), raw, atol=5e-4)
        assert torch.allclose(torch.tensor(state["scaled"]["weights"]), scaled, atol=5e-4)
        assert torch.allclose(torch.tensor(state["raw"]["scores"]), scores, atol=5e-3)
        assert state["raw"]["top_key"] == int(raw.argmax())
        assert state["scaled"]["largest"] == round(scaled.max().item(), 3)
    # Without the scale the scores spread with the width; with it they do not.
    assert states[-1]["raw"]["std"] > 10 * states[-1]["scaled"]["std"]


def test_width_explorer_offers_every_width_and_the_switch():
    explorer = width_explorer([4, 16, 1024], n_keys=16, seed=0)
    html = explorer._repr_html_()
    assert '<option value="2">1024</option>' in html
    assert '<input type="checkbox" id="tl-width-scaled" checked>' in html
    assert '<label for="tl-width-scaled">' in html and '<label for="tl-width-d">' in html
    assert [state["width"] for state in exported(explorer)["states"]] == [4, 16, 1024]
    assert len(explorer.json()) < 5000


def test_width_states_name_bad_widths():
    with pytest.raises(ValueError, match="each width"):
        width_states([4, 0])


CHAPTER_X = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]])


def test_mask_states_are_attention_and_pytorchs_masked_softmax():
    states = mask_states(CHAPTER_X, max_padding=2)
    assert len(states) == 3 * 2 * 2
    right = states["2-right-causal"]
    assert right["padding"] == "0011"
    assert right["ignore"] == ["0111", "0011", "0011", "0011"]
    padding = torch.tensor([[False, False, True, True]])
    _, weights = attention(CHAPTER_X, CHAPTER_X, CHAPTER_X, padding, causal=True)
    assert torch.allclose(torch.tensor(right["book"]), weights[0], atol=5e-4)
    assert right["pytorch"] == right["book"] and right["error"] is None
    assert right["empty_rows"] == 0


def test_left_padding_under_a_causal_mask_gives_nan_and_the_books_error():
    state = mask_states(CHAPTER_X, max_padding=1)["1-left-causal"]
    assert state["padding"] == "1000" and state["ignore"][0] == "1111"
    assert state["pytorch"][0] == [None] * 4  # NaN, exported as null
    assert state["empty_rows"] == 1 and state["book"] is None
    with pytest.raises(ValueError) as raised:
        attention(
            CHAPTER_X,
            CHAPTER_X,
            CHAPTER_X,
            torch.tensor([[True, False, False, False]]),
            True,
        )
    assert state["error"] == str(raised.value)
    # Without the causal mask the same padding leaves every query a key.
    assert mask_states(CHAPTER_X, max_padding=1)["1-left-full"]["empty_rows"] == 0


def test_mask_explorer_offers_labelled_controls_and_checks_its_input():
    explorer = mask_explorer(CHAPTER_X, tokens=["a", "b", "c", "d"], max_padding=3)
    html = explorer._repr_html_()
    for control in ("tl-mask-count", "tl-mask-left", "tl-mask-right", "tl-mask-causal"):
        assert f'<label for="{control}">' in html and f'id="{control}"' in html
    assert "<legend>Padding on the</legend>" in html
    assert len(explorer.json()) < 6000
    with pytest.raises(ValueError, match="L = 3 tokens"):
        mask_explorer(CHAPTER_X, tokens=["a", "b", "c"], max_padding=1)
    with pytest.raises(ValueError, match="max_padding must leave a real token"):
        mask_states(CHAPTER_X, max_padding=4)
