"""Figures a reader can move: every state of an explorer, computed by the package when the page runs.

An explorer is a panel of native controls beside a table; ``_ext/static/explorers.js`` only
*shows* the state the controls select. Every number it shows is computed here, with the same
functions the chapter uses (chapter 1: ``soft_join``, ``attention``, ``mix_values``; chapter 3:
``SetClassifier.attention_weights`` and ``largest_key_attention``; chapter 5: the trained
tokenizer's own ``encode``), rounded once, and exported as compact JSON inside the cell's HTML
output, so nbval compares it with the reference. Nothing is interpolated and nothing is
recomputed in JavaScript.

Each explorer also says, in one line, what to try and what to notice; the numbers in that line
come from the same states. The panel starts ``hidden``: without JavaScript (and in print) the
reader sees the chapter's static figure, which stays on the page, and a ``<noscript>`` note
says where to look instead.

One script for every way in. The HTML book runs ``explorers.js`` on the page's panels (the
cell's ``text/html``). In a notebook (JupyterLab on Binder, a downloaded notebook) the same
output is also an anywidget, ``ExplorerWidget``, whose ES module (``explorers_widget.js``) runs
that same script on the same panel inside the widget; the build shows the ``text/html`` (the
widget's view has the lowest priority there, ``_config.yml``), nbval compares ``text/html`` and
``text/plain`` (it skips the widget's view, whose model id is random), and a front end without
widgets shows the ``text/html`` or the ``text/plain`` line.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

import anywidget
import matplotlib
import torch
import traitlets

from transformer_lab.attention import (
    attention,
    causal_mask,
    random_scores_by_width,
    soft_join,
)
from transformer_lab.plotting import SEQUENTIAL_CMAP
from transformer_lab.set_classifier import SetClassifier, largest_key_attention
from transformer_lab.set_task import check_sets, largest_key_index
from transformer_lab.tokenizer import Tokenizer, check_tokenizer, merges
from transformer_lab.validation import (
    require_binary_labels,
    require_int,
    require_number,
    require_texts,
)

WEIGHT_DECIMALS = 3
VALUE_DECIMALS = 2
COLOUR_STOPS = 11
SCRIPT = "explorers.js"
WIDGET_MODULE = "explorers_widget.js"
# Where the script lives in a clone of the repository (the HTML build serves it from there); a
# wheel built from the repository holds a copy beside this module (setup.py, build_py).
CHECKOUT_SCRIPT = Path(__file__).resolve().parents[2] / "_ext" / "static" / SCRIPT
SCRIPT_MARKER = "  // EXPLORERS_JS\n"


def log_temperatures(
    warm: float = 1.0, coldest: float = 0.001, per_decade: int = 4
) -> list[float]:
    """Temperatures from ``warm`` down to ``coldest``, ``per_decade`` steps per factor of 10."""
    warm = require_number("warm", warm, above=0)
    coldest = require_number("coldest", coldest, above=0)
    per_decade = require_int("per_decade", per_decade, minimum=1)
    if coldest >= warm:
        raise ValueError(
            f"coldest must be below warm, got coldest={coldest} and warm={warm}"
        )
    steps = round(math.log10(warm / coldest) * per_decade)
    return [float(f"{warm * 10 ** (-step / per_decade):.3g}") for step in range(steps + 1)]


def palette() -> list[str]:
    """The book's sequential colormap (plotting.SEQUENTIAL_CMAP) as hex stops from 0 to 1."""
    cmap = matplotlib.colormaps[SEQUENTIAL_CMAP]
    return [
        matplotlib.colors.to_hex(cmap(i / (COLOUR_STOPS - 1))) for i in range(COLOUR_STOPS)
    ]


def _rounded(tensor: torch.Tensor, decimals: int) -> list:
    """A tensor as nested lists of floats rounded to ``decimals`` (NaN as ``None``)."""

    def walk(item):
        if isinstance(item, list):
            return [walk(part) for part in item]
        return None if math.isnan(item) else round(item, decimals) + 0.0

    return walk(tensor.tolist())


def temperature_states(
    query_keys: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    exact: torch.Tensor,
    temperatures: Sequence[float],
) -> list[dict]:
    """One state per temperature: the soft join's weights (Lq, Lk) and blended values (Lq, Dv).

    query_keys (Lq, D), keys (Lk, D), values (Lk, Dv), as for ``soft_join``; exact (Lq, Dv) the
    hard join's values. Each state also holds the largest gap |blend - exact| per value column
    and whether the blend equals the exact join once rounded. Weights are rounded to
    WEIGHT_DECIMALS, values and gaps to VALUE_DECIMALS.
    """
    states = []
    for temperature in temperatures:
        mixed, weights = soft_join(query_keys, keys, values, temperature)
        gaps = (mixed - exact).abs().amax(dim=0)
        states.append(
            {
                "temperature": temperature,
                "label": f"τ = {temperature:g}",
                "weights": _rounded(weights, WEIGHT_DECIMALS),
                "mixed": _rounded(mixed, VALUE_DECIMALS),
                "gaps": _rounded(gaps, VALUE_DECIMALS),
                "equal": _rounded(mixed, VALUE_DECIMALS) == _rounded(exact, VALUE_DECIMALS),
            }
        )
    return states


def _looks_the_same(state: dict, before: dict) -> bool:
    """Whether two temperature states display the same rounded weights and blend."""
    return state["weights"] == before["weights"] and state["mixed"] == before["mixed"]


def visible_states(states: list[dict]) -> list[dict]:
    """``temperature_states`` without the states that display exactly what the one before did.

    Colder than the point where every weight rounds to 0 or 1, the table stops changing; a
    slider over those states would move and show nothing.
    """
    kept = states[:1]
    for state in states[1:]:
        if not _looks_the_same(state, kept[-1]):
            kept.append(state)
    return kept


def explorers_script() -> str:
    """The text of ``explorers.js``, the explorers' one script: the clone's, else the wheel's copy."""
    packaged = resources.files("transformer_lab").joinpath(SCRIPT)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    if CHECKOUT_SCRIPT.is_file():
        return CHECKOUT_SCRIPT.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"{SCRIPT} is neither in the package nor at {CHECKOUT_SCRIPT}: install the package "
        "from a clone of the book's repository (pip install -e .) or from its archive"
    )


@cache
def widget_module() -> str:
    """The anywidget's ES module: ``explorers_widget.js`` with ``explorers.js`` inside it."""
    adapter = resources.files("transformer_lab").joinpath(WIDGET_MODULE).read_text("utf-8")
    if adapter.count(SCRIPT_MARKER) != 1:
        raise ValueError(
            f"{WIDGET_MODULE} must hold the line {SCRIPT_MARKER!r} exactly once"
        )
    return adapter.replace(SCRIPT_MARKER, explorers_script() + "\n")


class ExplorerWidget(anywidget.AnyWidget):
    """An explorer as a Jupyter widget: ``panel`` is its HTML, drawn by the book's own script."""

    _esm = traitlets.Unicode().tag(sync=True)
    panel = traitlets.Unicode().tag(sync=True)

    def __init__(self, panel: str) -> None:
        super().__init__(_esm=widget_module(), panel=panel)


class Explorer:
    """An explorer's HTML (controls, an empty figure the script fills, the data as JSON).

    Displayed, it is the HTML (the book's page draws it) and a widget (a notebook draws it);
    its text is one line.
    """

    def __init__(
        self, kind: str, title: str, controls: str, data: dict, prompt: str, fallback: str
    ) -> None:
        self.kind = kind
        self.title = title
        self.controls = controls
        self.data = data
        self.prompt = prompt  # one line: what to try, what to notice
        self.fallback = fallback  # where a reader without JavaScript finds the same lesson
        self._widget: ExplorerWidget | None = None

    def widget(self) -> ExplorerWidget:
        """The explorer's widget, made once (every display of the explorer shows the same one)."""
        if self._widget is None:
            self._widget = ExplorerWidget(self._repr_html_())
        return self._widget

    def json(self) -> str:
        """The data, compact, safe inside a ``<script>`` element."""
        text = json.dumps(
            self.data, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        return text.replace("</", "<\\/")

    def _repr_html_(self) -> str:
        kind = html.escape(self.kind)
        return (
            f'<div class="tl-explorer" data-explorer="{kind}" hidden>'
            f'<p class="tl-explorer-title" id="tl-{kind}-title"><strong>Explorer:</strong> '
            f"{html.escape(self.title)}</p>"
            f'<p class="tl-prompt" id="tl-{kind}-prompt">{html.escape(self.prompt)}</p>'
            f'<div class="tl-controls" role="group" aria-labelledby="tl-{kind}-title">'
            f"{self.controls}</div>"
            f'<p class="tl-status" id="tl-{kind}-status" aria-live="polite"></p>'
            f'<div class="tl-figure" id="tl-{kind}-figure"></div>'
            f'<script type="application/json" class="tl-explorer-data">{self.json()}</script>'
            "</div>"
            f'<noscript><p class="tl-noscript">An explorer ({html.escape(self.title)}) needs '
            f"JavaScript, which is off: {html.escape(self.fallback)}</p></noscript>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        """The widget's view, the HTML and the text line (each front end picks what it draws)."""
        view, _ = self.widget()._repr_mimebundle_()
        return {**view, "text/html": self._repr_html_(), "text/plain": repr(self)}

    def __repr__(self) -> str:
        return (
            f"Explorer: {self.title} ({len(self.json())} characters of data). It moves in the "
            "HTML book, and here once this cell has run in Jupyter."
        )


def temperature_explorer(
    query_keys: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    exact: torch.Tensor,
    row_labels: list[str],
    key_labels: list[str],
    value_labels: list[str],
    temperatures: Sequence[float],
) -> Explorer:
    """A slider over ``temperatures`` (warm to cold) redrawing the soft join's weights and blend.

    query_keys (Lq, D), keys (Lk, D), values (Lk, Dv), exact (Lq, Dv): the hard join's values,
    shown beside the blend. One label per query row, per key and per value column. The slider
    offers only ``visible_states``: it stops at the first temperature whose table no colder one
    changes.
    """
    row_labels = require_texts("row_labels", row_labels)
    key_labels = require_texts("key_labels", key_labels)
    value_labels = require_texts("value_labels", value_labels)
    if len(temperatures) < 2:
        raise ValueError(
            f"the slider needs at least 2 temperatures, got {len(temperatures)}"
        )
    for name, labels, size in (
        ("row_labels", row_labels, query_keys.shape[0]),
        ("key_labels", key_labels, keys.shape[0]),
        ("value_labels", value_labels, values.shape[1]),
    ):
        if len(labels) != size:
            raise ValueError(f"{name} needs {size} labels, got {len(labels)}")
    if tuple(exact.shape) != (query_keys.shape[0], values.shape[1]):
        raise ValueError(
            f"exact must have shape (Lq, Dv) = ({query_keys.shape[0]}, {values.shape[1]}), "
            f"got {tuple(exact.shape)}"
        )
    states = visible_states(
        temperature_states(query_keys, keys, values, exact, temperatures)
    )
    if len(states) < 2:
        raise ValueError(
            f"every temperature in {list(temperatures)} gives the same table: start warmer"
        )
    data = {
        "rows": row_labels,
        "keys": key_labels,
        "values": value_labels,
        "exact": _rounded(exact, VALUE_DECIMALS),
        "states": states,
        "colours": palette(),
        "decimals": [WEIGHT_DECIMALS, VALUE_DECIMALS],
    }
    last = len(states) - 1
    warm, cold = states[0], states[-1]
    reached = next((state for state in states if state["equal"]), None)
    notice = (
        f"at {reached['label']} the blend equals the merge to the cent"
        if reached
        else f"at {cold['label']} the blend is still off the merge"
    )
    prompt = (
        f"Try: slide from {warm['label']} down to {cold['label']}. Notice: each ticket's "
        f"weight gathers on one plan; {notice}, and colder changes nothing."
    )
    controls = (
        '<label for="tl-temperature-step">Temperature τ (log scale, warm to cold)</label> '
        f'<input type="range" id="tl-temperature-step" min="0" max="{last}" step="1" value="0">'
        ' <output id="tl-temperature-value" for="tl-temperature-step"></output>'
    )
    return Explorer(
        "temperature",
        "cool the soft join down to the hard join",
        controls,
        data,
        prompt,
        "the figure above and the cooling table show the same temperatures.",
    )


def width_states(
    widths: Sequence[int], n_keys: int = 16, trials: int = 200, seed: int = 0
) -> list[dict]:
    """Per width D, the average softmax row of the √D experiment's draws, scaled and not.

    The draws are ``attention.random_scores_by_width``'s, the same as
    ``attention.max_weight_by_width`` makes with these arguments (the chapter's figure): raw
    scores (trials, 1, n_keys). "raw" is the softmax of the raw scores, "scaled" of the scores
    divided by √D, as ``attention`` scales them. Each row is sorted, largest weight first, and
    averaged over the draws: per rank (n_keys,) the average score and weight. Each also holds
    the scores' standard deviation over every draw and the average largest weight (the figure's
    point at that width).
    """
    trials = require_int("trials", trials, minimum=1)
    states = []
    for width, raw in random_scores_by_width(widths, n_keys, trials, seed):
        state = {"width": width}
        for name, scores in (("raw", raw), ("scaled", raw / math.sqrt(width))):
            weights = torch.softmax(scores, dim=-1)
            by_rank = weights.sort(dim=-1, descending=True)
            ranked_scores = scores.gather(-1, by_rank.indices)
            state[name] = {
                "scores": _rounded(ranked_scores.mean(dim=(0, 1)), VALUE_DECIMALS),
                "weights": _rounded(by_rank.values.mean(dim=(0, 1)), WEIGHT_DECIMALS),
                "std": _rounded(scores.std(), VALUE_DECIMALS),
                "largest": _rounded(weights.amax(dim=-1).mean(), WEIGHT_DECIMALS),
            }
        states.append(state)
    return states


def width_explorer(
    widths: Sequence[int], n_keys: int = 16, trials: int = 200, seed: int = 0
) -> Explorer:
    """A width selector and a scaling switch over ``width_states``: the average softmax row."""
    states = width_states(widths, n_keys, trials, seed)
    data = {
        "states": states,
        "trials": trials,
        "colours": palette(),
        "decimals": [WEIGHT_DECIMALS, VALUE_DECIMALS],
    }
    options = "".join(
        f'<option value="{i}">{state["width"]}</option>' for i, state in enumerate(states)
    )
    controls = (
        f'<span><label for="tl-width-d">Width d of q and k</label> '
        f'<select id="tl-width-d">{options}</select></span>'
        '<span><input type="checkbox" id="tl-width-scaled" checked> '
        '<label for="tl-width-scaled">divide the scores by √d</label></span>'
    )
    first, last = states[0], states[-1]
    decimals = f".{WEIGHT_DECIMALS - 1}f"
    scaled = [state["scaled"]["largest"] for state in states]
    prompt = (
        f"Try: switch the scale off, then step d from {first['width']} to {last['width']}. "
        f"Notice: unscaled, the scores spread (standard deviation {first['raw']['std']:g} to "
        f"{last['raw']['std']:g}) and the largest weight climbs from "
        f"{first['raw']['largest']:{decimals}} to {last['raw']['largest']:{decimals}}; "
        f"scaled, it stays between {min(scaled):{decimals}} and {max(scaled):{decimals}}."
    )
    return Explorer(
        "width",
        f"one query against {n_keys} keys, averaged over {trials} draws: "
        "the softmax with and without √d",
        controls,
        data,
        prompt,
        "the figure above plots the same averages.",
    )


def _bits(mask: torch.Tensor) -> str:
    """A boolean vector (L,) as a string of 0 and 1 (1 = True), compact in JSON."""
    return "".join("1" if hidden else "0" for hidden in mask.tolist())


def mask_states(x: torch.Tensor, max_padding: int) -> dict[str, dict]:
    """Self-attention of ``x`` (1, L, D) under every padding count, side and causal switch.

    Keys ``"<n>-<left|right>-<causal|full>"``: n padded positions (0 to ``max_padding``) at the
    left or right end, with or without the causal mask. Each state holds the padding (L,) and the
    ignore mask (L, L) as strings of 0 and 1 (1 = hidden), PyTorch's softmax of the scores with
    hidden ones set to -inf (L, L; a row with every key hidden is NaN, exported as null), how many
    rows have every key hidden, and the book's ``attention`` weights, or the ValueError it raises
    when a row has no key left; ``agree`` says whether both tables show the same numbers.
    """
    length = x.shape[1]
    max_padding = require_int("max_padding", max_padding, minimum=0)
    if max_padding >= length:
        raise ValueError(
            f"max_padding must leave a real token: below L={length}, got {max_padding}"
        )
    scores = x @ x.transpose(-2, -1) / math.sqrt(x.shape[-1])
    states = {}
    for count in range(max_padding + 1):
        for side in ("right", "left"):
            padding = torch.zeros(1, length, dtype=torch.bool)
            if side == "right":
                padding[0, length - count :] = True
            else:
                padding[0, :count] = True
            for causal in (False, True):
                ignore = padding[:, None, :].expand(1, length, length)
                if causal:
                    ignore = ignore | causal_mask(length)[None]
                pytorch = torch.softmax(scores.masked_fill(ignore, float("-inf")), dim=-1)
                state = {
                    "padding": _bits(padding[0]),
                    "ignore": [_bits(row) for row in ignore[0]],
                    "pytorch": _rounded(pytorch[0], WEIGHT_DECIMALS),
                    "empty_rows": int(ignore[0].all(dim=-1).sum()),
                    "book": None,
                    "error": None,
                }
                try:
                    _, weights = attention(x, x, x, padding, causal=causal)
                    state["book"] = _rounded(weights[0], WEIGHT_DECIMALS)
                except ValueError as error:
                    state["error"] = str(error)
                state["agree"] = state["book"] == state["pytorch"]
                key = f"{count}-{side}-{'causal' if causal else 'full'}"
                states[key] = state
    return states


def mask_explorer(x: torch.Tensor, tokens: list[str], max_padding: int) -> Explorer:
    """Padding count, left/right padding and the causal switch over ``mask_states`` of ``x``.

    x (1, L, D): the sequence attending to itself; ``tokens`` names its L positions.
    """
    tokens = require_texts("tokens", tokens)
    if x.dim() != 3 or x.shape[0] != 1 or x.shape[1] != len(tokens):
        raise ValueError(
            f"x must have shape (1, L, D) with L = {len(tokens)} tokens, got {tuple(x.shape)}"
        )
    data = {
        "tokens": tokens,
        "states": mask_states(x, max_padding),
        "colours": palette(),
        "decimals": [WEIGHT_DECIMALS],
    }
    options = "".join(f'<option value="{n}">{n}</option>' for n in range(max_padding + 1))
    controls = (
        '<span><label for="tl-mask-count">Padded positions</label> '
        f'<select id="tl-mask-count">{options}</select></span>'
        "<fieldset><legend>Padding on the</legend>"
        '<span><input type="radio" name="tl-mask-side" id="tl-mask-right" value="right" checked>'
        ' <label for="tl-mask-right">right</label></span>'
        '<span><input type="radio" name="tl-mask-side" id="tl-mask-left" value="left">'
        ' <label for="tl-mask-left">left</label></span></fieldset>'
        '<span><input type="checkbox" id="tl-mask-causal"> '
        '<label for="tl-mask-causal">causal mask</label></span>'
    )
    states = data["states"]
    agree = sum(state["agree"] for state in states.values())
    parted = [key for key, state in states.items() if state["error"]]
    if not parted:
        raise ValueError(
            "no setting leaves a row with no key: max_padding must be at least 1"
        )
    prompt = (
        "Try: pad on the left, then tick the causal mask. Notice: the padded queries at the "
        "start lose every key, so PyTorch gives NaN and the book's attention an error; "
        f"in the other {agree} of the {len(states)} settings the two agree."
    )
    return Explorer(
        "mask",
        "build a mask: padding, causal, and a row with no key left",
        controls,
        data,
        prompt,
        "the figure above shows the padding and causal masks side by side.",
    )


def _logits(model: SetClassifier, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """The model's logits (B,) on x (B, L, 2), in eval mode and without gradients."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(x, padding)
    finally:
        model.train(was_training)


def _check_head_inputs(
    model: SetClassifier, x: torch.Tensor, padding: torch.Tensor, y: torch.Tensor
) -> None:
    """Raise unless ``model`` is a SetClassifier and x (B, L, 2), padding (B, L), y (B,) fit."""
    if not isinstance(model, SetClassifier):
        raise TypeError(f"model must be a SetClassifier, got {type(model).__name__}")
    check_sets(x, padding)
    require_binary_labels("y", y)
    if tuple(y.shape) != (x.shape[0],):
        raise ValueError(
            f"y must have shape (B,) = ({x.shape[0]},), one label per set, got {tuple(y.shape)}"
        )


WRONG = "the model is wrong"
HESITANT = "heads hesitate"


def head_sets(
    model: SetClassifier,
    x: torch.Tensor,
    padding: torch.Tensor,
    y: torch.Tensor,
    count: int = 8,
    wrong: int = 3,
    hesitant: int = 3,
) -> list[dict]:
    """Which ``count`` of the sets x (B, L, 2) the head explorer offers, and why, in that order.

    Set 0 first (the chapter's static figure shows it), then the first ``wrong`` sets the model
    misclassifies (fewer if it gets fewer wrong), then the ``hesitant`` sets whose heads give the
    largest key the least attention (``largest_key_attention``, averaged over heads), then the
    first other sets from set 0 on until there are ``count``. Each entry: ``{"set": index,
    "why": [WRONG and/or HESITANT, or nothing]}``.
    """
    _check_head_inputs(model, x, padding, y)
    count = require_int("count", count, minimum=1)
    wrong = require_int("wrong", wrong, minimum=0)
    hesitant = require_int("hesitant", hesitant, minimum=0)
    if count > x.shape[0]:
        raise ValueError(f"count must be at most the {x.shape[0]} sets given, got {count}")
    if 1 + wrong + hesitant > count:
        raise ValueError(
            f"1 + wrong + hesitant must be at most count={count}, got "
            f"1 + {wrong} + {hesitant}"
        )
    right = (_logits(model, x, padding) > 0).to(y.dtype) == y
    misses = (~right).nonzero().flatten().tolist()
    share = largest_key_attention(model, x, padding)["per_head"].mean(dim=1)  # (B,)
    least = share.argsort(stable=True).tolist()
    chosen = list(dict.fromkeys([0, *misses[:wrong], *least[:hesitant]]))
    others = (index for index in range(x.shape[0]) if index not in chosen)
    while len(chosen) < count:
        chosen.append(next(others))
    return [
        {
            "set": index,
            "why": [WRONG] * (index in misses) + [HESITANT] * (index in least[:hesitant]),
        }
        for index in chosen
    ]


def head_states(
    model: SetClassifier,
    x: torch.Tensor,
    padding: torch.Tensor,
    y: torch.Tensor,
    sets: Sequence[int],
) -> list[dict]:
    """One state per chosen set: each head's attention, the largest key, prediction and label.

    x (B, L, 2), padding (B, L) True = padding, y (B,) labels; ``sets`` indexes B. The weights
    are the model's own (``SetClassifier.attention_weights``, (H, L, L) per set), rounded to
    WEIGHT_DECIMALS; a padded query's row is ``None`` (its output is never used). Each state also
    holds the padding as a string of 0 and 1, the real tokens' (key, value) (``None`` at padding),
    the position of the largest key, per head its average share of a real query's attention
    (``largest_key_attention``), each real query's most-attended key and how many of them are
    the largest key, the uniform share 1 / length, the model's probability of label 1 and
    whether its prediction (logit > 0) is right.
    """
    _check_head_inputs(model, x, padding, y)
    size = x.shape[0]
    chosen = [require_int("each set", index, minimum=0) for index in sets]
    if not chosen:
        raise ValueError("sets is empty: the explorer needs at least one set")
    if max(chosen) >= size:
        raise ValueError(f"each set must be an index below B={size}, got {max(chosen)}")
    x, padding, y = x[chosen], padding[chosen], y[chosen]
    weights = model.attention_weights(x, padding)  # (S, H, L, L)
    share = largest_key_attention(model, x, padding)
    winners = largest_key_index(x, padding)
    logits = _logits(model, x, padding)
    states = []
    for s, index in enumerate(chosen):
        real = ~padding[s]
        top_keys = weights[s].argmax(dim=-1)  # (H, L): each query's most-attended key
        heads = []
        for h in range(weights.shape[1]):
            rows = _rounded(weights[s, h], WEIGHT_DECIMALS)
            heads.append(
                {
                    "weights": [row if real[i] else None for i, row in enumerate(rows)],
                    "top_keys": [
                        int(key) if real[i] else None for i, key in enumerate(top_keys[h])
                    ],
                    "winner_top": int((top_keys[h] == winners[s])[real].sum()),
                    "share": _rounded(share["per_head"][s, h], WEIGHT_DECIMALS),
                }
            )
        states.append(
            {
                "set": index,
                "padding": _bits(padding[s]),
                "tokens": [
                    _rounded(token, VALUE_DECIMALS) if real[i] else None
                    for i, token in enumerate(x[s])
                ],
                "winner": int(winners[s]),
                "length": int(real.sum()),
                "uniform": _rounded(share["uniform"][s], WEIGHT_DECIMALS),
                "label": int(y[s]),
                "probability": _rounded(torch.sigmoid(logits[s]), WEIGHT_DECIMALS),
                "right": bool((logits[s] > 0) == (y[s] == 1)),
                "heads": heads,
            }
        )
    return states


def head_explorer(
    model: SetClassifier,
    x: torch.Tensor,
    padding: torch.Tensor,
    y: torch.Tensor,
    count: int = 8,
    wrong: int = 3,
    hesitant: int = 3,
) -> Explorer:
    """A set selector and a head switch over ``head_states`` of ``head_sets``' choice.

    x (B, L, 2), padding (B, L), y (B,): the validation sets the trained ``model`` is read on.
    """
    chosen = head_sets(model, x, padding, y, count, wrong, hesitant)
    states = head_states(model, x, padding, y, [entry["set"] for entry in chosen])
    for state, entry in zip(states, chosen):
        state["why"] = entry["why"]
    data = {
        "states": states,
        "colours": palette(),
        "decimals": [WEIGHT_DECIMALS, VALUE_DECIMALS],
    }
    options = "".join(
        f'<option value="{i}">{html.escape(set_option(state))}</option>'
        for i, state in enumerate(states)
    )
    heads = "".join(
        f'<span><input type="radio" name="tl-heads-head" id="tl-heads-head-{h}" value="{h}"'
        f"{' checked' if h == 0 else ''}>"
        f' <label for="tl-heads-head-{h}">head {h}</label></span>'
        for h in range(len(states[0]["heads"]))
    )
    controls = (
        '<span><label for="tl-heads-set">Validation set</label> '
        f'<select id="tl-heads-set">{options}</select></span>'
        f"<fieldset><legend>Head</legend>{heads}</fieldset>"
    )
    return Explorer(
        "heads",
        "pick a validation set and a head: does the largest key get the attention?",
        controls,
        data,
        head_prompt(states),
        "the figure above shows validation set 0; the table below counts the errors.",
    )


def set_option(state: dict) -> str:
    """A set's line in the selector: its index and why it is offered."""
    why = "; ".join(state["why"])
    return f"set {state['set']} ({why})" if why else f"set {state['set']}"


def head_prompt(states: list[dict]) -> str:
    """The head explorer's line: the typical set against the one whose heads hesitate most."""
    decimals = f".{WEIGHT_DECIMALS - 1}f"

    def shares(state: dict) -> str:
        return " and ".join(f"{head['share']:{decimals}}" for head in state["heads"])

    def mean_share(state: dict) -> float:
        return sum(head["share"] for head in state["heads"]) / len(state["heads"])

    least = min(states, key=mean_share)
    line = (
        f"Try: set {states[0]['set']}, then the sets marked \u201c{HESITANT}\u201d or "
        f"\u201c{WRONG}\u201d. Notice: on set {states[0]['set']} the heads give the largest "
        f"key {shares(states[0])} of a query's attention; on set {least['set']} only "
        f"{shares(least)}"
    )
    if not least["right"]:
        return line + ", and the model gets that set wrong."
    return (
        line + f", and the model is still right (probability {least['probability']:.2f})."
    )


def _split_words(tokens: list[str], word_ids: list[int | None]) -> list[list[str]]:
    """A sentence's tokens grouped by the word they belong to (the encoding's ``word_ids``)."""
    words: dict[int, list[str]] = {}
    for token, word in zip(tokens, word_ids, strict=True):
        if word is not None:
            words.setdefault(word, []).append(token)
    return [words[word] for word in sorted(words)]


def _side_by_side(words: list[list[str]], pair: tuple[str, str]) -> bool:
    """Whether ``pair`` stands side by side inside one of the ``words`` (lists of tokens)."""
    return any(
        (a, b) == tuple(pair)
        for word in words
        for a, b in zip(word, word[1:], strict=False)
    )


def merge_states(tokenizer: Tokenizer, sentence: str) -> list[dict]:
    """``sentence`` encoded by ``tokenizer`` with only its first k merges, for k = 0 to all.

    A trained BPE tokenizer applies its merges in the order training made them, so the same
    tokenizer with its merge list cut after k (and its vocabulary cut after the k-th merged
    token) encodes as training step k would have: k = 0 is one token per character, the last
    state is ``tokenizer.encode(sentence)``. Each state holds k, the vocabulary size, the k-th
    merge (``None`` for k = 0) and how many of the sentence's tokens it made, the sentence's
    tokens joined by spaces (compact in JSON; a token of a ``Whitespace`` pre-tokenizer never
    holds one), how many tokens each word of the sentence has (the word boundaries), whether
    the tokens differ from step k - 1's, their number and tokens per word (rounded to 2
    decimals). A merge leaves the sentence as it was exactly when its pair is not side by side
    in any word of it: that is checked here, so the explorer may say so.
    """
    check_tokenizer(tokenizer)
    if not isinstance(sentence, str) or not sentence.split():
        raise ValueError(f"sentence must be a str with at least one word, got {sentence!r}")
    learned = merges(tokenizer)
    spec = json.loads(tokenizer.to_str())
    model = spec["model"]
    vocab, merge_list = model["vocab"], model["merges"]
    base = len(vocab) - len(learned)
    for step, (left, right) in enumerate(learned):
        if vocab.get(left + right) != base + step:
            raise ValueError(
                "the tokenizer's vocabulary is not ordered as training builds it (special "
                f"tokens, alphabet, one token per merge): merge {step + 1}, {left} + {right}, "
                f"should have id {base + step}, has {vocab.get(left + right)}"
            )
    words = len(sentence.split())
    states = []
    before: list[list[str]] = []
    for k in range(len(learned) + 1):
        model["merges"] = merge_list[:k]
        model["vocab"] = {token: i for token, i in vocab.items() if i < base + k}
        encoding = Tokenizer.from_str(json.dumps(spec)).encode(sentence)
        tokens = encoding.tokens
        if any(not token or any(c.isspace() for c in token) for token in tokens):
            raise ValueError(f"a token of {sentence!r} is empty or holds a space: {tokens}")
        split = _split_words(tokens, encoding.word_ids)
        changed = split != before
        if k and changed != _side_by_side(before, learned[k - 1]):
            raise ValueError(
                f"merge {k}, {learned[k - 1]}, changed the sentence without its pair in it "
                "(or the reverse): the tokenizer does not apply its merges in order"
            )
        before = split
        states.append(
            {
                "merges": k,
                "vocab_size": base + k,
                "merge": list(learned[k - 1]) if k else None,
                "made": tokens.count("".join(learned[k - 1])) if k else 0,
                "tokens": " ".join(tokens),
                "word_sizes": [len(word) for word in split],
                "changed": changed,
                "count": len(tokens),
                "per_word": round(len(tokens) / words, VALUE_DECIMALS),
            }
        )
    return states


def merge_explorer(tokenizer: Tokenizer, sentence: str) -> Explorer:
    """A slider over ``merge_states``: step through the learned merges, re-tokenize ``sentence``.

    The slider's tick marks (a ``<datalist>``) are the start and the steps that change the
    sentence, and two buttons jump from one of those steps to the next.
    """
    states = merge_states(tokenizer, sentence)
    data = {"sentence": sentence, "words": len(sentence.split()), "states": states}
    last = len(states) - 1
    changes = [state["merges"] for state in states[1:] if state["changed"]]
    # a tick at 0 too: the slider snaps to ticks, and the start must stay within reach
    ticks = "".join(f'<option value="{k}"></option>' for k in [0, *changes])
    controls = (
        '<span class="tl-wide"><label for="tl-merges-step">Merges applied (in training '
        "order; ticks: the start and the merges that change the sentence)</label> "
        f'<input type="range" id="tl-merges-step" min="0" max="{last}" step="1" value="0"'
        ' list="tl-merges-ticks">'
        f'<datalist id="tl-merges-ticks">{ticks}</datalist>'
        ' <output id="tl-merges-value" for="tl-merges-step"></output></span>'
        '<span><button type="button" id="tl-merges-previous">previous change</button> '
        '<button type="button" id="tl-merges-next">next change</button></span>'
    )
    prompt = (
        f"Try: \u201cnext change\u201d jumps between the {len(changes)} merges that change "
        f"the sentence. Notice: the other {last - len(changes)} of the {last} merges join "
        "pairs frequent elsewhere in the corpus that never stand side by side here."
    )
    return Explorer(
        "merges",
        "step through the merges: the unseen sentence, re-tokenized",
        controls,
        data,
        prompt,
        "the tables above show the first merges and the sentence's final pieces.",
    )
