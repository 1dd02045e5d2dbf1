"""The explorers' data: every state computed by the package, rounded once, exported compactly."""

from __future__ import annotations

import html as html_module
import json
import re

import matplotlib
import pytest
import torch
from tokenizers import Tokenizer

from transformer_lab import explorers
from transformer_lab.attention import attention, max_weight_by_width, soft_join
from transformer_lab.explorers import (
    Explorer,
    ExplorerWidget,
    head_explorer,
    head_sets,
    head_states,
    log_temperatures,
    mask_explorer,
    mask_states,
    merge_explorer,
    merge_states,
    palette,
    temperature_explorer,
    temperature_states,
    visible_states,
    width_explorer,
    width_states,
)
from transformer_lab.plotting import SEQUENTIAL_CMAP
from transformer_lab.set_classifier import (
    SetClassifier,
    build_set_classifier,
    largest_key_attention,
)
from transformer_lab.set_task import largest_key_index, make_sets
from transformer_lab.tokenizer import (
    TINY_CORPUS,
    merges,
    train_bpe_tokenizer,
    train_byte_level_bpe_tokenizer,
)


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
    shown = [state["temperature"] for state in data["states"]]
    # the warm end first, then only temperatures that change the table; the last one is the
    # first that looks like the hard join, and nothing colder would look different
    every = temperature_states(query_keys, keys, values, exact, temperatures)
    assert shown == temperatures[: len(shown)] and 2 <= len(shown) < len(temperatures)
    assert data["states"][-1]["equal"] and not data["states"][-2]["equal"]
    assert all(
        state["weights"] == every[-1]["weights"] for state in every[len(shown) - 1 :]
    )
    assert data["exact"] == exact.tolist()
    assert len(explorer.json()) < 5000  # a few kB
    html = explorer._repr_html_()
    assert '<div class="tl-explorer" data-explorer="temperature" hidden>' in html
    assert '<label for="tl-temperature-step">' in html
    assert 'id="tl-temperature-step"' in html and f'max="{len(shown) - 1}"' in html
    prompt = f"slide from τ = 1 down to {data['states'][-1]['label']}"
    assert prompt in explorer.prompt and html_module.escape(explorer.prompt) in html
    assert "<noscript>" in html
    assert 'aria-live="polite"' in html
    assert repr(explorer).startswith("Explorer: cool the soft join down to the hard join (")
    assert "once this cell has run in Jupyter" in repr(explorer)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_an_explorer_shows_as_a_widget_its_html_and_a_line_of_text():
    explorer = width_explorer([4, 16], n_keys=4, seed=0)
    bundle = explorer._repr_mimebundle_()
    assert set(bundle) == {WIDGET_VIEW, "text/html", "text/plain"}
    assert bundle["text/html"] == explorer._repr_html_()
    assert bundle["text/plain"] == repr(explorer)
    widget = explorer.widget()
    assert isinstance(widget, ExplorerWidget)
    assert bundle[WIDGET_VIEW]["model_id"] == widget.model_id
    # Displayed again, the same widget: one model in the kernel per explorer.
    assert explorer._repr_mimebundle_()[WIDGET_VIEW] == bundle[WIDGET_VIEW]
    # The widget draws the very panel the HTML book draws.
    assert widget.panel == explorer._repr_html_()


def test_the_widget_runs_the_html_books_own_script():
    script = explorers.CHECKOUT_SCRIPT.read_text(encoding="utf-8")
    module = explorers.widget_module()
    assert script in module  # the whole script, unchanged
    assert "// EXPLORERS_JS" not in module
    assert module.rstrip().endswith("export default { render };")
    assert ExplorerWidget("<p>x</p>")._esm == module


def test_a_missing_script_is_named(monkeypatch, tmp_path):
    monkeypatch.setattr(explorers, "CHECKOUT_SCRIPT", tmp_path / "explorers.js")
    with pytest.raises(FileNotFoundError, match="explorers.js is neither in the package"):
        explorers.explorers_script()


def test_visible_states_drop_a_state_that_shows_what_the_one_before_did():
    query_keys, keys, values, exact = plans_join()
    states = temperature_states(
        query_keys, keys, values, exact, [1.0, 1.0, 0.5, 0.01, 0.001]
    )
    kept = visible_states(states)
    assert [state["temperature"] for state in kept] == [1.0, 0.5, 0.01]


def test_explorer_json_cannot_close_its_script_element():
    explorer = Explorer("demo", "a title", "", {"label": "</script><b>"}, "try", "look")
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


def test_width_states_are_the_figures_draws_averaged_by_rank():
    widths = [4, 64, 1024]
    states = width_states(widths, n_keys=8, trials=50, seed=1)
    figure = max_weight_by_width(widths, n_keys=8, trials=50, seed=1)
    generator = torch.Generator().manual_seed(1)
    for i, (state, width) in enumerate(zip(states, widths)):
        q = torch.randn(50, 1, width, generator=generator)
        k = torch.randn(50, 8, width, generator=generator)
        scores = q @ k.transpose(-2, -1)
        assert state["width"] == width
        for name, scaled in (("raw", scores), ("scaled", scores / width**0.5)):
            ranked = torch.softmax(scaled, -1).sort(-1, descending=True).values
            row = state[name]
            assert torch.allclose(
                torch.tensor(row["weights"]), ranked.mean((0, 1)), atol=5e-4
            )
            assert abs(sum(row["weights"]) - 1) <= 5e-4 * 8
            assert row["weights"] == sorted(row["weights"], reverse=True)
            assert row["scores"] == sorted(row["scores"], reverse=True)
            assert row["std"] == round(scaled.std().item(), 2)
        # the average largest weight is the figure's point, to the rounding shown
        assert state["raw"]["largest"] == round(figure["unscaled"][i], 3)
        assert state["scaled"]["largest"] == round(figure["scaled"][i], 3)
    # Without the scale the scores spread with the width; with it they do not.
    assert states[-1]["raw"]["std"] > 10 * states[-1]["scaled"]["std"]


def test_width_explorer_offers_every_width_and_the_switch():
    explorer = width_explorer([4, 16, 1024], n_keys=16, trials=20, seed=0)
    html = explorer._repr_html_()
    assert '<option value="2">1024</option>' in html
    assert '<input type="checkbox" id="tl-width-scaled" checked>' in html
    assert '<label for="tl-width-scaled">' in html and '<label for="tl-width-d">' in html
    data = exported(explorer)
    assert [state["width"] for state in data["states"]] == [4, 16, 1024]
    assert data["trials"] == 20 and "averaged over 20 draws" in html
    largest = [state["raw"]["largest"] for state in data["states"]]
    assert f"climbs from {largest[0]:.2f} to {largest[-1]:.2f}" in explorer.prompt
    assert len(explorer.json()) < 5000


def test_width_states_name_bad_widths():
    with pytest.raises(ValueError, match="each width"):
        width_states([4, 0])
    with pytest.raises(ValueError, match="trials"):
        width_states([4], trials=0)


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
    assert right["empty_rows"] == 0 and right["agree"]
    # the two tables part exactly where a row has no key left
    for state in states.values():
        assert state["agree"] == (state["empty_rows"] == 0) == (state["error"] is None)


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
    assert "in the other 13 of the 16 settings the two agree" in explorer.prompt
    assert len(explorer.json()) < 6000
    with pytest.raises(ValueError, match="L = 3 tokens"):
        mask_explorer(CHAPTER_X, tokens=["a", "b", "c"], max_padding=1)
    with pytest.raises(ValueError, match="max_padding must leave a real token"):
        mask_states(CHAPTER_X, max_padding=4)


# Chapter 3's head explorer, on an untrained (seeded) transformer and a few small sets.
HEAD_SETS = make_sets(24, seed=5)


def untrained_heads() -> SetClassifier:
    return build_set_classifier("transformer", seed=1)


def test_head_states_are_the_models_own_weights_rounded():
    model = untrained_heads()
    x, padding, y = HEAD_SETS
    sets = [0, 3, 7]
    states = head_states(model, x, padding, y, sets)
    weights = model.attention_weights(x[sets], padding[sets])  # (3, H, L, L)
    share = largest_key_attention(model, x[sets], padding[sets])
    with torch.no_grad():
        probability = torch.sigmoid(model.eval()(x[sets], padding[sets]))
    for s, (state, index) in enumerate(zip(states, sets)):
        real = ~padding[index]
        assert state["set"] == index
        assert state["padding"] == "".join("1" if p else "0" for p in padding[index])
        assert state["length"] == int(real.sum())
        assert state["winner"] == int(largest_key_index(x, padding)[index])
        assert state["label"] == int(y[index])
        assert state["probability"] == round(probability[s].item(), 3)
        assert state["right"] == bool((probability[s] > 0.5) == (y[index] == 1))
        assert state["uniform"] == round(1 / int(real.sum()), 3)
        assert len(state["heads"]) == weights.shape[1] == model.encoder.self_attn.num_heads
        for i, token in enumerate(state["tokens"]):
            if real[i]:
                assert torch.allclose(torch.tensor(token), x[index, i], atol=5e-3)
            else:
                assert token is None
        for h, head in enumerate(state["heads"]):
            assert head["share"] == round(share["per_head"][s, h].item(), 3)
            shown = [row for row in head["weights"] if row is not None]
            assert len(head["weights"]) == x.shape[1]  # L rows, padded queries as None
            assert torch.allclose(torch.tensor(shown), weights[s, h][real], atol=5e-4)
            for i, row in enumerate(head["weights"]):
                if row is None:
                    assert not real[i] and head["top_keys"][i] is None
                    continue
                # every real query's row sums to 1 over the real keys; padding gets exactly 0
                assert abs(sum(row) - 1) <= 5e-4 * len(row)
                assert all(w == 0.0 for w, real_key in zip(row, real) if not real_key)
                assert head["top_keys"][i] == int(weights[s, h, i].argmax())
            tops = [key for key in head["top_keys"] if key is not None]
            assert head["winner_top"] == tops.count(state["winner"])


def test_head_states_leave_the_models_mode_alone():
    x, padding, y = HEAD_SETS
    for training in (True, False):
        model = untrained_heads().train(training)
        head_states(model, x, padding, y, [0])
        assert model.training == training


def test_head_sets_offer_set_0_the_mistakes_the_hesitant_then_the_first_sets():
    model = untrained_heads()
    x, padding, y = HEAD_SETS
    with torch.no_grad():
        wrong = ((model.eval()(x, padding) > 0).float() != y).nonzero().flatten().tolist()
    assert len(wrong) >= 3  # an untrained model gets plenty wrong: the test can fail
    share = largest_key_attention(model, x, padding)["per_head"].mean(dim=1)
    least = share.argsort(stable=True).tolist()[:2]
    chosen = head_sets(model, x, padding, y, count=7, wrong=2, hesitant=2)
    indices = [entry["set"] for entry in chosen]
    assert len(indices) == len(set(indices)) == 7 and indices[0] == 0
    expected = list(dict.fromkeys([0, *wrong[:2], *least]))
    assert indices[: len(expected)] == expected
    others = [i for i in range(len(y)) if i not in expected]
    assert indices[len(expected) :] == others[: 7 - len(expected)]
    for entry in chosen:
        assert ("the model is wrong" in entry["why"]) == (entry["set"] in wrong)
        assert ("heads hesitate" in entry["why"]) == (entry["set"] in least)
    # a model with no mistakes among the sets: set 0, the hesitant, then the first sets
    right = [i for i in range(len(y)) if i not in wrong]
    perfect = head_sets(
        model, x[right], padding[right], y[right], count=4, wrong=2, hesitant=1
    )
    assert all("the model is wrong" not in entry["why"] for entry in perfect)
    assert sum("heads hesitate" in entry["why"] for entry in perfect) == 1


def test_head_explorer_offers_labelled_controls_and_compact_data():
    model = untrained_heads()
    x, padding, y = HEAD_SETS
    explorer = head_explorer(model, x, padding, y, count=8, wrong=2, hesitant=2)
    data = exported(explorer)
    assert data == json.loads(json.dumps(explorer.data))
    assert len(data["states"]) == 8
    html = explorer._repr_html_()
    assert '<div class="tl-explorer" data-explorer="heads" hidden>' in html
    assert '<label for="tl-heads-set">' in html and 'id="tl-heads-set"' in html
    for h in range(model.encoder.self_attn.num_heads):
        assert f'<label for="tl-heads-head-{h}">head {h}</label>' in html
        assert f'id="tl-heads-head-{h}"' in html
    assert "<legend>Head</legend>" in html
    for state in data["states"]:
        if not state["right"] and state["set"] != 0:
            assert "the model is wrong" in state["why"]
        mark = f" ({'; '.join(state['why'])})" if state["why"] else ""
        assert f">set {state['set']}{mark}</option>" in html
    least = min(data["states"], key=lambda s: sum(h["share"] for h in s["heads"]))
    assert f"on set {least['set']} only" in explorer.prompt
    assert 'aria-live="polite"' in html
    assert len(explorer.json()) < 8000  # a few kB: 8 sets, 2 heads, at most 8 × 8 weights
    assert repr(explorer).startswith("Explorer: pick a validation set and a head: ")
    assert "once this cell has run in Jupyter" in repr(explorer)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"model": build_set_classifier("DeepSets")}, ValueError, "has no attention"),
        ({"model": torch.nn.Linear(2, 1)}, TypeError, "model must be a SetClassifier"),
        ({"y": torch.zeros(3)}, ValueError, r"y must have shape \(B,\) = \(24,\)"),
        ({"y": torch.full((24,), 2.0)}, ValueError, "y must hold only the classes 0 and 1"),
        ({"x": torch.zeros(24, 8, 3)}, ValueError, "x"),
        ({"sets": [0, 24]}, ValueError, "each set must be an index below B=24, got 24"),
        ({"sets": []}, ValueError, "sets is empty"),
    ],
)
def test_head_states_name_bad_input(change, error, message):
    x, padding, y = HEAD_SETS
    arguments = {
        "model": untrained_heads(),
        "x": x,
        "padding": padding,
        "y": y,
        "sets": [0, 1],
    } | change
    with pytest.raises(error, match=message):
        head_states(**arguments)


def test_head_sets_name_bad_counts():
    model = untrained_heads()
    x, padding, y = HEAD_SETS
    with pytest.raises(ValueError, match="count must be at most the 24 sets given, got 25"):
        head_sets(model, x, padding, y, count=25)
    with pytest.raises(ValueError, match=r"1 \+ wrong \+ hesitant must be at most count=3"):
        head_sets(model, x, padding, y, count=3, wrong=2, hesitant=1)


# Chapter 5's merge stepper, on the tiny corpus and a sentence it never saw.
SENTENCE = "my dog reads the whole sentence"


@pytest.fixture(scope="module")
def tiny_tokenizer():
    return train_bpe_tokenizer(TINY_CORPUS, vocab_size=80)


def test_merge_states_run_from_characters_to_the_trained_tokenizer(tiny_tokenizer):
    learned = merges(tiny_tokenizer)
    states = merge_states(tiny_tokenizer, SENTENCE)
    assert len(states) == len(learned) + 1
    first, last = states[0], states[-1]
    assert first["tokens"].split() == list(SENTENCE.replace(" ", ""))  # one per character
    assert first["merge"] is None and first["made"] == 0
    assert last["tokens"].split() == tiny_tokenizer.encode(SENTENCE).tokens
    assert last["vocab_size"] == tiny_tokenizer.get_vocab_size()
    words = len(SENTENCE.split())
    for k, state in enumerate(states):
        tokens = state["tokens"].split(" ")
        assert state["merges"] == k
        assert state["vocab_size"] == tiny_tokenizer.get_vocab_size() - len(learned) + k
        assert state["count"] == len(tokens)
        assert state["per_word"] == round(len(tokens) / words, 2)
        assert "".join(tokens) == SENTENCE.replace(" ", "")  # nothing lost, nothing added
        if k:
            assert state["merge"] == list(learned[k - 1])
            assert state["made"] == tokens.count("".join(learned[k - 1]))
            # a merge only ever joins tokens: the count never grows
            assert state["count"] <= states[k - 1]["count"]
    # some merges change the sentence and some do not: the stepper has something to show
    assert any(s["made"] for s in states) and not all(s["made"] for s in states[1:])
    for k, state in enumerate(states):
        # the word boundaries: each word's tokens spell it
        tokens, at = state["tokens"].split(" "), 0
        for word, size in zip(SENTENCE.split(), state["word_sizes"], strict=True):
            assert "".join(tokens[at : at + size]) == word
            at += size
        assert at == len(tokens)
        assert state["changed"] == (k == 0 or state["tokens"] != states[k - 1]["tokens"])
        assert state["changed"] == (k == 0 or state["made"] > 0)


def test_merge_states_match_a_tokenizer_trained_to_that_step(tiny_tokenizer):
    """Step k is what training with k merges would have produced (same corpus, same trainer)."""
    base = tiny_tokenizer.get_vocab_size() - len(merges(tiny_tokenizer))
    states = merge_states(tiny_tokenizer, SENTENCE)
    for k in (0, 5, 20):
        shorter = train_bpe_tokenizer(TINY_CORPUS, vocab_size=base + k)
        assert merges(shorter) == merges(tiny_tokenizer)[:k]
        assert states[k]["tokens"].split() == shorter.encode(SENTENCE).tokens


def test_merge_explorer_offers_a_labelled_slider_and_compact_data(tiny_tokenizer):
    explorer = merge_explorer(tiny_tokenizer, SENTENCE)
    data = exported(explorer)
    assert data == json.loads(json.dumps(explorer.data))
    assert data["sentence"] == SENTENCE and data["words"] == 6
    html = explorer._repr_html_()
    assert '<div class="tl-explorer" data-explorer="merges" hidden>' in html
    assert '<label for="tl-merges-step">' in html
    assert f'max="{len(merges(tiny_tokenizer))}"' in html
    assert 'aria-live="polite"' in html
    changes = [state["merges"] for state in data["states"][1:] if state["changed"]]
    ticks = "".join(f'<option value="{k}"></option>' for k in [0, *changes])
    assert f'<datalist id="tl-merges-ticks">{ticks}</datalist>' in html
    last = len(data["states"]) - 1
    assert f"between the {len(changes)} merges" in explorer.prompt
    assert f"the other {last - len(changes)} of the {last} merges" in explorer.prompt
    assert len(explorer.json()) < 12000  # 53 states, one sentence each


def test_merge_states_name_bad_input(tiny_tokenizer):
    with pytest.raises(ValueError, match="sentence must be a str with at least one word"):
        merge_states(tiny_tokenizer, "   ")
    with pytest.raises(TypeError, match="tokenizer must be a tokenizers.Tokenizer"):
        merge_states("not a tokenizer", SENTENCE)
    # a vocabulary not in training order cannot be cut after merge k: refused, not misread
    spec = json.loads(tiny_tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    first = "".join(merges(tiny_tokenizer)[0])
    second = "".join(merges(tiny_tokenizer)[1])
    vocab[first], vocab[second] = vocab[second], vocab[first]
    with pytest.raises(ValueError, match="not ordered as training builds it"):
        merge_states(Tokenizer.from_str(json.dumps(spec)), SENTENCE)


def test_merge_states_work_for_byte_level_bpe_too():
    # its tokens carry the space as Ġ inside a token, never a space itself
    byte_level = train_byte_level_bpe_tokenizer(TINY_CORPUS, vocab_size=256 + 1 + 10)
    assert merge_states(byte_level, SENTENCE)[-1]["tokens"].split() == (
        byte_level.encode(SENTENCE).tokens
    )


def test_no_page_points_at_an_explorer_by_its_place():
    """Explorers do not print (the panel starts hidden; print shows the static figure), so no
    page's prose sends the reader to "the explorer above" or "below": on paper there is none."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pages = [
        root / "intro.md",
        *root.glob("chapters/*.md"),
        *root.glob("exercises/*/index.md"),
    ]
    pointer = re.compile(r"\b(explorer|slider)s? (above|below)\b", re.IGNORECASE)
    found = [
        f"{page.relative_to(root)}: {match.group(0)}"
        for page in pages
        for match in pointer.finditer(" ".join(page.read_text(encoding="utf-8").split()))
    ]
    assert not found, found
