/* The explorers in a Jupyter notebook (JupyterLab, Binder, a downloaded notebook): the ES module
 * of the anywidget ``transformer_lab.explorers.ExplorerWidget``.
 *
 * It runs the HTML book's own script, _ext/static/explorers.js, unchanged: explorers.py puts that
 * script's text where the marker line below is, inside ``runExplorers``. The script looks for its
 * panels with ``document``; here ``document`` is the real one except that its queries, its
 * ``head`` (where the script adds its style) and its ``readyState`` belong to the widget's
 * element, so the script draws this one panel, at once, and no other panel of the notebook.
 * The widget sends the panel's HTML (controls and data) as the ``panel`` trait: the same HTML
 * the book's page holds.
 */

function runExplorers(document) {
  // EXPLORERS_JS
}

/* The page's document, with its queries scoped to ``root``. DOM methods are bound to the real
 * document (a Proxy would otherwise call them on itself and the browser would refuse). */
function scopedDocument(root) {
  const own = {
    readyState: "complete",
    head: root,
    querySelector: (selector) => root.querySelector(selector),
    querySelectorAll: (selector) => root.querySelectorAll(selector),
    getElementById: (id) => root.querySelector(`#${CSS.escape(id)}`),
  };
  return new Proxy(document, {
    get(target, name) {
      if (Object.prototype.hasOwnProperty.call(own, name)) return own[name];
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const FALLBACK = "This explorer could not start here; the page's static figure shows the " +
  "same results. It also moves in the HTML book.";

function render({ model, el }) {
  // Keys pressed on the explorer's controls move the controls, not JupyterLab's cells.
  el.dataset.lmSuppressShortcuts = "true";
  el.classList.add("tl-notebook-explorer");
  el.innerHTML = model.get("panel");
  try {
    runExplorers(scopedDocument(el));
  } catch (error) {
    console.error("transformer_lab explorer:", error);
  }
  const panel = el.querySelector(".tl-explorer");
  if (!panel || panel.hidden) {
    el.replaceChildren();
    el.appendChild(document.createElement("p")).textContent = FALLBACK;
  }
}

export default { render };
