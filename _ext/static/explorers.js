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

  const STYLE = [
    ".tl-explorer { border: 1px solid var(--pst-color-border, #8a8a8a); border-radius: 4px;",
    "  padding: 0.5em 0.75em; margin: 1em 0; }",
    ".tl-explorer .tl-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1.2em;",
    "  align-items: center; margin: 0.4em 0; }",
    ".tl-explorer .tl-controls span { white-space: nowrap; }",
    ".tl-explorer fieldset { border: none; margin: 0; padding: 0; display: inline-block; }",
    ".tl-explorer fieldset span { margin-left: 0.6em; }",
    ".tl-explorer legend { float: left; width: auto; margin: 0; padding: 0; font-size: inherit;",
    "  font-weight: inherit; line-height: inherit; }",
    ".tl-explorer input[type=range] { width: 16em; }",
    ".tl-explorer .tl-status { min-height: 1.5em; margin: 0.3em 0; }",
    ".tl-explorer table.tl-table { border-collapse: collapse; font-size: 0.85em;",
    "  font-variant-numeric: tabular-nums; margin: 0.3em 0; }",
    ".tl-explorer table.tl-table caption { caption-side: top; text-align: left; padding: 0.2em 0;",
    "  color: inherit; background: transparent; }",
    ".tl-explorer table.tl-table th, .tl-explorer table.tl-table td {",
    "  padding: 0.15em 0.35em; text-align: right; border: 1px solid var(--pst-color-border, #8a8a8a); }",
    ".tl-explorer table.tl-table th[scope=row] { text-align: left; }",
    ".tl-explorer table.tl-table td.tl-share { text-align: left; width: 13em; }",
    ".tl-explorer .tl-bar { display: inline-block; height: 0.8em; background: #0072B2; }",
    ".tl-explorer .tl-figure:has(#tl-mask-pytorch) { display: flex; flex-wrap: wrap; gap: 0 1.5em;",
    "  align-items: flex-start; }",
    ".tl-explorer td.tl-hidden { outline: 2px dashed currentColor; outline-offset: -4px; }",
    ".tl-explorer .tl-figure:has(#tl-heads-weights) { display: flex; flex-wrap: wrap; gap: 0 1.5em;",
    "  align-items: flex-start; }",
    ".tl-explorer .tl-winner { border-left: 3px solid currentColor !important;",
    "  border-right: 3px solid currentColor !important; }",
    ".tl-explorer td.tl-top { font-weight: bold; text-decoration: underline; }",
    ".tl-explorer td.tl-pad-row { text-align: left; font-style: italic; }",
    ".tl-explorer ol.tl-tokens { list-style: none; display: flex; flex-wrap: wrap; gap: 0.3em;",
    "  padding: 0; margin: 0.4em 0; }",
    ".tl-explorer ol.tl-tokens li { border: 1px solid var(--pst-color-border, #8a8a8a);",
    "  border-radius: 3px; padding: 0 0.3em; font-family: var(--pst-font-family-monospace, monospace); }",
    ".tl-explorer ol.tl-tokens li.tl-new { border: 2px solid currentColor; font-weight: bold; }",
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

  /* Chapter 1: the slider over the temperature of the soft join. */
  function temperature(panel, data) {
    const slider = panel.querySelector("#tl-temperature-step");
    const shown = panel.querySelector("#tl-temperature-value");
    const status = panel.querySelector(".tl-status");
    const [weightDecimals, valueDecimals] = data.decimals;
    const grid = table("Soft-join weights (tickets × plans), blended values and the exact join");
    const columns = data.keys.slice();
    for (const name of data.values) columns.push(`${name} (soft)`, `${name} (merge)`);
    grid.tHead.appendChild(headerRow("ticket", columns));
    panel.querySelector(".tl-figure").appendChild(grid);

    function draw() {
      const state = data.states[Number(slider.value)];
      const label = state.label;
      shown.textContent = label;
      slider.setAttribute("aria-valuetext", label);
      const body = element("tbody");
      data.rows.forEach((name, i) => {
        const row = element("tr");
        row.appendChild(element("th", { scope: "row" }, name));
        state.weights[i].forEach((w) =>
          row.appendChild(weightCell(w, weightDecimals, data.colours, "tl-weight")));
        state.mixed[i].forEach((value, j) => {
          row.appendChild(element("td", { class: "tl-soft" }, format(value, valueDecimals)));
          row.appendChild(element("td", { class: "tl-exact" },
            format(data.exact[i][j], valueDecimals)));
        });
        body.appendChild(row);
      });
      grid.replaceChild(body, grid.tBodies[0]);
      const gaps = data.values.map((name, j) => `${name} ${format(state.gaps[j], valueDecimals)}`);
      status.textContent = state.equal
        ? `${label}: the blended columns equal the exact join.`
        : `${label}: largest gap from the exact join: ${gaps.join(", ")}.`;
    }
    slider.addEventListener("input", draw);
    draw();
  }

  /* Chapter 1: why √d — one query's softmax row at each width, scaled or not. */
  function width(panel, data) {
    const select = panel.querySelector("#tl-width-d");
    const scaled = panel.querySelector("#tl-width-scaled");
    const status = panel.querySelector(".tl-status");
    const [weightDecimals, valueDecimals] = data.decimals;
    const grid = table("One query's scores and softmax weights over the keys");
    grid.tHead.appendChild(headerRow("key", ["score", "weight", "share of the row"]));
    panel.querySelector(".tl-figure").appendChild(grid);

    function draw() {
      const state = data.states[Number(select.value)];
      const row = scaled.checked ? state.scaled : state.raw;
      const body = element("tbody");
      row.weights.forEach((w, i) => {
        const line = element("tr");
        line.appendChild(element("th", { scope: "row" }, `k${i + 1}`));
        line.appendChild(element("td", { class: "tl-score" }, format(row.scores[i], valueDecimals)));
        line.appendChild(weightCell(w, weightDecimals, data.colours, "tl-weight"));
        const bar = element("td", { class: "tl-share", "aria-hidden": "true" });
        const fill = element("span", { class: "tl-bar" });
        fill.style.width = `${(w * 12).toFixed(2)}em`;
        bar.appendChild(fill);
        line.appendChild(bar);
        body.appendChild(line);
      });
      grid.replaceChild(body, grid.tBodies[0]);
      const how = scaled.checked ? "scores divided by √d" : "raw scores";
      status.textContent = `d = ${state.width}, ${how}: scores' standard deviation ` +
        `${format(row.std, valueDecimals)}, largest weight ${format(row.largest, weightDecimals)} ` +
        `(key k${row.top_key + 1}).`;
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
      figure.appendChild(weights("PyTorch: softmax of the scores, hidden ones set to −∞",
        "tl-mask-pytorch", state.pytorch, state));
      if (state.book) {
        figure.appendChild(weights("The book's attention", "tl-mask-book", state.book, state));
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
      figure.replaceChildren(tokens(state, labels), weights(state, head, labels));
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

  /* Chapter 5: step through the learned merges and re-tokenize the unseen sentence. */
  function merges(panel, data) {
    const slider = panel.querySelector("#tl-merges-step");
    const shown = panel.querySelector("#tl-merges-value");
    const status = panel.querySelector(".tl-status");
    const figure = panel.querySelector(".tl-figure");

    function draw() {
      const state = data.states[Number(slider.value)];
      const made = state.merge ? state.merge.join("") : null;
      const label = `${state.merges} of ${data.states.length - 1} merges`;
      shown.textContent = label;
      slider.setAttribute("aria-valuetext", label);
      const step = element("p", { id: "tl-merges-merge" }, state.merge
        ? `Merge ${state.merges}: ${state.merge[0]} + ${state.merge[1]} → ${made}`
        : "Before any merge: one token per character");
      const list = element("ol", { class: "tl-tokens", id: "tl-merges-tokens",
        "aria-label": `the sentence "${data.sentence}" as tokens` });
      for (const token of state.tokens.split(" ")) {
        list.appendChild(element("li", token === made ? { class: "tl-new" } : {}, token));
      }
      figure.replaceChildren(step, list);
      status.textContent = `After ${label} (vocabulary of ${state.vocab_size} tokens): ` +
        `${data.words} words are ${state.count} tokens, ${state.per_word.toFixed(2)} per word` +
        (!state.merge ? "." : state.made
          ? `; ${state.made} of them made by merge ${state.merges} (bold).`
          : `; merge ${state.merges} makes none of them.`);
    }
    slider.addEventListener("input", draw);
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
