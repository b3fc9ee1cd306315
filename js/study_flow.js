// Co-Gym study flow for anywidget: one ES module, no build step.
//
// Leads a participant through a study in JupyterLab: consent, instructions, practice, each
// session (in the existing session panel, imported from its source text in the model's
// `panel_module`), each comparison of two outcomes, each questionnaire, thanks. Everything shown comes from the server's study
// API (/cogym/study/api), which gives a participant only their own step, under neutral labels:
// this module never learns a condition's name. Text is only ever set as textContent.
// Keyboard: Tab moves between controls in reading order, Enter submits a step (Ctrl+Enter in
// a free-text box, where Enter is a new line), Escape in a text field puts back what it held
// before this edit and leaves the field.

/**
 * @typedef {{ kind: string, name: string, text: string, points: number, low: string, high: string,
 *   options: string[], labels: string[] }} StudyItem
 * @typedef {{ label: string, text: string }} ShownOutcome
 * @typedef {{ id: string, kind: string, title: string, text?: string, about?: string, items: StudyItem[],
 *   session?: { session_id: string, role: string }, time_limit_seconds?: number | null, ready?: boolean,
 *   outcomes: ShownOutcome[] }} StudyStep
 * @typedef {{ participant: string, study: string, status: string, step: StudyStep, index: number,
 *   total: number }} StudyState
 * @typedef {{ get: (name: string) => any, widget_manager?: unknown }} WidgetModel
 * @typedef {{ box: HTMLElement, value: () => unknown }} ItemControl
 */

/** @param {string} tag @param {Record<string, any>} [attrs] @param {...any} children */
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = String(value);
    else if (key === "testid") node.dataset.testid = String(value);
    else if (key === "text") node.textContent = String(value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (key in node && typeof value !== "string") /** @type {any} */ (node)[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** The Jupyter server's base URL, as the page knows it ("/user/NAME/" under JupyterHub). */
/** @param {string | undefined} fallback */
function pageBaseUrl(fallback) {
  const config = document.getElementById("jupyter-config-data");
  if (config) {
    try {
      const base = JSON.parse(config.textContent || "{}").baseUrl;
      if (typeof base === "string" && base) return base.endsWith("/") ? base : `${base}/`;
    } catch {
      // not JSON: use the fallback
    }
  }
  return fallback || "/";
}

function xsrfToken() {
  const match = /(?:^|;\s*)_xsrf=([^;]*)/.exec(document.cookie || "");
  return match ? decodeURIComponent(match[1]) : null;
}

/** The study API of this server. */
class StudyApi {
  /** @param {string} base */
  constructor(base) {
    this.base = base;
  }

  headers() {
    /** @type {Record<string, string>} */
    const headers = { "Content-Type": "application/json" };
    const xsrf = xsrfToken();
    if (xsrf) headers["X-XSRFToken"] = xsrf;
    return headers;
  }

  /** @param {string} method @param {string} path @param {unknown} [body] @param {boolean} [keepalive] */
  async call(method, path, body, keepalive = false) {
    const response = await fetch(`${this.base}cogym/study/api/${path}`, {
      method, headers: this.headers(), credentials: "same-origin", keepalive,
      body: method === "GET" ? undefined : JSON.stringify(body || {}),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.message || answer.error || `HTTP ${response.status}`);
    return answer;
  }
}

/** Enter submits (not in a text box, a button or a link); Escape puts a field back. */
/** @param {HTMLElement} form @param {() => void} submit */
function keyboard(form, submit) {
  form.setAttribute("data-lm-suppress-shortcuts", "true"); // JupyterLab leaves these keys
  form.addEventListener("focusin", (/** @type {FocusEvent} */ event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
      target.dataset.before = target.value;
    }
  });
  form.addEventListener("keydown", (/** @type {KeyboardEvent} */ event) => {
    const target = event.target;
    event.stopPropagation(); // the notebook's shortcuts (A, B, D D, arrows...) stay out
    if (event.isComposing) return;
    if (event.key === "Escape" && (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement)) {
      if (target.dataset.before !== undefined && target.type !== "radio" && target.type !== "checkbox") {
        target.value = target.dataset.before;
        target.dispatchEvent(new Event("input", { bubbles: true }));
      }
      target.blur();
      event.preventDefault();
      return;
    }
    if (event.key !== "Enter") return;
    if (target instanceof HTMLButtonElement || target instanceof HTMLAnchorElement) return;
    if (target instanceof HTMLTextAreaElement && !(event.ctrlKey || event.metaKey)) return;
    event.preventDefault();
    submit();
  });
}

/** One questionnaire item's control: `value()` reads its answer (undefined: none given). */
/** @param {StudyItem} item @param {number} index @returns {ItemControl} */
function itemControl(item, index) {
  const id = `cogym-study-item-${index}-${item.name}`;
  const box = h("div", { class: "cogym-study-item", testid: "study-item", dataset: { kind: item.kind, item: item.name } });
  if (item.kind === "likert" || item.kind === "choice") {
    const options = item.kind === "likert"
      ? Array.from({ length: item.points }, (_, i) => ({ value: i + 1, text: String(i + 1) }))
      : item.options.map((/** @type {string} */ option) => ({ value: option, text: option }));
    const fieldset = h("fieldset", { class: "cogym-study-scale" }, h("legend", { text: item.text }));
    const row = h("div", { class: "cogym-study-options", role: "radiogroup" });
    if (item.kind === "likert") row.append(h("span", { class: "cogym-study-end", text: item.low }));
    for (const option of options) {
      const input = h("input", { type: "radio", name: id, value: String(option.value), id: `${id}-${option.value}` });
      row.append(h("label", { class: "cogym-study-option", for: `${id}-${option.value}` }, input, h("span", { text: option.text })));
    }
    if (item.kind === "likert") row.append(h("span", { class: "cogym-study-end", text: item.high }));
    fieldset.append(row);
    box.append(fieldset);
    return { box, value: () => {
      const checked = /** @type {HTMLInputElement | null} */ (row.querySelector("input:checked"));
      if (!checked) return undefined;
      return item.kind === "likert" ? Number(checked.value) : checked.value;
    } };
  }
  if (item.kind === "text") {
    const area = h("textarea", { id, rows: 3, class: "cogym-study-text", maxLength: 5000 });
    box.append(h("label", { for: id, text: item.text }), area);
    return { box, value: () => /** @type {HTMLTextAreaElement} */ (area).value };
  }
  if (item.kind === "ranking") {
    const order = [...item.labels];
    const list = h("ol", { class: "cogym-study-ranking", "aria-label": item.text });
    /** @param {string} focus */
    const draw = (focus) => {
      list.replaceChildren(...order.map((label, place) => h("li", { testid: "ranking-row", dataset: { label } },
        h("span", { class: "cogym-study-rank-label", text: label }),
        h("button", { type: "button", text: "↑", "aria-label": `Move ${label} up`, disabled: place === 0,
          on: { click: () => move(place, -1) } }),
        h("button", { type: "button", text: "↓", "aria-label": `Move ${label} down`, disabled: place === order.length - 1,
          on: { click: () => move(place, 1) } }))));
      if (focus) {
        const button = list.querySelector(`[aria-label="${focus}"]:not([disabled])`);
        if (button instanceof HTMLElement) button.focus();
      }
    };
    /** @param {number} place @param {number} by */
    const move = (place, by) => {
      const [label] = order.splice(place, 1);
      order.splice(place + by, 0, label);
      draw(`Move ${label} ${by < 0 ? "up" : "down"}`);
    };
    draw("");
    box.append(h("p", { class: "cogym-study-question", text: item.text }), list);
    return { box, value: () => [...order] };
  }
  if (item.kind === "task_load") {
    const scales = [["mental", "Mental demand: how mentally demanding was the task?"],
      ["physical", "Physical demand: how physically demanding was the task?"],
      ["temporal", "Temporal demand: how hurried or rushed was the pace?"],
      ["performance", "Performance: how successful were you in doing what you were asked?"],
      ["effort", "Effort: how hard did you have to work?"],
      ["frustration", "Frustration: how insecure, discouraged, irritated or stressed were you?"]];
    const fieldset = h("fieldset", { class: "cogym-study-load" }, h("legend", { text: item.text }));
    /** @type {Record<string, HTMLInputElement>} */
    const sliders = {};
    for (const [scale, words] of scales) {
      const slider = /** @type {HTMLInputElement} */ (h("input", { type: "range", min: 0, max: 100, step: 5, value: "50", id: `${id}-${scale}` }));
      const shown = h("output", { for: `${id}-${scale}`, text: "50" });
      slider.addEventListener("input", () => { shown.textContent = slider.value; });
      sliders[scale] = slider;
      fieldset.append(h("div", { class: "cogym-study-load-row", dataset: { scale } },
        h("label", { for: `${id}-${scale}`, text: words }), slider, shown));
    }
    box.append(fieldset);
    return { box, value: () => Object.fromEntries(Object.entries(sliders).map(([k, s]) => [k, Number(s.value)])) };
  }
  box.append(h("p", { text: item.text }));
  return { box, value: () => undefined };
}

/** The panel module, imported once per page from its source text. */
const PANELS = new Map();
/** @param {string} source @returns {Promise<any>} */
function importPanel(source) {
  let loaded = PANELS.get(source);
  if (!loaded) {
    const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
    loaded = import(url).finally(() => URL.revokeObjectURL(url));
    PANELS.set(source, loaded);
  }
  return loaded;
}

/** A stand-in for anywidget's model, with the traits a server-mode session panel reads. */
/** @param {Record<string, unknown>} values @param {unknown} widgetManager */
function panelModel(values, widgetManager) {
  const traits = new Map(Object.entries(values));
  /** @type {Map<string, Array<() => void>>} */
  const listeners = new Map();
  return {
    get: (/** @type {string} */ name) => traits.get(name),
    set: (/** @type {string} */ name, /** @type {unknown} */ value) => {
      traits.set(name, value);
      for (const listener of listeners.get(`change:${name}`) || []) listener();
    },
    save_changes: () => {},
    on: (/** @type {string} */ event, /** @type {() => void} */ listener) =>
      listeners.set(event, [...(listeners.get(event) || []), listener]),
    off: (/** @type {string} */ event, /** @type {() => void} */ listener) =>
      listeners.set(event, (listeners.get(event) || []).filter((l) => l !== listener)),
    send: () => {},
    widget_manager: widgetManager,
  };
}

class StudyFlow {
  /** @param {HTMLElement} el @param {WidgetModel} model */
  constructor(el, model) {
    this.model = model;
    this.api = new StudyApi(pageBaseUrl(model.get("base_url")));
    this.title = h("div", { class: "cogym-study-title", testid: "study-title" });
    this.progress = h("div", { class: "cogym-study-progress", testid: "study-progress" });
    this.error = h("div", { class: "cogym-study-error", testid: "study-error", role: "alert" });
    this.body = h("div", { class: "cogym-study-body", testid: "study-body" });
    this.root = h("div", { class: "cogym-study", testid: "study" },
      h("div", { class: "cogym-study-header" }, this.title, this.progress), this.error, this.body);
    el.append(this.root);
    this.stopPanel = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.poll = null;
    /** @type {string | undefined} the step shown, and its session (or whether its outcomes are ready) */
    this.shown = undefined;
    /** @type {string | undefined} */
    this.shownSession = undefined;
    this.busy = false;
  }

  /** @param {string} method @param {string} path @param {unknown} [body] */
  async act(method, path, body) {
    if (this.busy) return;
    this.busy = true;
    this.error.textContent = "";
    try {
      this.show(await this.api.call(method, path, body));
    } catch (error) {
      this.error.textContent = String(/** @type {Error} */ (error).message || error);
    } finally {
      this.busy = false;
    }
  }

  closePanel() {
    if (this.stopPanel) this.stopPanel();
    this.stopPanel = null;
    if (this.poll) clearTimeout(this.poll);
    this.poll = null;
  }

  /** Ask for the state again in a while, if step `id` is still the one shown. @param {string} id */
  askAgain(id) {
    if (this.poll) clearTimeout(this.poll);
    this.poll = setTimeout(() => {
      this.poll = null;
      if (this.shown === id) this.act("GET", "state");
    }, 2000);
  }

  /** @param {StudyState} state */
  show(state) {
    const step = state.step;
    this.title.textContent = state.study;
    this.progress.textContent = step.kind === "done" ? "" : `Step ${state.index + 1} of ${state.total}`;
    this.root.dataset.step = step.id;
    this.root.dataset.kind = step.kind;
    // a comparison step is drawn again once its two outcomes are ready
    const shownPart = step.kind === "comparison" ? `outcomes-${Boolean(step.ready)}` : (step.session || {}).session_id;
    if (this.shown === step.id && this.shownSession === shownPart) {
      if (step.kind === "comparison" && !step.ready) this.askAgain(step.id);
      return;
    }
    this.shown = step.id;
    this.shownSession = shownPart;
    this.closePanel();
    const heading = h("h3", { class: "cogym-study-step-title", testid: "step-title", text: step.title });
    const text = step.text ? h("div", { class: "cogym-study-text-block", testid: "step-text", text: step.text }) : null;
    if (step.kind === "consent") {
      const agree = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox", id: "cogym-study-agree", testid: "consent-agree" }));
      const go = /** @type {HTMLButtonElement} */ (h("button", { type: "submit", class: "cogym-primary", testid: "step-continue",
        text: "I agree, continue", disabled: true }));
      agree.addEventListener("change", () => { go.disabled = !agree.checked; });
      const form = h("form", {}, heading, text, h("label", { for: "cogym-study-agree", class: "cogym-study-agree" }, agree,
        h("span", { text: "I have read the above and agree to take part." })), go);
      const submit = () => { if (agree.checked) this.act("POST", "consent", { agree: true }); };
      form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
      keyboard(form, submit);
      this.body.replaceChildren(form);
      return;
    }
    if (step.kind === "instructions") {
      const go = h("button", { type: "submit", class: "cogym-primary", testid: "step-continue", text: "Continue" });
      const form = h("form", {}, heading, text, go);
      const submit = () => this.act("POST", `steps/${step.id}/done`);
      form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
      keyboard(form, submit);
      this.body.replaceChildren(form);
      go.focus();
      return;
    }
    if (step.kind === "practice" || step.kind === "calibration" || step.kind === "session") {
      const limit = step.time_limit_seconds ? h("p", { class: "cogym-study-note", text: `You have ${Math.round(step.time_limit_seconds / 60)} minutes.` }) : null;
      const slot = h("div", { class: "cogym-study-session", testid: "study-session" });
      if (!step.session) {
        const start = h("button", { type: "button", class: "cogym-primary", testid: "session-start", text: "Start",
          on: { click: () => this.act("POST", `steps/${step.id}/start`) } });
        this.body.replaceChildren(heading, text || "", limit || "", start);
        start.focus();
        return;
      }
      const done = h("button", { type: "button", class: "cogym-primary", testid: "session-done", text: "I have finished, continue",
        on: { click: () => this.act("POST", `steps/${step.id}/done`) } });
      this.body.replaceChildren(heading, text || "", limit || "", slot, done);
      this.mountPanel(slot, step.session);
      return;
    }
    if (step.kind === "comparison") {
      if (!step.ready) {
        // the other outcome is still being made: ask again in a while, while this step is shown
        this.body.replaceChildren(heading, text || "");
        this.askAgain(step.id);
        return;
      }
      const outcomes = h("div", { class: "cogym-study-outcomes", testid: "study-outcomes" },
        ...step.outcomes.map((/** @type {ShownOutcome} */ outcome) => h("section", { class: "cogym-study-outcome", testid: "study-outcome" },
          h("h4", { text: outcome.label }), h("pre", { text: outcome.text }))));
      const go = h("button", { type: "submit", class: "cogym-primary", testid: "step-continue", text: "Continue" });
      const form = h("form", {}, heading, text, outcomes, go);
      const submit = () => this.act("POST", `steps/${step.id}/done`);
      form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
      keyboard(form, submit);
      this.body.replaceChildren(form);
      go.focus();
      return;
    }
    if (step.kind === "questionnaire") {
      const controls = step.items.map((item, index) => ({ item, ...itemControl(item, index) }));
      const about = step.about ? h("p", { class: "cogym-study-note", testid: "questionnaire-about", text: `About: ${step.about}` }) : null;
      const go = h("button", { type: "submit", class: "cogym-primary", testid: "step-continue", text: "Continue" });
      const form = h("form", { testid: "questionnaire" }, heading, about, ...controls.map((c) => c.box), go);
      const submit = () => {
        /** @type {Record<string, unknown>} */
        const answers = {};
        for (const { item, value } of controls) {
          const given = value();
          if (given !== undefined) answers[item.name] = given;
        }
        this.act("POST", `steps/${step.id}/answers`, { answers });
      };
      form.addEventListener("submit", (event) => { event.preventDefault(); submit(); });
      keyboard(form, submit);
      this.body.replaceChildren(form);
      return;
    }
    this.body.replaceChildren(h("div", { class: "cogym-study-done", testid: "study-done" }, heading,
      h("p", { text: "You have finished the study. Thank you for taking part! You can close this tab." })));
  }

  /** @param {HTMLElement} slot @param {{ session_id: string, role: string }} session */
  async mountPanel(slot, session) {
    const base = this.api.base;
    const api = `${base}cogym/api/sessions/${encodeURIComponent(session.session_id)}`;
    const model = panelModel({ mode: "server", session_id: session.session_id, role: session.role, readonly: false,
      ws_url: `${api}/ws?role=${encodeURIComponent(session.role)}`, api_url: api, token: "", connection: "",
      last_seq: 0, part: "all", yjs_module: this.model.get("yjs_module") || "", data_notice: "" },
    this.model.widget_manager);
    try {
      const panel = await importPanel(this.model.get("panel_module"));
      const stop = await panel.default.render({ model, el: slot });
      if (this.shownSession === session.session_id) this.stopPanel = stop;
      else stop();
    } catch (error) {
      this.error.textContent = `The session could not be shown: ${error}`;
    }
  }
}

/** @param {{ model: WidgetModel, el: HTMLElement }} widget */
async function render({ model, el }) {
  const flow = new StudyFlow(el, model);
  const left = () => { flow.api.call("POST", "left", {}, true).catch(() => {}); };
  window.addEventListener("pagehide", left);
  await flow.act("POST", "visit", {});
  return () => {
    window.removeEventListener("pagehide", left);
    flow.closePanel();
  };
}

export default { render };
