"""The explorers of the built book, driven as a reader drives them: keyboard and pointer.

Each test moves a control, reads the numbers the page then displays, and compares them with the
package's values for that state, recomputed here in Python from the chapter's own inputs (so a
page whose exported data, or whose script, showed anything else would fail). The panels must also
work from ``file://`` with no request to another host, pass axe in both colour schemes in the
states they can reach, and stay hidden without JavaScript, where the static figure is the figure.
"""

from __future__ import annotations

import functools
import re

import pytest
import torch

from book_site import PHONE
from transformer_lab.attention import (
    attention,
    causal_mask,
    max_weight_by_width,
    soft_join,
)
from transformer_lab.explorers import (
    HESITANT,
    WRONG,
    log_temperatures,
    temperature_states,
    visible_states,
)
from transformer_lab.set_classifier import NHEAD
from transformer_lab.set_task import (
    VALIDATION_SEED,
    VALIDATION_SETS,
    largest_key_index,
    make_sets,
)
from transformer_lab.tokenizer import CHAPTER_CORPUS, merges, train_bpe_tokenizer

pytestmark = pytest.mark.browser

CHAPTER_1 = "chapters/01-soft-join.html"

# Chapter 1's join (chapters/01-soft-join.md, "From equality to similarity").
PLANS = ["Starter", "Team", "Business", "Enterprise"]
PRICES = [[9.0, 72.0], [19.0, 24.0], [39.0, 8.0], [79.0, 2.0]]
TICKETS = [
    (101, "Team"),
    (102, "Enterprise"),
    (103, "Starter"),
    (104, "Team"),
    (105, "Business"),
]

READ_TABLE = """(figure) => Array.from(document.querySelectorAll(figure + ' tbody tr')).map(
    row => Array.from(row.children).map(cell => ({text: cell.textContent.trim(),
                                                   kind: cell.className || cell.tagName})))"""

AXE_PANEL = """async (selector) => {
    const result = await axe.run(selector, {resultTypes: ['violations']});
    return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '));
}"""


# Text in the panels whose contrast with the background behind it is below 4.5 (WCAG AA); axe
# reports a text drawn in the colour of its background as "incomplete", not as a violation.
LOW_CONTRAST = """() => {
    const parse = c => c.match(/[\\d.]+/g).map(Number);
    const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255;
        return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); })
        .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    const behind = el => { for (let e = el; e; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c.length < 4 || c[3] > 0) return c.slice(0, 3); } return [255, 255, 255]; };
    const low = [];
    for (const el of document.querySelectorAll(
            '.tl-explorer caption, .tl-explorer p, .tl-explorer label, .tl-explorer legend, '
            + '.tl-explorer th, .tl-explorer td, .tl-explorer output')) {
        if (!el.textContent.trim() || !el.getClientRects().length) continue;
        const [a, b] = [lum(parse(getComputedStyle(el).color).slice(0, 3)), lum(behind(el))];
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        if (ratio < 4.5) low.push(el.tagName + ' ' + el.textContent.trim().slice(0, 40)
                                  + ' ' + ratio.toFixed(2));
    }
    return low;
}"""


def assert_accessible_in_both_schemes(page, selector: str, where: str) -> None:
    """axe finds nothing in the panel ``selector``, and no text is below 4.5:1 contrast, in the
    light and then the dark scheme; ``where`` names the state in the messages."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.evaluate(
            "(s) => document.documentElement.setAttribute('data-theme', s)", scheme
        )
        problems = page.evaluate(AXE_PANEL, selector)
        assert not problems, f"{scheme} scheme, {where}: {problems}"
        low = page.evaluate(LOW_CONTRAST)
        assert not low, f"{scheme} scheme, {where}: text below 4.5:1 contrast: {low}"


def chapter_1_join():
    generator = torch.Generator().manual_seed(20)
    keys = torch.nn.functional.normalize(
        torch.randn(len(PLANS), 8, generator=generator, dtype=torch.float64), dim=1
    )
    own = [PLANS.index(plan) for _, plan in TICKETS]
    values = torch.tensor(PRICES, dtype=torch.float64)
    return keys[own], keys, values, values[own]


@functools.cache
def chapter_1_temperatures() -> list[float]:
    """The slider's temperatures: the chapter's log grid, without the states that look alike."""
    grid = log_temperatures(warm=1.0, coldest=0.001, per_decade=8)
    states = visible_states(temperature_states(*chapter_1_join(), grid))
    return [state["temperature"] for state in states]


def cells(rows: list[list[dict]], kind: str) -> list[list[float]]:
    """The numbers of one kind of cell (tl-weight, tl-soft, tl-exact), row by row."""
    return [[float(cell["text"]) for cell in row if cell["kind"] == kind] for row in rows]


def close(shown: list[list[float]], expected: torch.Tensor, decimals: int) -> bool:
    """Displayed (rounded to ``decimals``) equals the package's value to that rounding."""
    tolerance = 0.5 * 10**-decimals + 1e-9
    return torch.allclose(
        torch.tensor(shown, dtype=torch.float64), expected.double(), atol=tolerance, rtol=0
    )


# Chapter 1's "Why divide by √d" explorer: the figure's widths, keys and draws.
WIDTHS = [4, 16, 64, 256, 1024]
N_KEYS = 16
TRIALS = 200


@functools.cache
def width_scores() -> list[torch.Tensor]:
    """The figure's raw scores (TRIALS, 1, N_KEYS) per width, drawn as the chapter draws them."""
    generator = torch.Generator().manual_seed(0)
    rows = []
    for width in WIDTHS:
        q = torch.randn(TRIALS, 1, width, generator=generator)
        k = torch.randn(TRIALS, N_KEYS, width, generator=generator)
        rows.append(q @ k.transpose(-2, -1))
    return rows


# Chapter 1's mask builder: the four-token x of "Padding masks".
MASK_X = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]])


@pytest.fixture()
def chapter_1(open_page):
    opened = open_page(CHAPTER_1)
    try:
        yield opened
    finally:
        opened.close()


def check_temperature_state(page, step: int) -> None:
    temperatures = chapter_1_temperatures()
    slider = page.locator("#tl-temperature-step")
    assert slider.input_value() == str(step)
    query_keys, keys, values, exact = chapter_1_join()
    mixed, weights = soft_join(query_keys, keys, values, temperatures[step])
    boxes = "#tl-temperature-figure .tl-scroll"
    rows = page.evaluate(READ_TABLE, f"{boxes}:nth-child(1)")
    blend = page.evaluate(READ_TABLE, f"{boxes}:nth-child(2)")
    names = [f"{ticket} {plan}" for ticket, plan in TICKETS]
    assert [row[0]["text"] for row in rows] == [row[0]["text"] for row in blend] == names
    assert close(cells(rows, "tl-weight"), weights, 3), f"weights at step {step}: {rows}"
    assert close(cells(blend, "tl-soft"), mixed, 2), f"blend at step {step}: {blend}"
    assert close(cells(blend, "tl-exact"), exact, 2), f"exact join at step {step}: {blend}"
    label = f"τ = {temperatures[step]:g}"
    assert page.locator("#tl-temperature-value").inner_text() == label
    assert slider.get_attribute("aria-valuetext") == label
    status = page.locator("#tl-temperature-status").inner_text()
    assert status.startswith(label), status
    equal = bool(torch.equal(mixed.mul(100).round(), exact.mul(100).round()))
    assert ("equal the exact join" in status) == equal, status


def test_temperature_explorer_follows_the_keyboard(chapter_1):
    page = chapter_1.page
    panel = page.locator('.tl-explorer[data-explorer="temperature"]')
    assert panel.is_visible()
    assert page.locator("#tl-temperature-status").get_attribute("aria-live") == "polite"
    assert (
        page.locator("label[for=tl-temperature-step]")
        .inner_text()
        .startswith("Temperature")
    )
    check_temperature_state(page, 0)
    slider = page.locator("#tl-temperature-step")
    slider.focus()
    last = len(chapter_1_temperatures()) - 1
    shown = []
    for step in range(1, last + 1):
        page.keyboard.press("ArrowRight")
        check_temperature_state(page, step)
        shown.append(page.inner_text("#tl-temperature-figure"))
    # Every step changes what is shown, and the coldest state is the merge, to the cent.
    assert len(set(shown)) == len(shown)
    assert "equal the exact join" in page.locator("#tl-temperature-status").inner_text()
    prompt = page.locator("#tl-temperature-prompt").inner_text()
    assert f"down to τ = {chapter_1_temperatures()[-1]:g}" in prompt, prompt
    page.keyboard.press("Home")
    check_temperature_state(page, 0)
    page.keyboard.press("End")
    check_temperature_state(page, last)
    assert not chapter_1.records().console_errors


def check_width_state(page, index: int, scaled: bool) -> None:
    assert page.locator("#tl-width-d").input_value() == str(index)
    assert page.locator("#tl-width-scaled").is_checked() == scaled
    width = WIDTHS[index]
    scores = width_scores()[index] / (width**0.5 if scaled else 1.0)
    ranked = torch.softmax(scores, dim=-1).sort(dim=-1, descending=True)
    weights = ranked.values.mean(dim=(0, 1))
    rows = page.evaluate(READ_TABLE, "#tl-width-figure")
    assert [row[0]["text"] for row in rows] == [str(i + 1) for i in range(N_KEYS)]
    average_scores = scores.gather(-1, ranked.indices).mean(dim=(0, 1))
    assert close([r[0] for r in cells(rows, "tl-score")], average_scores, 2), rows
    assert close([r[0] for r in cells(rows, "tl-weight")], weights, 3), rows
    status = page.locator("#tl-width-status").inner_text()
    assert status.startswith(f"d = {width}, "), status
    figure = max_weight_by_width(WIDTHS, N_KEYS, TRIALS, seed=0)
    largest = figure["scaled" if scaled else "unscaled"][index]
    assert f"average largest weight {largest:.3f} over {TRIALS} draws" in status, status
    assert ("divided by √d" in status) == scaled, status


def test_width_explorer_follows_keyboard_and_pointer(chapter_1):
    page = chapter_1.page
    assert page.locator('.tl-explorer[data-explorer="width"]').is_visible()
    assert page.locator("#tl-width-status").get_attribute("aria-live") == "polite"
    check_width_state(page, 0, scaled=True)
    select = page.locator("#tl-width-d")
    select.focus()
    for index in range(1, len(WIDTHS)):
        page.keyboard.press("ArrowDown")
        check_width_state(page, index, scaled=True)
    page.locator("#tl-width-scaled").focus()
    page.keyboard.press("Space")  # the scale off, by keyboard
    check_width_state(page, len(WIDTHS) - 1, scaled=False)
    # At d = 1024 without the scale one key takes almost the whole row, on average.
    assert max(cells(page.evaluate(READ_TABLE, "#tl-width-figure"), "tl-weight"))[0] > 0.9
    page.locator("label[for=tl-width-scaled]").click()  # the scale back on, by pointer
    check_width_state(page, len(WIDTHS) - 1, scaled=True)
    select.select_option("0")
    check_width_state(page, 0, scaled=True)
    page.locator("#tl-width-scaled").click()
    check_width_state(page, 0, scaled=False)


def check_mask_state(page, count: int, side: str, causal: bool) -> None:
    assert page.locator("#tl-mask-count").input_value() == str(count)
    assert page.locator(f"#tl-mask-{side}").is_checked()
    assert page.locator("#tl-mask-causal").is_checked() == causal
    length = MASK_X.shape[1]
    padding = torch.zeros(1, length, dtype=torch.bool)
    if side == "right":
        padding[0, length - count :] = True
    else:
        padding[0, :count] = True
    ignore = padding[:, None, :].expand(1, length, length)
    if causal:
        ignore = ignore | causal_mask(length)[None]
    scores = MASK_X @ MASK_X.transpose(-2, -1) / 2**0.5
    pytorch = torch.softmax(scores.masked_fill(ignore, float("-inf")), dim=-1)[0]
    rows = page.evaluate(READ_TABLE, "#tl-mask-pytorch")
    names = [f"t{i} (pad)" if padding[0, i] else f"t{i}" for i in range(length)]
    assert [row[0]["text"] for row in rows] == names
    shown = [
        [cell["text"] for cell in row if cell["kind"].startswith("tl-weight")]
        for row in rows
    ]
    empty = ignore[0].all(dim=-1)
    for i, row in enumerate(shown):
        if empty[i]:
            assert row == ["NaN"] * length, shown  # PyTorch's 0/0
            assert torch.isnan(pytorch[i]).all()
        else:
            assert close([[float(t) for t in row]], pytorch[i : i + 1], 3), shown
    hidden = page.evaluate(
        "() => Array.from(document.querySelectorAll('#tl-mask-pytorch tbody tr')).map("
        "r => Array.from(r.querySelectorAll('td')).map(c => c.classList.contains('tl-hidden')))"
    )
    assert hidden == ignore[0].tolist()
    book = page.locator("#tl-mask-book")
    status = page.locator("#tl-mask-status").inner_text()
    if empty.any():
        with pytest.raises(ValueError) as raised:
            attention(MASK_X, MASK_X, MASK_X, padding, causal=causal)
        assert (
            book.inner_text() == f"The book's attention raises ValueError: {raised.value}"
        )
        assert "PyTorch gives NaN" in status, status
    else:
        # the book's table would repeat PyTorch's: a note says so instead
        _, weights = attention(MASK_X, MASK_X, MASK_X, padding, causal=causal)
        assert close([[float(t) for t in row] for row in shown], weights[0], 3), (
            "the book's attention differs from PyTorch's where the note says they agree"
        )
        assert book.inner_text().startswith(
            "The book's attention gives exactly these weights"
        )
        assert "every row sums to 1" in status, status
    assert status.startswith(
        f"{count} padded on the {side}, causal {'on' if causal else 'off'}"
    )


def test_mask_explorer_follows_keyboard_and_pointer(chapter_1):
    page = chapter_1.page
    assert page.locator('.tl-explorer[data-explorer="mask"]').is_visible()
    assert page.locator("#tl-mask-status").get_attribute("aria-live") == "polite"
    check_mask_state(page, 0, "right", causal=False)
    page.locator("#tl-mask-count").focus()
    for count in (1, 2):
        page.keyboard.press("ArrowDown")
        check_mask_state(page, count, "right", causal=False)
    page.locator("#tl-mask-causal").focus()
    page.keyboard.press("Space")
    check_mask_state(page, 2, "right", causal=True)
    page.locator("#tl-mask-right").focus()
    page.keyboard.press("ArrowRight")  # the radio group moves to "left"
    check_mask_state(
        page, 2, "left", causal=True
    )  # left padding + causal: rows with no key
    page.locator("label[for=tl-mask-causal]").click()
    check_mask_state(page, 2, "left", causal=False)
    page.locator("label[for=tl-mask-right]").click()
    check_mask_state(page, 2, "right", causal=False)
    page.locator("#tl-mask-left").click()
    page.locator("#tl-mask-causal").click()
    page.locator("#tl-mask-count").select_option("3")
    check_mask_state(page, 3, "left", causal=True)
    page.locator("#tl-mask-count").select_option("0")
    check_mask_state(page, 0, "left", causal=True)


def test_temperature_explorer_follows_the_pointer(chapter_1):
    page = chapter_1.page
    slider = page.locator("#tl-temperature-step")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    last = len(chapter_1_temperatures()) - 1
    page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    check_temperature_state(page, last)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    check_temperature_state(page, int(slider.input_value()))
    assert 0 < int(slider.input_value()) < last
    page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)
    check_temperature_state(page, 0)


@pytest.mark.parametrize("step", ["Home", "End"])
def test_explorers_pass_axe_in_both_schemes(chapter_1, axe_source, step):
    page = chapter_1.page
    page.add_script_tag(content=axe_source)
    page.locator("#tl-temperature-step").focus()
    page.keyboard.press(step)
    page.locator("#tl-width-d").select_option(
        "0" if step == "Home" else str(len(WIDTHS) - 1)
    )
    page.locator("#tl-width-scaled").set_checked(step == "Home")
    # End: left padding under the causal mask, the state with a NaN row and the error text.
    page.locator("#tl-mask-count").select_option("0" if step == "Home" else "1")
    page.locator("#tl-mask-left").set_checked(step == "End")
    page.locator("#tl-mask-causal").set_checked(step == "End")
    assert_accessible_in_both_schemes(page, ".tl-explorer", f"after {step}")


def test_explorers_work_from_disk(open_page):
    opened = open_page(CHAPTER_1, from_disk=True)
    try:
        assert opened.page.url.startswith("file://")
        check_temperature_state(opened.page, 0)
        opened.page.locator("#tl-temperature-step").focus()
        opened.page.keyboard.press("End")
        check_temperature_state(opened.page, len(chapter_1_temperatures()) - 1)
        records = opened.records()
        assert not records.console_errors and not records.third_party_requests, records
    finally:
        opened.close()


def test_without_javascript_the_static_figure_stands_alone(browser, server):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(server.url(CHAPTER_1), wait_until="load")
        panels = page.locator(".tl-explorer")
        assert panels.count() == 3
        for index in range(panels.count()):
            assert not panels.nth(index).is_visible()
        for figure in ("fig-soft-join-weights", "fig-sqrt-d", "fig-masks"):
            image = page.locator(f"#{figure} img")
            assert image.is_visible() and image.get_attribute("alt"), figure
        # and each missing panel says so, and where its lesson is instead
        notes = page.locator(".tl-noscript")
        assert notes.count() == 3 and all(n.is_visible() for n in notes.all())
        assert "needs JavaScript" in notes.first.inner_text()
    finally:
        context.close()


def test_in_print_the_static_figures_replace_the_explorers(chapter_1):
    page = chapter_1.page
    assert page.locator(".tl-explorer").first.is_visible()
    page.emulate_media(media="print")
    try:
        panels = page.locator(".tl-explorer")
        assert panels.count() == 3
        assert all(not panels.nth(i).is_visible() for i in range(panels.count()))
        assert page.locator("#fig-sqrt-d img").is_visible()
    finally:
        page.emulate_media(media="screen")


# Chapter 3's head explorer, on the validation sets of chapters/03-set-classifier.md.
CHAPTER_3 = "chapters/03-set-classifier.html"
HEAD_DATA = """() => JSON.parse(document.querySelector(
    '.tl-explorer[data-explorer="heads"] script.tl-explorer-data').textContent)"""
READ_HEADS = """(figure) => Array.from(document.querySelectorAll(figure + ' tr')).map(
    row => Array.from(row.children).map(cell => ({text: cell.textContent.trim(),
                                                   classes: Array.from(cell.classList)})))"""


@pytest.fixture()
def chapter_3(open_page):
    opened = open_page(CHAPTER_3)
    try:
        yield opened
    finally:
        opened.close()


def check_heads_state(page, option: int, head: int) -> None:
    """The displayed set, tokens, weights and status against the exported state and the data.

    What the test can recompute cheaply it recomputes: the validation sets (make_split's), so the
    tokens, the padding, the largest key, the label and the uniform share. The weights and the
    probability need the trained model; they must equal the exported state (which nbval keeps
    equal to the reference), rows must sum to 1, padding must get 0, and the status's average
    share and count of most-attended queries must follow from the displayed weights.
    """
    assert page.locator("#tl-heads-set").input_value() == str(option)
    assert page.locator(f"#tl-heads-head-{head}").is_checked()
    state = page.evaluate(HEAD_DATA)["states"][option]
    index = state["set"]
    chosen = page.locator("#tl-heads-set option:checked").inner_text()
    assert chosen.startswith(f"set {index}")
    assert (WRONG in chosen) == (not state["right"]) == (WRONG in state["why"])
    assert (HESITANT in chosen) == (HESITANT in state["why"])
    x, padding, y = make_sets(VALIDATION_SETS, VALIDATION_SEED)
    x, padding, label = x[index], padding[index], int(y[index])
    winner = int(largest_key_index(x[None], padding[None])[0])
    real = ~padding
    length = int(real.sum())
    names = [
        ("p" if padding[i] else "t") + str(i) + ("*" if i == winner else "")
        for i in range(len(padding))
    ]
    tokens = page.evaluate(READ_HEADS, "#tl-heads-tokens")
    assert [cell["text"] for cell in tokens[0][1:]] == names
    for row, column in ((tokens[1], 0), (tokens[2], 1)):
        for i, cell in enumerate(row[1:]):
            if padding[i]:
                assert cell["text"] == "pad"
            else:
                assert abs(float(cell["text"]) - x[i, column].item()) <= 0.005 + 1e-9
            assert ("tl-winner" in cell["classes"]) == (i == winner)
    caption = page.locator("#tl-heads-weights caption").inner_text()
    assert caption.startswith(f"Head {head}: "), caption
    table = page.evaluate(READ_HEADS, "#tl-heads-weights")
    assert [cell["text"] for cell in table[0][1:]] == names
    exported = state["heads"][head]
    on_winner, tops = [], 0
    for i, row in enumerate(table[1:]):
        assert row[0]["text"] == names[i]
        if padding[i]:
            assert [cell["text"] for cell in row[1:]] == [
                "padded query: its output is never used"
            ]
            continue
        shown = [float(cell["text"]) for cell in row[1:]]
        assert shown == exported["weights"][i], (i, shown)
        assert abs(sum(shown) - 1) <= 0.0005 * len(shown) + 1e-9
        for j, cell in enumerate(row[1:]):
            assert ("tl-hidden" in cell["classes"]) == bool(padding[j])
            assert ("tl-winner" in cell["classes"]) == (j == winner)
            if padding[j]:
                assert shown[j] == 0.0
        bold = [j for j, cell in enumerate(row[1:]) if "tl-top" in cell["classes"]]
        assert bold == [exported["top_keys"][i]]
        assert shown[bold[0]] == max(shown)
        on_winner.append(shown[winner])
        tops += bold[0] == winner
    share = sum(on_winner) / length
    assert abs(share - exported["share"]) <= 0.001, (share, exported["share"])
    assert tops == exported["winner_top"]
    assert state["label"] == label and state["length"] == length
    probability = state["probability"]
    right = (probability > 0.5) == (label == 1)
    assert state["right"] == right
    status = page.locator("#tl-heads-status").inner_text()
    assert status.startswith(f"Validation set {index}, head {head}: "), status
    assert f"the largest key, t{winner} (key {x[winner, 0].item():.2f}, " in status
    assert f"gets {exported['share']:.3f} of a real query's attention" in status
    assert f"(uniform share {1 / length:.3f})" in status
    assert f"key of {tops} of {length} real queries" in status
    assert f"Label {label}; the model's probability of label 1: {probability:.3f}" in status
    assert status.endswith("right." if right else "wrong."), status


def test_head_explorer_follows_keyboard_and_pointer(chapter_3):
    page = chapter_3.page
    panel = page.locator('.tl-explorer[data-explorer="heads"]')
    assert panel.is_visible()
    assert page.locator("#tl-heads-status").get_attribute("aria-live") == "polite"
    assert page.locator("label[for=tl-heads-set]").inner_text() == "Validation set"
    states = page.evaluate(HEAD_DATA)["states"]
    heads = len(states[0]["heads"])
    assert 8 <= len(states) <= 12 and heads == NHEAD
    # when the page's trained transformer gets validation sets wrong, the explorer offers one
    printed = re.search(r"^transformer +([01]\.\d{3}) ", page.inner_text("main"), re.M)
    assert printed, "chapter 3's results table (transformer, val acc) is not on the page"
    if float(printed.group(1)) < 1:
        assert any(not state["right"] for state in states)
    # the informative cases: the sets whose heads hesitate most, and the prompt names the most
    # hesitant with its heads' shares, as the states hold them
    hesitant = [state for state in states if HESITANT in state["why"]]
    assert hesitant and states[0]["set"] == 0
    least = min(hesitant, key=lambda state: sum(head["share"] for head in state["heads"]))
    shares = " and ".join(f"{head['share']:.2f}" for head in least["heads"])
    prompt = page.locator("#tl-heads-prompt").inner_text()
    assert f"on set {least['set']} only {shares}" in prompt, prompt
    check_heads_state(page, 0, 0)
    page.locator("#tl-heads-set").focus()
    for option in range(1, len(states)):
        page.keyboard.press("ArrowDown")
        check_heads_state(page, option, 0)
    page.locator("#tl-heads-head-0").focus()
    for head in range(1, heads):
        page.keyboard.press("ArrowRight")  # the radio group moves to the next head
        check_heads_state(page, len(states) - 1, head)
    page.keyboard.press("ArrowRight")  # and wraps round to head 0
    check_heads_state(page, len(states) - 1, 0)
    page.locator(f"label[for=tl-heads-head-{heads - 1}]").click()  # by pointer
    check_heads_state(page, len(states) - 1, heads - 1)
    wrong = next(
        (i for i, state in enumerate(states) if not state["right"]), len(states) - 1
    )
    page.locator("#tl-heads-set").select_option(str(wrong))
    check_heads_state(page, wrong, heads - 1)
    page.locator("#tl-heads-head-0").click()
    check_heads_state(page, wrong, 0)
    assert not chapter_3.records().console_errors


def test_head_explorer_passes_axe_in_both_schemes(chapter_3, axe_source):
    page = chapter_3.page
    page.add_script_tag(content=axe_source)
    states = page.evaluate(HEAD_DATA)["states"]
    wrong = next(
        (i for i, state in enumerate(states) if not state["right"]), len(states) - 1
    )
    for option, head in ((0, 0), (wrong, NHEAD - 1)):
        page.locator("#tl-heads-set").select_option(str(option))
        page.locator(f"#tl-heads-head-{head}").check()
        assert_accessible_in_both_schemes(
            page, '.tl-explorer[data-explorer="heads"]', f"set option {option}"
        )


def test_head_explorer_works_from_disk(open_page):
    opened = open_page(CHAPTER_3, from_disk=True)
    try:
        assert opened.page.url.startswith("file://")
        check_heads_state(opened.page, 0, 0)
        opened.page.locator("#tl-heads-set").focus()
        opened.page.keyboard.press("End")
        last = len(opened.page.evaluate(HEAD_DATA)["states"]) - 1
        check_heads_state(opened.page, last, 0)
        records = opened.records()
        assert not records.console_errors and not records.third_party_requests, records
    finally:
        opened.close()


def test_without_javascript_chapter_3_keeps_its_static_heads_figure(browser, server):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(server.url(CHAPTER_3), wait_until="load")
        panel = page.locator('.tl-explorer[data-explorer="heads"]')
        assert panel.count() == 1 and not panel.is_visible()
        assert page.locator(".tl-noscript").is_visible()
        image = page.locator("#fig-ch3-trained-heads img")
        assert image.is_visible() and image.get_attribute("alt")
    finally:
        context.close()


def test_in_print_chapter_3_shows_its_static_heads_figure(chapter_3):
    page = chapter_3.page
    panel = page.locator('.tl-explorer[data-explorer="heads"]')
    assert panel.is_visible()
    page.emulate_media(media="print")
    try:
        assert not panel.is_visible()
        assert page.locator("#fig-ch3-trained-heads img").is_visible()
    finally:
        page.emulate_media(media="screen")


# Chapter 5's merge stepper: the chapter corpus's tokenizer and the unseen sentence of
# chapters/05-tokenizers.md ("Encoding a sentence it never saw").
CHAPTER_5 = "chapters/05-tokenizers.html"
TINY_VOCAB = 78
SENTENCE = "my dog reads the whole input"


@functools.cache
def trained_to(vocab_size: int) -> list[str]:
    """The sentence's tokens from a tokenizer trained on chapter 5's corpus to ``vocab_size``."""
    return (
        train_bpe_tokenizer(CHAPTER_CORPUS, vocab_size=vocab_size).encode(SENTENCE).tokens
    )


@pytest.fixture()
def chapter_5(open_page):
    opened = open_page(CHAPTER_5)
    try:
        yield opened
    finally:
        opened.close()


def changing_steps(last: int) -> list[int]:
    """The merges k (1 to ``last``) after which the sentence's tokens differ from k - 1's."""
    full = train_bpe_tokenizer(CHAPTER_CORPUS, vocab_size=TINY_VOCAB)
    base = full.get_vocab_size() - last
    return [
        k for k in range(1, last + 1) if trained_to(base + k) != trained_to(base + k - 1)
    ]


def check_merge_state(page, k: int) -> None:
    """What the page shows after k merges equals a tokenizer *trained* with k merges."""
    full = train_bpe_tokenizer(CHAPTER_CORPUS, vocab_size=TINY_VOCAB)
    learned = merges(full)
    base = full.get_vocab_size() - len(learned)
    assert page.locator("#tl-merges-step").input_value() == str(k)
    tokens = page.locator("#tl-merges-tokens .tl-token").all_inner_texts()
    assert tokens == trained_to(base + k), (k, tokens)
    # word boundaries: one list item per word, holding exactly that word's tokens
    words = page.locator("#tl-merges-tokens > li").all_inner_texts()
    assert [re.sub(r"\s+", "", word) for word in words] == SENTENCE.split(), words
    made = "".join(learned[k - 1]) if k else None
    bold = page.evaluate(
        "() => Array.from(document.querySelectorAll('#tl-merges-tokens .tl-token'))"
        ".map(token => token.classList.contains('tl-new'))"
    )
    assert bold == [token == made for token in tokens]
    label = f"{k} of {len(learned)} merges"
    assert page.locator("#tl-merges-value").inner_text() == label
    assert page.locator("#tl-merges-step").get_attribute("aria-valuetext") == label
    step = page.locator("#tl-merges-merge").inner_text()
    if k:
        assert step == f"Merge {k}: {learned[k - 1][0]} + {learned[k - 1][1]} → {made}"
    else:
        assert step == "Before any merge: one token per character"
    count = len(SENTENCE.split())
    status = page.locator("#tl-merges-status").inner_text()
    assert status.startswith(
        f"After {label} (vocabulary of {base + k} tokens): {count} words are "
        f"{len(tokens)} tokens, {len(tokens) / count:.2f} per word"
    ), status
    if k and tokens != trained_to(base + k - 1):
        assert status.endswith(
            f"; merge {k} changed the sentence: {tokens.count(made)} of its tokens made "
            "by it (bold)."
        ), status
    elif k:
        left, right = learned[k - 1]
        assert status.endswith(
            f"; merge {k} leaves it unchanged: {left} and {right} never stand side by side "
            "in it."
        ), status
    else:
        assert status.endswith(" per word."), status


def test_merge_stepper_follows_the_keyboard(chapter_5):
    page = chapter_5.page
    assert page.locator('.tl-explorer[data-explorer="merges"]').is_visible()
    assert page.locator("#tl-merges-status").get_attribute("aria-live") == "polite"
    assert page.locator("label[for=tl-merges-step]").inner_text().startswith("Merges")
    last = len(merges(train_bpe_tokenizer(CHAPTER_CORPUS, vocab_size=TINY_VOCAB)))
    check_merge_state(page, 0)
    page.locator("#tl-merges-step").focus()
    for k in range(1, last + 1):
        page.keyboard.press("ArrowRight")
        check_merge_state(page, k)
    page.keyboard.press("Home")
    check_merge_state(page, 0)
    page.keyboard.press("End")
    check_merge_state(page, last)
    # the slider's ticks are the steps that change the sentence, and so are the buttons' stops
    changes = changing_steps(last)
    ticks = page.evaluate(
        "() => Array.from(document.querySelectorAll('#tl-merges-ticks option'), o => +o.value)"
    )
    assert ticks == [0, *changes] and 0 < len(changes) < last
    prompt = page.locator("#tl-merges-prompt").inner_text()
    assert f"between the {len(changes)} merges" in prompt, prompt
    assert f"the other {last - len(changes)} of the {last} merges" in prompt, prompt
    page.keyboard.press("Home")
    next_change = page.locator("#tl-merges-next")
    next_change.focus()
    for k in changes:
        page.keyboard.press("Enter")
        check_merge_state(page, k)
    assert next_change.get_attribute("aria-disabled") == "true"
    page.keyboard.press("Enter")  # no later change: it stays
    check_merge_state(page, changes[-1])
    page.locator("#tl-merges-previous").click()
    check_merge_state(page, changes[-2])
    assert not chapter_5.records().console_errors


def test_merge_stepper_follows_the_pointer(chapter_5):
    page = chapter_5.page
    slider = page.locator("#tl-merges-step")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    last = int(slider.get_attribute("max"))
    page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    check_merge_state(page, last)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert 0 < int(slider.input_value()) < last
    check_merge_state(page, int(slider.input_value()))
    page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)
    check_merge_state(page, 0)
    page.emulate_media(media="print")  # in print the chapter's own tables stand alone
    try:
        assert not page.locator('.tl-explorer[data-explorer="merges"]').is_visible()
    finally:
        page.emulate_media(media="screen")


def test_merge_stepper_passes_axe_in_both_schemes(chapter_5, axe_source):
    page = chapter_5.page
    page.add_script_tag(content=axe_source)
    for key in ("Home", "End"):
        page.locator("#tl-merges-step").focus()
        page.keyboard.press(key)
        assert_accessible_in_both_schemes(
            page, '.tl-explorer[data-explorer="merges"]', f"after {key}"
        )


def test_merge_stepper_works_from_disk_and_falls_back_without_javascript(
    open_page, browser, server
):
    opened = open_page(CHAPTER_5, from_disk=True)
    try:
        assert opened.page.url.startswith("file://")
        check_merge_state(opened.page, 0)
        opened.page.locator("#tl-merges-step").focus()
        opened.page.keyboard.press("End")
        check_merge_state(
            opened.page, int(opened.page.locator("#tl-merges-step").input_value())
        )
        records = opened.records()
        assert not records.console_errors and not records.third_party_requests, records
    finally:
        opened.close()
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(server.url(CHAPTER_5), wait_until="load")
        panel = page.locator('.tl-explorer[data-explorer="merges"]')
        assert panel.count() == 1 and not panel.is_visible()
        assert page.locator(".tl-noscript").is_visible()
        # the static tables stay: the first merges and the sentence's pieces
        assert page.get_by_text(SENTENCE).first.is_visible()
    finally:
        context.close()


# On a phone and in the dark: every explorer of the book, as a reader on a phone meets it.
EXPLORER_PAGES = {
    CHAPTER_1: ("temperature", "width", "mask"),
    CHAPTER_3: ("heads",),
    CHAPTER_5: ("merges",),
}

# Where a panel's controls and the end of its figure are, once the figure's end is scrolled to
# the bottom of the window; and what the reader's eye finds at the centre of the first control.
IN_VIEW = """(kind) => {
    const panel = document.querySelector(`.tl-explorer[data-explorer="${kind}"]`);
    const figure = panel.querySelector('.tl-figure');
    figure.scrollIntoView({block: 'end'});
    const controls = panel.querySelector('.tl-controls').getBoundingClientRect();
    const control = panel.querySelector('.tl-controls input, .tl-controls select')
        .getBoundingClientRect();
    const seen = document.elementFromPoint(control.x + control.width / 2,
                                           control.y + control.height / 2);
    return {top: controls.top, bottom: controls.bottom, height: window.innerHeight,
            figure_bottom: figure.getBoundingClientRect().bottom,
            control_on_top: !!seen && !!seen.closest('.tl-controls'),
            panel_right: panel.getBoundingClientRect().right,
            page: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("relative", list(EXPLORER_PAGES), ids=list(EXPLORER_PAGES))
def test_explorers_fit_a_phone_with_their_controls_in_view(open_page, relative):
    """At 375 px no panel makes the page wider (its tables scroll in their own boxes), and the
    controls stay in view, uncovered, while the reader looks at the end of what they change.

    The page is loaded at 375 px, as a phone loads it. Loaded wide and then resized, the theme's
    navigation sidebar turns into a drawer that slides away in about 0.2 s (a CSS transition,
    which ignores reduced motion), and a check in that moment found the drawer's links over the
    control: the test failed alone on a quiet machine and passed in a slower, busy full run."""
    opened = open_page(relative, viewport=PHONE)
    try:
        page = opened.page
        for kind in EXPLORER_PAGES[relative]:
            found = page.evaluate(IN_VIEW, kind)
            assert found["page"] <= PHONE["width"], (kind, found)
            assert found["panel_right"] <= PHONE["width"], (kind, found)
            assert found["figure_bottom"] <= found["height"] + 1, (kind, found)
            assert 0 <= found["top"] and found["bottom"] <= found["height"], (kind, found)
            assert found["control_on_top"], f"{kind}: its control is covered: {found}"
        for box in page.locator(".tl-explorer .tl-scroll").all():
            assert box.get_attribute("tabindex") == "0" and box.get_attribute("aria-label")
    finally:
        opened.close()


def contrast(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """WCAG contrast ratio of two sRGB colours."""

    def luminance(colour):
        linear = [
            c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
            for c in (v / 255 for v in colour[:3])
        ]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def rendered_mark(page, selector: str) -> dict:
    """How a native control is drawn: the panel's colour just outside it, and the strongest
    contrast against that colour in the middle of the control (where a check or dot goes)."""
    from io import BytesIO

    from PIL import Image

    control = page.locator(selector)
    control.scroll_into_view_if_needed()
    box = control.bounding_box()
    pad = 4
    shot = page.screenshot(
        clip={
            "x": box["x"] - pad,
            "y": box["y"] - pad,
            "width": box["width"] + 2 * pad,
            "height": box["height"] + 2 * pad,
        }
    )
    image = Image.open(BytesIO(shot)).convert("RGB")
    background = image.getpixel((1, 1))
    width, height = image.size
    middle = [
        image.getpixel((x, y))
        for x in range(int(width * 0.35), int(width * 0.65) + 1)
        for y in range(int(height * 0.35), int(height * 0.65) + 1)
    ]
    return {
        "background": background,
        "mark": max(contrast(pixel, background) for pixel in middle),
    }


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_checked_controls_read_checked_in_both_schemes(chapter_1, scheme):
    """The panel and its native radio buttons and checkboxes follow the same colour scheme: a
    checked control shows a mark that stands out from the panel (3:1, WCAG's contrast for
    graphics), an unchecked one shows none. Rendered pixels, which axe cannot see."""
    page = chapter_1.page
    page.emulate_media(color_scheme=scheme)
    page.evaluate("(s) => document.documentElement.setAttribute('data-theme', s)", scheme)
    page.locator("#tl-mask-right").check()
    page.locator("#tl-mask-causal").set_checked(False)
    page.locator("#tl-width-scaled").set_checked(True)
    checked = {"radio": "#tl-mask-right", "checkbox": "#tl-width-scaled"}
    unchecked = {"radio": "#tl-mask-left", "checkbox": "#tl-mask-causal"}
    for kind in ("radio", "checkbox"):
        on = rendered_mark(page, checked[kind])
        off = rendered_mark(page, unchecked[kind])
        drawn_for = page.evaluate(
            "(s) => getComputedStyle(document.querySelector(s)).colorScheme", checked[kind]
        )
        assert drawn_for == scheme, f"{scheme} scheme: the {kind} is drawn for {drawn_for}"
        # what is painted behind the control is the scheme's: light in light, dark in dark
        background = on["background"]
        light = contrast(background, (0, 0, 0)) > contrast(background, (255, 255, 255))
        assert light == (scheme == "light"), (
            f"{scheme} scheme: the {kind} sits on {background}, a background of the other scheme"
        )
        assert contrast(off["background"], background) < 1.1, (on, off)
        assert on["mark"] >= 3, f"{scheme}: a checked {kind} shows no clear mark: {on}"
        assert off["mark"] < 2, f"{scheme}: an unchecked {kind} looks marked: {off}"
