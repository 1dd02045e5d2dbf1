/* The book's explorers (code/transformer_lab/explorers.py): figures a reader can move.
 *
 * Each explorer is a hidden panel of native controls with its data, computed by the package when
 * the page executed, as JSON in a <script type="application/json">. This script only shows the
 * state the controls select: it formats the exported numbers and never computes new ones. Without
 * JavaScript (and in print) the panel stays hidden and the chapter's static figure is the figure.
 * No framework, no request to any host.
 */
(function () {
  "use strict";

  /* Colours come from the page's theme (pydata-sphinx-theme's variables, light or dark), with
   * system colours as the fallback, and the native controls are told the same scheme
   * (color-scheme), so a radio button or checkbox is drawn for the background it sits on. */
  const STYLE = [
    ".tl-explorer { border: 1px solid var(--pst-color-border, #8a8a8a); border-radius: 4px;",
    "  padding: 0.5em 0.75em; margin: 1em 0; max-width: 100%; box-sizing: border-box;",
    "  background: var(--pst-color-background, Canvas); color: var(--pst-color-text-base, CanvasText);",
    "  color-scheme: light; accent-color: var(--pst-color-primary, #0072B2); }",
    "html[data-theme=dark] .tl-explorer { color-scheme: dark; }",
    "@media (prefers-color-scheme: dark) { html:not([data-theme=light]) .tl-explorer {",
    "  color-scheme: dark; } }",
    ".tl-explorer .tl-prompt { margin: 0.3em 0; font-style: italic; }",
    /* The controls stay in view while the reader scrolls through what they change: sticky
     * under the theme's header, on the panel's own background. */
    ".tl-explorer .tl-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.2em;",
    "  align-items: center; margin: 0.4em 0; padding: 0.3em 0; position: sticky;",
    "  top: var(--pst-header-height, 0); z-index: 2;",
    "  background: var(--pst-color-background, Canvas); }",
    ".tl-explorer .tl-controls span { white-space: nowrap; }",
    ".tl-explorer .tl-controls span.tl-wide, .tl-explorer .tl-controls span:has(select) {",
    "  white-space: normal; max-width: 100%; }",
    ".tl-explorer select { max-width: 100%; }",
    ".tl-explorer fieldset { border: none; margin: 0; padding: 0; display: inline-block; }",
    ".tl-explorer fieldset span { margin-left: 0.6em; }",
    ".tl-explorer legend { float: left; width: auto; margin: 0; padding: 0; font-size: inherit;",
    "  font-weight: inherit; line-height: inherit; }",
    ".tl-explorer input[type=range] { width: 16em; max-width: 100%; }",
    ".tl-explorer button { font: inherit; padding: 0.1em 0.5em; }",
    ".tl-explorer button[aria-disabled=true] { border-style: dashed; cursor: default; }",
    ".tl-explorer .tl-status { min-height: 1.5em; margin: 0.3em 0; }",
    /* A table wider than the panel scrolls inside its own box, never the page. */
    ".tl-explorer .tl-scroll { max-width: 100%; overflow-x: auto; }",
    /* A caption stays readable while its wide table scrolls: it wraps at the box's width and
     * stays at the box's left edge. */
    ".tl-explorer .tl-scroll caption { position: sticky; left: 0;",
    "  max-width: min(40em, calc(100vw - 3.5rem)); }",
    ".tl-explorer .tl-figure { display: flex; flex-wrap: wrap; gap: 0 1.5em;",
    "  align-items: flex-start; max-width: 100%; }",
    ".tl-explorer .tl-figure > * { max-width: 100%; }",
    ".tl-explorer table.tl-table { border-collapse: collapse; font-size: 0.85em;",
    "  font-variant-numeric: tabular-nums; margin: 0.3em 0; }",
    ".tl-explorer table.tl-table caption { caption-side: top; text-align: left; padding: 0.2em 0;",
    "  color: inherit; background: transparent; }",
    ".tl-explorer table.tl-table th, .tl-explorer table.tl-table td {",
    "  padding: 0.15em 0.35em; text-align: right; border: 1px solid var(--pst-color-border, #8a8a8a); }",
    ".tl-explorer table.tl-table th[scope=row] { text-align: left; }",
    ".tl-explorer table.tl-table td.tl-share { text-align: left; width: 8em; }",
    ".tl-explorer .tl-bar { display: inline-block; height: 0.8em; background: #0072B2; }",
    "html[data-theme=dark] .tl-explorer .tl-bar { background: #56B4E9; }",
    ".tl-explorer td.tl-hidden { outline: 2px dashed currentColor; outline-offset: -4px; }",
    ".tl-explorer .tl-winner { border-left: 3px solid currentColor !important;",
    "  border-right: 3px solid currentColor !important; }",
    ".tl-explorer td.tl-top { font-weight: bold; text-decoration: underline; }",
    ".tl-explorer td.tl-pad-row { text-align: left; font-style: italic; }",
    ".tl-explorer .tl-note { margin: 0.3em 0; }",
    ".tl-explorer ol.tl-words { list-style: none; display: flex; flex-wrap: wrap; gap: 0.4em 1.1em;",
    "  padding: 0; margin: 0.4em 0; }",
    ".tl-explorer ol.tl-words li { display: flex; gap: 2px; padding-bottom: 3px;",
    "  border-bottom: 2px solid var(--pst-color-text-muted, GrayText); }",
    ".tl-explorer .tl-token { border: 1px solid var(--pst-color-border, #8a8a8a);",
    "  border-radius: 3px; padding: 0 0.3em; font-family: var(--pst-font-family-monospace, monospace); }",
    ".tl-explorer .tl-token.tl-new { border: 2px solid currentColor; font-weight: bold; }",
    "@media print { .tl-explorer { display: none !important; } }",
  ].join("\n");

  function rgb(hex) {
    return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  }

  /* The colour of weight t in [0, 1], between the exported stops of the book's colormap. */
  function colourAt(stops, t) {
    const x = Math.min(Math.max(t, 0), 1) * (stops.length - 1);
    const i = Math.min(Math.floor(x), stops.length - 2);
    const a = rgb(stops[i]);
    const b = rgb(stops[i + 1]);
    return a.map((value, k) => Math.round(value + (b[k] - value) * (x - i)));
  }

  /* Black or white text, whichever contrasts with the background (WCAG relative luminance). */
  function textOn(colour) {
    const linear = colour.map((c) => {
      const s = c / 255;
      return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
    });
    const luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2];
    return luminance > 0.18 ? "#000000" : "#ffffff";
  }

  function format(value, decimals) {
    return value === null ? "NaN" : value.toFixed(decimals);
  }

  function element(tag, attributes, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function headerRow(corner, labels) {
    const row = element("tr");
    row.appendChild(element("th", { scope: "col" }, corner));
    for (const label of labels) row.appendChild(element("th", { scope: "col" }, label));
    return row;
  }

  /* A weight cell: the number, on the colormap's colour for it (NaN: no colour). */
  function weightCell(value, decimals, stops, className) {
    const cell = element("td", { class: className }, format(value, decimals));
    if (value !== null) {
      const colour = colourAt(stops, value);
      cell.style.backgroundColor = `rgb(${colour.join(",")})`;
      cell.style.color = textOn(colour);
    }
    return cell;
  }

  function table(caption) {
    const node = element("table", { class: "tl-table" });
    node.appendChild(element("caption", {}, caption));
    node.appendChild(element("thead"));
    node.appendChild(element("tbody"));
    return node;
  }

  /* A table in a box of its own that scrolls sideways when the table is wider than the panel
   * (a phone), so the page itself never does. Focusable and named, for keyboard readers. */
  function scrollBox(node) {
    const box = element("div", { class: "tl-scroll", tabindex: "0", role: "region",
      "aria-label": node.caption ? node.caption.textContent : "table" });
    box.appendChild(node);
    return box;
  }

  /* Chapter 1: the slider over the temperature of the soft join. */
  function temperature(panel, data) {
    const slider = panel.querySelector("#tl-temperature-step");
    const shown = panel.querySelector("#tl-temperature-value");
    const status = panel.querySelector(".tl-status");
    const [weightDecimals, valueDecimals] = data.decimals;
    /* Two narrow tables rather than one wide one: side by side on a wide screen, one above
     * the other on a phone. */
    const weights = table("Soft-join weights (tickets × plans)");
    weights.tHead.appendChild(headerRow("ticket", data.keys));
    const columns = [];
    for (const name of data.values) columns.push(`${name} (soft)`, `${name} (merge)`);
    const blend = table("Blended values beside the exact join (merge)");
    blend.tHead.appendChild(headerRow("ticket", columns));
    panel.querySelector(".tl-figure").append(scrollBox(weights), scrollBox(blend));

    function draw() {
      const state = data.states[Number(slider.value)];
      const label = state.label;
      shown.textContent = label;
      slider.setAttribute("aria-valuetext", label);
      const weightRows = element("tbody");
      const blendRows = element("tbody");
      data.rows.forEach((name, i) => {
        const row = element("tr");
        row.appendChild(element("th", { scope: "row" }, name));
        state.weights[i].forEach((w) =>
          row.appendChild(weightCell(w, weightDecimals, data.colours, "tl-weight")));
        weightRows.appendChild(row);
        const values = element("tr");
        values.appendChild(element("th", { scope: "row" }, name));
        state.mixed[i].forEach((value, j) => {
          values.appendChild(element("td", { class: "tl-soft" }, format(value, valueDecimals)));
          values.appendChild(element("td", { class: "tl-exact" },
            format(data.exact[i][j], valueDecimals)));
        });
        blendRows.appendChild(values);
      });
      weights.replaceChild(weightRows, weights.tBodies[0]);
      blend.replaceChild(blendRows, blend.tBodies[0]);
      const gaps = data.values.map((name, j) => `${name} ${format(state.gaps[j], valueDecimals)}`);
      status.textContent = state.equal
        ? `${label}: the blended columns equal the exact join.`
        : `${label}: largest gap from the exact join: ${gaps.join(", ")}.`;
    }
    slider.addEventListener("input", draw);
    draw();
  }

  /* Chapter 1: why √d — the average softmax row at each width (keys ranked by weight), scaled
   * or not, over the same draws as the chapter's figure. */
  function width(panel, data) {
    const select = panel.querySelector("#tl-width-d");
    const scaled = panel.querySelector("#tl-width-scaled");
    const status = panel.querySelector(".tl-status");
    const [weightDecimals, valueDecimals] = data.decimals;
    const grid = table(`One query's softmax row, keys ranked by weight, averaged over ` +
      `${data.trials} draws`);
    grid.tHead.appendChild(headerRow("rank", ["score", "weight", "share of the row"]));
    panel.querySelector(".tl-figure").appendChild(scrollBox(grid));

    function draw() {
      const state = data.states[Number(select.value)];
      const row = scaled.checked ? state.scaled : state.raw;
      const body = element("tbody");
      row.weights.forEach((w, i) => {
        const line = element("tr");
        line.appendChild(element("th", { scope: "row" }, String(i + 1)));
        line.appendChild(element("td", { class: "tl-score" }, format(row.scores[i], valueDecimals)));
        line.appendChild(weightCell(w, weightDecimals, data.colours, "tl-weight"));
        const bar = element("td", { class: "tl-share", "aria-hidden": "true" });
        const fill = element("span", { class: "tl-bar" });
        fill.style.width = `${(w * 8).toFixed(2)}em`;
        bar.appendChild(fill);
        line.appendChild(bar);
        body.appendChild(line);
      });
      grid.replaceChild(body, grid.tBodies[0]);
      const how = scaled.checked ? "scores divided by √d" : "raw scores";
      status.textContent = `d = ${state.width}, ${how}: scores' standard deviation ` +
        `${format(row.std, valueDecimals)}, average largest weight ` +
        `${format(row.largest, weightDecimals)} over ${data.trials} draws ` +
        "(the figure's point at this width).";
    }
    select.addEventListener("change", draw);
    scaled.addEventListener("change", draw);
    draw();
  }

  /* Chapters 1–2: the mask builder — padding, causal, and a row with no key left. */
  function mask(panel, data) {
    const count = panel.querySelector("#tl-mask-count");
    const left = panel.querySelector("#tl-mask-left");
    const causal = panel.querySelector("#tl-mask-causal");
    const status = panel.querySelector(".tl-status");
    const figure = panel.querySelector(".tl-figure");
    const [decimals] = data.decimals;

    function weights(caption, id, matrix, state) {
      const grid = table(caption);
      grid.id = id;
      const name = (token, i) => (state.padding[i] === "1" ? `${token} (pad)` : token);
      grid.tHead.appendChild(headerRow("query \\ key", data.tokens.map(name)));
      data.tokens.forEach((token, i) => {
        const row = element("tr");
        row.appendChild(element("th", { scope: "row" }, name(token, i)));
        matrix[i].forEach((w, j) => {
          const cell = weightCell(w, decimals, data.colours, "tl-weight");
          if (state.ignore[i][j] === "1") {
            cell.classList.add("tl-hidden");
            cell.title = "hidden by the mask";
          }
          row.appendChild(cell);
        });
        grid.tBodies[0].appendChild(row);
      });
      return grid;
    }

    function draw() {
      const side = left.checked ? "left" : "right";
      const key = `${count.value}-${side}-${causal.checked ? "causal" : "full"}`;
      const state = data.states[key];
      figure.replaceChildren();
      figure.appendChild(scrollBox(weights("PyTorch: softmax of the scores, hidden ones set " +
        "to −∞", "tl-mask-pytorch", state.pytorch, state)));
      if (state.agree) {
        figure.appendChild(element("p", { id: "tl-mask-book", class: "tl-note" },
          "The book's attention gives exactly these weights: every row has a key left, " +
          "so the two tables agree. Pad on the left under the causal mask to part them."));
      } else if (state.book) {
        figure.appendChild(scrollBox(weights("The book's attention", "tl-mask-book",
          state.book, state)));
      } else {
        figure.appendChild(element("p", { id: "tl-mask-book", class: "tl-error" },
          `The book's attention raises ValueError: ${state.error}`));
      }
      const empty = state.empty_rows;
      const what = `${count.value} padded on the ${side}, causal ${causal.checked ? "on" : "off"}`;
      status.textContent = empty
        ? `${what}: ${empty} row(s) with no key left — PyTorch gives NaN, the book's attention raises an error.`
        : `${what}: every row sums to 1.`;
    }
    count.addEventListener("change", draw);
    for (const control of panel.querySelectorAll("input")) control.addEventListener("change", draw);
    draw();
  }

  /* Chapter 3: the trained set classifier's heads — one validation set, one head at a time. */
  function heads(panel, data) {
    const select = panel.querySelector("#tl-heads-set");
    const radios = panel.querySelectorAll("input[name=tl-heads-head]");
    const status = panel.querySelector(".tl-status");
    const figure = panel.querySelector(".tl-figure");
    const [weightDecimals, valueDecimals] = data.decimals;

    /* The static figure's names: t<i> a real token, p<i> padding, * the largest key. */
    function names(state) {
      return Array.from(state.padding, (bit, i) =>
        (bit === "1" ? "p" : "t") + i + (i === state.winner ? "*" : ""));
    }

    function tokens(state, labels) {
      const grid = table(`Validation set ${state.set}: its tokens (* largest key, p padding)`);
      grid.id = "tl-heads-tokens";
      grid.tHead.appendChild(headerRow("token", labels));
      ["key", "value"].forEach((name, column) => {
        const row = element("tr");
        row.appendChild(element("th", { scope: "row" }, name));
        state.tokens.forEach((token, i) => {
          const cell = element("td", { class: token ? "tl-token" : "tl-token tl-pad" },
            token ? format(token[column], valueDecimals) : "pad");
          if (i === state.winner) cell.classList.add("tl-winner");
          row.appendChild(cell);
        });
        grid.tBodies[0].appendChild(row);
      });
      return grid;
    }

    function weights(state, head, labels) {
      const grid = table(`Head ${head}: each query's weights over the keys ` +
        "(bold: its most-attended key)");
      grid.id = "tl-heads-weights";
      const header = headerRow("query \\ key", labels);
      header.children[state.winner + 1].classList.add("tl-winner");
      grid.tHead.appendChild(header);
      const chosen = state.heads[head];
      chosen.weights.forEach((line, i) => {
        const row = element("tr");
        row.appendChild(element("th", { scope: "row" }, labels[i]));
        if (line === null) {
          row.appendChild(element("td", { class: "tl-pad-row", colspan: String(labels.length) },
            "padded query: its output is never used"));
        } else {
          line.forEach((w, j) => {
            const cell = weightCell(w, weightDecimals, data.colours, "tl-weight");
            if (state.padding[j] === "1") {
              cell.classList.add("tl-hidden");
              cell.title = "padding: hidden from every query";
            }
            if (j === state.winner) cell.classList.add("tl-winner");
            if (j === chosen.top_keys[i]) cell.classList.add("tl-top");
            row.appendChild(cell);
          });
        }
        grid.tBodies[0].appendChild(row);
      });
      return grid;
    }

    function draw() {
      const state = data.states[Number(select.value)];
      const checked = panel.querySelector("input[name=tl-heads-head]:checked");
      const head = Number(checked.value);
      const chosen = state.heads[head];
      const labels = names(state);
      figure.replaceChildren(scrollBox(tokens(state, labels)),
        scrollBox(weights(state, head, labels)));
      const winner = state.tokens[state.winner];
      status.textContent = `Validation set ${state.set}, head ${head}: ` +
        `the largest key, t${state.winner} (key ${format(winner[0], valueDecimals)}, ` +
        `value ${format(winner[1], valueDecimals)}), gets ${format(chosen.share, weightDecimals)} ` +
        `of a real query's attention on average (uniform share ` +
        `${format(state.uniform, weightDecimals)}) and is the most-attended key of ` +
        `${chosen.winner_top} of ${state.length} real queries. Label ${state.label}; ` +
        `the model's probability of label 1: ${format(state.probability, weightDecimals)} — ` +
        `${state.right ? "right" : "wrong"}.`;
    }
    select.addEventListener("change", draw);
    radios.forEach((radio) => radio.addEventListener("change", draw));
    draw();
  }

  /* Chapter 5: step through the learned merges and re-tokenize the unseen sentence. Each word
   * is underlined as one group of tokens; the buttons jump between the steps that change it. */
  function merges(panel, data) {
    const slider = panel.querySelector("#tl-merges-step");
    const shown = panel.querySelector("#tl-merges-value");
    const previous = panel.querySelector("#tl-merges-previous");
    const next = panel.querySelector("#tl-merges-next");
    const status = panel.querySelector(".tl-status");
    const figure = panel.querySelector(".tl-figure");
    const changes = data.states.filter((state) => state.merges && state.changed)
      .map((state) => state.merges);
    const last = data.states.length - 1;

    function draw() {
      const state = data.states[Number(slider.value)];
      const made = state.merge ? state.merge.join("") : null;
      const label = `${state.merges} of ${last} merges`;
      shown.textContent = label;
      slider.setAttribute("aria-valuetext", label);
      const step = element("p", { id: "tl-merges-merge" }, state.merge
        ? `Merge ${state.merges}: ${state.merge[0]} + ${state.merge[1]} → ${made}`
        : "Before any merge: one token per character");
      const list = element("ol", { class: "tl-words", id: "tl-merges-tokens",
        "aria-label": `the sentence "${data.sentence}", word by word, as tokens` });
      const tokens = state.tokens.split(" ");
      let at = 0;
      for (const size of state.word_sizes) {
        const word = element("li");
        for (const token of tokens.slice(at, at + size)) {
          word.appendChild(element("span",
            { class: token === made ? "tl-token tl-new" : "tl-token" }, token));
        }
        at += size;
        list.appendChild(word);
      }
      figure.replaceChildren(step, list);
      let change = ".";
      if (state.merge && state.changed) {
        change = `; merge ${state.merges} changed the sentence: ${state.made} of its tokens ` +
          "made by it (bold).";
      } else if (state.merge) {
        change = `; merge ${state.merges} leaves it unchanged: ${state.merge[0]} and ` +
          `${state.merge[1]} never stand side by side in it.`;
      }
      status.textContent = `After ${label} (vocabulary of ${state.vocab_size} tokens): ` +
        `${data.words} words are ${state.count} tokens, ${state.per_word.toFixed(2)} per word` +
        change;
      /* aria-disabled, not disabled: a button that keeps its focus at the last change */
      const k = state.merges;
      previous.setAttribute("aria-disabled", String(!changes.some((c) => c < k)));
      next.setAttribute("aria-disabled", String(!changes.some((c) => c > k)));
    }

    function jump(target) {
      if (target === undefined) return;
      slider.value = String(target);
      draw();
    }
    slider.addEventListener("input", draw);
    previous.addEventListener("click", () =>
      jump(changes.filter((c) => c < Number(slider.value)).pop()));
    next.addEventListener("click", () =>
      jump(changes.find((c) => c > Number(slider.value))));
    draw();
  }

  const EXPLORERS = {
    temperature: temperature, width: width, mask: mask, heads: heads, merges: merges,
  };

  function start() {
    const panels = document.querySelectorAll(".tl-explorer[data-explorer]");
    if (!panels.length) return;
    document.head.appendChild(element("style", {}, STYLE));
    panels.forEach((panel) => {
      const show = EXPLORERS[panel.dataset.explorer];
      const source = panel.querySelector("script.tl-explorer-data");
      if (!show || !source) return;
      show(panel, JSON.parse(source.textContent));
      panel.hidden = false;
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
