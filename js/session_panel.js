// Co-Gym session panel for anywidget: one ES module, no build step, no imports.
//
// The panel follows one person seat of a session. It receives notifications (the seat's view,
// the chat, pending confirmations, ...) and agent status updates, and sends the person's
// actions. Only the transport differs between the two modes:
//   server: the browser opens the session's WebSocket on the Jupyter server itself, so the
//           panel stays live while the kernel is busy;
//   local:  the kernel hosts the session and relays messages through the widget's comm.
// Every view is chosen by a component's render type, never by task. Text from LMs and data is
// only ever set as textContent, or escaped before any formatting. Each action carries an id; a
// refusal (an error frame: too many actions at once, a malformed or oversized message) names it,
// so the panel shows the person what was not applied and why.

// -- rating rubric (the person rates the outcome and the collaboration at the end) -----------

export const OUTCOME_RUBRIC = {
  1: "1 - Unusable: the result misses the task; I would start over.",
  2: "2 - Weak: some useful parts, but it needs major rework.",
  3: "3 - Acceptable: it does the job with clear gaps.",
  4: "4 - Good: only small fixes needed.",
  5: "5 - Excellent: I would use it as it is.",
};

export const SATISFACTION_RUBRIC = {
  1: "1 - Very dissatisfied: the agent was hard to work with at every turn and did not help.",
  2: "2 - Dissatisfied: communication was mostly poor and the help was limited.",
  3: "3 - Neutral: we could talk things through and it helped somewhat.",
  4: "4 - Satisfied: it communicated well on the whole and was a real help.",
  5: "5 - Very satisfied: it communicated well throughout and helped a great deal.",
};

// -- safe rendering ---------------------------------------------------------------------------

const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

// Markdown to HTML for the preview. The text is escaped FIRST; the formatting below only adds
// tags of its own, so nothing in the text can become an element or an attribute.
export function renderMarkdown(text) {
  const lines = escapeHtml(text).split("\n");
  const out = [];
  let list = null;
  let paragraph = [];
  let code = null;
  const flushParagraph = () => {
    if (paragraph.length) out.push(`<p>${paragraph.map(inline).join("<br>")}</p>`);
    paragraph = [];
  };
  const closeList = () => {
    if (list) out.push(`</${list}>`);
    list = null;
  };
  for (const line of lines) {
    if (code !== null) {
      if (/^```/.test(line)) {
        out.push(`<pre><code>${code.join("\n")}</code></pre>`);
        code = null;
      } else {
        code.push(line);
      }
      continue;
    }
    if (/^```/.test(line)) {
      flushParagraph();
      closeList();
      code = [];
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (heading) {
      flushParagraph();
      closeList();
      const level = heading[1].length;
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
    } else if (bullet || numbered) {
      flushParagraph();
      const kind = bullet ? "ul" : "ol";
      if (list !== kind) {
        closeList();
        out.push(`<${kind}>`);
        list = kind;
      }
      out.push(`<li>${inline((bullet || numbered)[1])}</li>`);
    } else if (!line.trim()) {
      flushParagraph();
      closeList();
    } else {
      closeList();
      paragraph.push(line);
    }
  }
  if (code !== null) out.push(`<pre><code>${code.join("\n")}</code></pre>`);
  flushParagraph();
  closeList();
  return out.join("\n");
}

// Inline formatting of already-escaped text.
function inline(escaped) {
  return escaped
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^\s()]+)\)/g,
      '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
}

// An element with attributes and children. Text goes in as text nodes, never as HTML.
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "testid") node.dataset.testid = value;
    else if (key === "text") node.textContent = String(value);
    else if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function safeUrl(value) {
  return typeof value === "string" && /^https?:\/\//i.test(value) ? value : null;
}

function asText(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

function shorten(text, limit = 160) {
  const value = asText(text);
  return value.length > limit ? value.slice(0, limit - 1) + "…" : value;
}

// -- the canonical action form NAME(param=<JSON>, ...), for previews ---------------------------

export function parseAction(text) {
  const head = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(/.exec(text || "");
  if (!head) return null;
  const args = {};
  let i = head[0].length;
  const skip = () => { while (i < text.length && /\s/.test(text[i])) i++; };
  skip();
  if (text[i] === ")") return { name: head[1], args };
  while (i < text.length) {
    const param = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*/.exec(text.slice(i));
    if (!param) return null;
    i += param[0].length;
    const start = i;
    let depth = 0;
    let inString = false;
    for (; i < text.length; i++) {
      const c = text[i];
      if (inString) {
        if (c === "\\") i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === "[" || c === "{") depth++;
      else if (c === "]" || c === "}") depth--;
      else if (depth === 0 && (c === "," || c === ")")) break;
    }
    try {
      args[param[1]] = JSON.parse(text.slice(start, i));
    } catch {
      return null;
    }
    if (text[i] === ")") return { name: head[1], args };
    i++;
    skip();
  }
  return null;
}

// Line diff (longest common subsequence) for previews of whole-text replacements.
export function lineDiff(before, after, limit = 400) {
  const a = String(before ?? "").split("\n");
  const b = String(after ?? "").split("\n");
  if (a.length > limit || b.length > limit) return b.map((line) => ["add", line]);
  const table = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) { out.push(["same", a[i]]); i++; j++; }
    else if (table[i + 1][j] >= table[i][j + 1]) out.push(["del", a[i++]]);
    else out.push(["add", b[j++]]);
  }
  while (i < a.length) out.push(["del", a[i++]]);
  while (j < b.length) out.push(["add", b[j++]]);
  return out;
}

// -- views, one per render type -----------------------------------------------------------------

function recordTitle(record) {
  for (const key of ["title", "name", "text", "label", "id"]) {
    if (record[key] !== undefined && record[key] !== null) return [key, asText(record[key])];
  }
  return [null, ""];
}

function recordsView(items) {
  if (!Array.isArray(items) || items.length === 0) return h("div", { class: "cogym-muted", text: "Nothing yet." });
  return h("ul", { class: "cogym-records" }, items.map((item) => {
    if (item === null || typeof item !== "object") return h("li", { testid: "record", text: asText(item) });
    const [titleKey, title] = recordTitle(item);
    const url = safeUrl(item.url);
    const fields = Object.entries(item).filter(([key]) => key !== titleKey && key !== "url");
    return h("li", { testid: "record" },
      url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: title }) : h("strong", { text: title }),
      h("div", {}, fields.map(([key, value]) => h("span", { class: "cogym-field" }, `${key}: ${shorten(value, 300)}`))));
  }));
}

function tableView(content) {
  let columns = [];
  let rows = [];
  const parts = [];
  if (content && !Array.isArray(content) && typeof content === "object") {
    if (content.title) parts.push(h("div", { class: "cogym-muted", text: content.title }));
    rows = Array.isArray(content.rows) ? content.rows : [];
    columns = Array.isArray(content.columns) ? content.columns.map(asText) : [];
  } else if (Array.isArray(content)) {
    rows = content;
  }
  if (!columns.length) {
    const seen = new Set();
    for (const row of rows) {
      if (row && typeof row === "object" && !Array.isArray(row)) Object.keys(row).forEach((k) => seen.add(k));
    }
    columns = [...seen];
  }
  if (rows.length) {
    const cell = (row, column, index) => Array.isArray(row) ? row[index] : (row && typeof row === "object" ? row[column] : row);
    parts.push(h("div", { class: "cogym-scroll" }, h("table", { class: "cogym-table" },
      columns.length ? h("thead", {}, h("tr", {}, columns.map((c) => h("th", { text: c })))) : null,
      h("tbody", {}, rows.map((row) => h("tr", {}, (columns.length ? columns : [null]).map((column, index) =>
        h("td", { text: shorten(cell(row, column, index), 500) }))))))));
  } else {
    parts.push(h("div", { class: "cogym-muted", text: "No rows." }));
  }
  if (content && content.note) parts.push(h("div", { class: "cogym-muted", text: content.note }));
  return h("div", {}, parts);
}

function checklistView(items) {
  if (!Array.isArray(items) || items.length === 0) return h("div", { class: "cogym-muted", text: "The list is empty." });
  return h("ul", { class: "cogym-records" }, items.map((item) => {
    const record = item && typeof item === "object" ? item : { text: item };
    const done = Boolean(record.done ?? record.checked);
    const [, title] = recordTitle(record);
    return h("li", { class: "cogym-check", testid: "checklist-item", dataset: { done: String(done) } },
      h("span", { text: done ? "☑ " : "☐ " }),
      h("span", { class: "cogym-check-text", text: title }),
      record.added_by ? h("span", { class: "cogym-muted", text: `  (${record.added_by})` }) : null);
  }));
}

function libraryView(entries) {
  if (!Array.isArray(entries) || entries.length === 0) return h("div", { class: "cogym-muted", text: "The library is empty." });
  return h("ol", { class: "cogym-records" }, entries.map((entry, index) => {
    const record = entry && typeof entry === "object" ? entry : { title: entry };
    const number = record.number ?? index + 1;
    const url = safeUrl(record.url);
    const authors = Array.isArray(record.authors) ? record.authors.slice(0, 3).join(", ") + (record.authors.length > 3 ? " et al." : "") : asText(record.authors);
    return h("li", { testid: "library-entry" },
      h("strong", { text: `[${number}] ` }),
      url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: asText(record.title) }) : h("span", { text: asText(record.title) }),
      h("div", { class: "cogym-muted", text: [authors, record.year, record.id].filter(Boolean).join(" · ") }),
      record.note ? h("div", { text: `Note: ${record.note}` }) : null);
  }));
}

function outputView(output) {
  if (!output || typeof output !== "object") return h("pre", { class: "cogym-pre", text: asText(output) });
  if (typeof output.png === "string" && /^[A-Za-z0-9+/=\s]+$/.test(output.png)) {
    return h("img", { src: `data:image/png;base64,${output.png.replace(/\s/g, "")}`, alt: "cell output" });
  }
  const text = output.traceback || output.text || (output.html ? "(HTML output: shown as text)\n" + output.html : "");
  return h("pre", { class: "cogym-pre", text });
}

function notebookView(content) {
  const cells = Array.isArray(content?.cells) ? content.cells : [];
  const running = content && typeof content.running === "object" && content.running ? content.running : {};
  const parts = cells.map((cell, index) => h("div", { class: "cogym-cell", testid: "notebook-cell", dataset: { status: asText(cell.status), ranBy: asText(cell.ran_by) } },
    h("div", { class: "cogym-muted", text: `In [${cell.execution_count ?? cell.index ?? index + 1}] · ${cell.ran_by ?? "?"} · ${cell.status ?? ""}` }),
    h("pre", { class: "cogym-pre cogym-cell-source", text: asText(cell.source) }),
    (Array.isArray(cell.outputs) ? cell.outputs : []).map(outputView),
    cell.error ? h("div", { class: "cogym-error", text: asText(cell.error) }) : null,
    cell.truncated ? h("div", { class: "cogym-muted", text: "(output truncated)" }) : null));
  for (const [role, code] of Object.entries(running)) {
    parts.push(h("div", { class: "cogym-cell", testid: "notebook-running" },
      h("div", { class: "cogym-muted", text: `${role} is running…` }),
      h("pre", { class: "cogym-pre cogym-cell-source", text: asText(code) })));
  }
  if (!parts.length) return h("div", { class: "cogym-muted", text: "No cells yet." });
  return h("div", { class: "cogym-scroll" }, parts);
}

function planView(content) {
  if (typeof content === "string") {
    const preview = h("div", { class: "cogym-markdown" });
    preview.innerHTML = renderMarkdown(content); // escaped first: see renderMarkdown
    return preview;
  }
  if (Array.isArray(content)) {
    return h("ol", { class: "cogym-records" }, content.map((step) => h("li", { testid: "plan-step" },
      step && typeof step === "object" ? recordsView([step]) : h("span", { text: asText(step) }))));
  }
  return textView(content);
}

function textView(content) {
  if (typeof content === "string") return h("pre", { class: "cogym-pre cogym-scroll", text: content });
  if (content && typeof content === "object" && !Array.isArray(content)) {
    return h("div", {}, Object.entries(content).map(([key, value]) => h("div", {},
      h("span", { class: "cogym-field", text: key }), h("span", { text: shorten(value, 500) }))));
  }
  return jsonView(content);
}

function jsonView(content) {
  return h("pre", { class: "cogym-pre cogym-scroll", text: JSON.stringify(content, null, 2) });
}

// Render types with a read-only view. The editor is interactive and handled by EditorView.
const VIEWS = {
  text: textView,
  search_results: (content) => (content && typeof content === "object" && !Array.isArray(content) && Array.isArray(content.rows)) ? tableView(content) : recordsView(content),
  library: libraryView,
  notebook: notebookView,
  plan: planView,
  table: tableView,
  checklist: checklistView,
};

// The shared editor: a textarea with a markdown preview. Remote changes replace the text only
// while the person has no unsaved edits; a save sends the text with its base, so the server
// merges it with whatever teammates changed meanwhile.
class EditorView {
  constructor(panel, component) {
    this.panel = panel;
    this.name = component.name;
    this.remote = "";
    this.base = "";
    this.saved = null; // text sent and not yet seen back
    this.previewing = false;
    this.textarea = h("textarea", { testid: "editor-textarea", dataset: { component: component.name }, spellcheck: false,
      on: { input: () => this.refreshState(), keydown: (event) => this.onKey(event) } });
    this.preview = h("div", { class: "cogym-markdown", testid: "editor-preview", hidden: true });
    this.state = h("span", { class: "cogym-editor-state", testid: "editor-state" });
    this.toggle = h("button", { testid: "editor-preview-toggle", text: "Preview", on: { click: () => this.togglePreview() } });
    this.saveButton = h("button", { class: "cogym-primary", testid: "editor-save", text: "Save", on: { click: () => this.save() } });
    this.body = h("div", { class: "cogym-editor" },
      h("div", { class: "cogym-row" }, this.toggle, this.saveButton, this.state), this.textarea, this.preview);
    this.update(component, true);
  }

  get spec() {
    return this.panel.actionSpecs().find((spec) => spec.replaces === this.name) || null;
  }

  get dirty() {
    return this.textarea.value !== this.base;
  }

  update(component, first = false) {
    const text = asText(component.content);
    this.remote = text;
    if (first || !this.dirty || (this.saved !== null && this.textarea.value === this.saved)) {
      this.textarea.value = text;
      this.base = text;
      this.saved = null;
    }
    this.textarea.readOnly = !this.spec || this.panel.done;
    this.saveButton.hidden = !this.spec;
    this.refreshState();
    if (this.previewing) this.renderPreview();
  }

  refreshState() {
    let state = "saved";
    let label = "Up to date";
    if (this.saved !== null && this.textarea.value === this.saved) { state = "saving"; label = "Saving…"; }
    else if (this.dirty && this.remote !== this.base) { state = "behind"; label = "Unsaved edits; a teammate changed the text too — saving keeps both"; }
    else if (this.dirty) { state = "editing"; label = "Unsaved edits"; }
    this.state.dataset.state = state;
    this.state.textContent = label;
    this.saveButton.disabled = this.panel.done || !this.dirty;
  }

  onKey(event) {
    if ((event.ctrlKey || event.metaKey) && (event.key === "s" || event.key === "Enter")) {
      event.preventDefault();
      this.save();
    }
  }

  save() {
    const spec = this.spec;
    if (!spec || !this.dirty || this.panel.done) return;
    const text = this.textarea.value;
    this.panel.sendAction({ name: spec.name, args: { text } }, { base: this.base });
    this.saved = text;
    this.base = text; // further typing is relative to what was just sent
    this.refreshState();
  }

  togglePreview() {
    this.previewing = !this.previewing;
    this.preview.hidden = !this.previewing;
    this.textarea.hidden = this.previewing;
    this.toggle.textContent = this.previewing ? "Edit" : "Preview";
    if (this.previewing) this.renderPreview();
  }

  renderPreview() {
    this.preview.innerHTML = renderMarkdown(this.textarea.value); // escaped first
  }
}

class ReadOnlyView {
  constructor(component) {
    this.body = h("div");
    this.update(component);
  }

  update(component) {
    const view = VIEWS[component.render_type] || jsonView;
    let content;
    try {
      content = view(component.content);
    } catch (error) {
      content = jsonView(component.content); // an unexpected shape still shows as JSON
    }
    this.body.replaceChildren(content);
  }
}

// -- the panel ------------------------------------------------------------------------------

let outboxCounter = 0;
let actionCounter = 0;

// The id an action travels with; the server repeats it in any refusal of that action.
function nextActionId() {
  actionCounter += 1;
  return `a${actionCounter}`;
}

export class Panel {
  constructor(el, model) {
    this.model = model;
    this.role = model.get("role");
    this.transport = null;
    this.notification = null;
    this.context = null;
    this.statuses = {};
    this.components = new Map(); // name -> { box, view, json, renderType }
    this.outbox = []; // chat messages the person sent that the chat does not show yet
    this.lastChatSeq = 0;
    this.done = false;
    this.refusedCount = 0; // actions refused since the person last dismissed the error
    this.build(el);
  }

  // The transport delivers notifications, status updates and errors here.
  receive(message) {
    if (!message || typeof message !== "object") return;
    if (message.type === "status") return this.receiveStatus(message);
    if (message.type === "error" || (message.error && !message.event)) return this.refused(message);
    if (message.event && message.view) return this.receiveNotification(message);
  }

  setConnection(state) {
    this.connection.dataset.state = state;
    this.connection.textContent = { open: "connected", connecting: "connecting…", closed: "disconnected" }[state] || state;
    if (state === "open") this.flushOutbox();
    try {
      this.model.set("connection", state);
      this.model.save_changes();
    } catch {
      // a model without that trait (a test page) is fine
    }
  }

  // -- building -----------------------------------------------------------------------------

  build(el) {
    this.title = h("span", { class: "cogym-title", text: "Co-Gym session" });
    this.connection = h("span", { class: "cogym-connection cogym-muted", testid: "connection-status", dataset: { state: "connecting" }, text: "connecting…" });
    this.steps = h("span", { class: "cogym-muted", testid: "step-counts" });
    this.lastEvent = h("span", { class: "cogym-muted", testid: "last-event" });
    this.errorText = h("span", { testid: "panel-error-text" });
    this.error = h("div", { class: "cogym-error", testid: "panel-error", role: "alert", hidden: true }, this.errorText,
      h("button", { class: "cogym-dismiss", testid: "panel-error-dismiss", title: "Dismiss", "aria-label": "Dismiss", text: "×", on: { click: () => this.dismissError() } }));
    this.workspace = h("div", { class: "cogym-workspace", testid: "workspace" });
    this.agents = h("div", { testid: "agent-statuses" });
    this.pauseButton = h("button", { testid: "pause-button", text: "Pause agent", on: { click: () => this.togglePause() } });
    this.finishButton = h("button", { class: "cogym-danger", testid: "finish-button", text: "Finish", on: { click: () => this.sendAction({ name: "FINISH", args: {} }) } });
    this.confirmations = h("div", { testid: "confirmations" });
    this.chatLog = h("div", { class: "cogym-chat-log", testid: "chat-log" });
    this.chatInput = h("textarea", { class: "cogym-chat-input", testid: "chat-input", placeholder: "Message your teammates (Enter sends, Shift+Enter for a new line)",
      on: { keydown: (event) => { if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); this.sendChat(); } } } });
    this.chatSend = h("button", { class: "cogym-primary", testid: "chat-send", text: "Send", on: { click: () => this.sendChat() } });
    this.actionForm = h("div", { testid: "action-form" });
    this.ratingBox = h("div", { class: "cogym-box cogym-rating", testid: "rating-form", hidden: true });

    this.agentBox = h("div", { class: "cogym-box", testid: "view-agent-status" }, h("h4", { text: "Agent" }), this.agents,
      h("div", { class: "cogym-row" }, this.pauseButton, this.finishButton));
    this.confirmBox = h("div", { class: "cogym-box", testid: "view-confirmations", hidden: true }, h("h4", { text: "Waiting for your approval" }), this.confirmations);
    this.chatBox = h("div", { class: "cogym-box", testid: "view-chat" }, h("h4", { text: "Chat" }), this.chatLog,
      h("div", { class: "cogym-row" }, this.chatInput), h("div", { class: "cogym-row" }, this.chatSend));
    this.actionBox = h("details", { class: "cogym-box", testid: "view-actions" }, h("summary", { text: "Task actions" }), this.actionForm);

    this.root = h("div", { class: "cogym-panel", testid: "cogym-panel", dataset: { role: this.role, session: this.model.get("session_id") || "" } },
      h("div", { class: "cogym-header" }, this.title, h("span", { class: "cogym-muted", text: `you are ${this.role}` }), this.connection, this.steps, this.lastEvent),
      this.error,
      this.ratingBox,
      h("div", { class: "cogym-body" }, this.workspace,
        h("div", { class: "cogym-side" }, this.agentBox, this.confirmBox, this.chatBox, this.actionBox)));
    el.replaceChildren(this.root);
  }

  actionSpecs() {
    return this.context?.action_specs || [];
  }

  // -- notifications ------------------------------------------------------------------------

  receiveNotification(notification) {
    const previous = this.notification;
    this.notification = notification;
    if (notification.context) {
      const firstContext = !this.context;
      this.context = notification.context;
      this.title.textContent = this.context.task ? `Co-Gym · ${this.context.task}` : "Co-Gym session";
      if (firstContext) this.buildActionForm();
    }
    this.done = Boolean(notification.done);
    this.renderComponents(notification.view?.components || [], previous !== null);
    this.renderChat(notification, previous);
    this.renderConfirmations(notification.pending_confirmations || [], previous);
    this.renderAgents();
    this.renderHeader(notification);
    const event = notification.event || {};
    if (event.status === "error" && event.actor === this.role && event.error) this.showError(event.error);
    if (this.done) this.showRating(notification.end_reason);
    try {
      this.model.set("last_seq", notification.seq);
      this.model.save_changes();
    } catch {
      // a model without that trait (a test page) is fine
    }
  }

  renderHeader(notification) {
    const counts = notification.step_counts || {};
    const limits = notification.step_limits || {};
    this.steps.textContent = Object.entries(counts).map(([role, n]) => limits[role] ? `${role} ${n}/${limits[role]}` : `${role} ${n}`).join(" · ");
    const event = notification.event || {};
    const what = event.action ? shorten(event.action, 80) : event.type;
    this.lastEvent.textContent = event.type === "sync" ? "" : `#${notification.seq} ${event.actor ? event.actor + ": " : ""}${what || ""}`;
  }

  renderComponents(components, flash) {
    const seen = new Set();
    components.forEach((component, index) => {
      seen.add(component.name);
      const json = JSON.stringify(component.content);
      let entry = this.components.get(component.name);
      if (entry && entry.renderType !== component.render_type) {
        entry.box.remove();
        entry = null;
      }
      if (!entry) {
        const view = component.render_type === "editor" ? new EditorView(this, component) : new ReadOnlyView(component);
        const box = h("div", { class: "cogym-box", testid: `view-${component.render_type}`, dataset: { component: component.name } },
          h("h4", {}, h("span", { text: component.title || component.name }),
            component.private ? h("span", { class: "cogym-badge", text: "only you" }) : h("span", { class: "cogym-badge", text: "shared" })),
          view.body);
        entry = { box, view, json, renderType: component.render_type };
        this.components.set(component.name, entry);
      } else if (entry.json !== json) {
        entry.view.update(component);
        entry.json = json;
        if (flash) this.flash(entry.box);
      } else if (entry.view instanceof EditorView) {
        entry.view.update(component); // read-only state may change when the session ends
      }
      if (this.workspace.children[index] !== entry.box) this.workspace.insertBefore(entry.box, this.workspace.children[index] || null);
    });
    for (const [name, entry] of this.components) {
      if (!seen.has(name)) {
        entry.box.remove();
        this.components.delete(name);
      }
    }
  }

  flash(node) {
    node.classList.remove("cogym-changed");
    void node.offsetWidth; // restart the animation
    node.classList.add("cogym-changed");
    node.dataset.changedSeq = String(this.notification?.seq ?? "");
    clearTimeout(node._cogymFlash);
    node._cogymFlash = setTimeout(() => node.classList.remove("cogym-changed"), 1700);
  }

  // -- chat -----------------------------------------------------------------------------------

  renderChat(notification, previous) {
    const chat = notification.chat || [];
    // A message of ours shows up in the chat: it is no longer only in the outbox.
    for (const message of chat) {
      if (message.sender !== this.role || message.seq <= this.lastChatSeq) continue;
      const index = this.outbox.findIndex((item) => item.text === message.text && item.state !== "failed");
      if (index >= 0) this.outbox.splice(index, 1);
    }
    const newest = chat.length ? chat[chat.length - 1].seq : 0;
    const grew = previous && newest > this.lastChatSeq;
    this.lastChatSeq = Math.max(this.lastChatSeq, newest);
    this.chat = chat;
    this.drawChat();
    if (grew) this.flash(this.chatBox);
  }

  drawChat() {
    const nearBottom = this.chatLog.scrollHeight - this.chatLog.scrollTop - this.chatLog.clientHeight < 40;
    const rows = (this.chat || []).map((message) => h("div", { class: "cogym-message", testid: "chat-message",
      dataset: { sender: message.sender, mine: String(message.sender === this.role), seq: String(message.seq) } },
    h("div", { class: "cogym-message-meta", text: `${message.sender}${message.to ? " → " + message.to : ""} · ${new Date(message.time * 1000).toLocaleTimeString()}` }),
    h("div", { class: "cogym-message-text", text: message.text })));
    for (const item of this.outbox) {
      rows.push(h("div", { class: "cogym-message", testid: "chat-pending", dataset: { mine: "true", state: item.state } },
        h("div", { class: "cogym-message-meta", text: `${this.role} · ${item.state === "pending" ? "sending…" : item.state === "sent" ? "sent" : "not sent"}` }),
        h("div", { class: "cogym-message-text", text: item.text })));
    }
    this.chatLog.replaceChildren(...rows);
    if (nearBottom) this.chatLog.scrollTop = this.chatLog.scrollHeight;
  }

  sendChat() {
    const text = this.chatInput.value.trim();
    if (!text || this.done) return;
    const item = { id: ++outboxCounter, actionId: nextActionId(), text, state: "pending" };
    this.outbox.push(item);
    this.chatInput.value = "";
    const sent = this.sendAction({ name: "SEND_TEAMMATE_MESSAGE", args: { message: text } }, {}, item.actionId);
    if (item.state === "pending") item.state = sent ? "sent" : "pending"; // a refusal may have come first
    this.drawChat();
  }

  // The transport sends what it queued while offline as soon as it connects.
  flushOutbox() {
    let changed = false;
    for (const item of this.outbox) {
      if (item.state === "pending") {
        item.state = "sent";
        changed = true;
      }
    }
    if (changed) this.drawChat();
  }

  // -- agents, controls, confirmations ---------------------------------------------------------

  receiveStatus(status) {
    if (!status.role) return;
    const known = this.statuses[status.role];
    if (known && known.ts > status.ts) return; // an older update replayed on reconnect
    this.statuses[status.role] = status;
    this.renderAgents();
  }

  agentRoles() {
    const team = this.context?.team || [];
    const roles = team.filter((member) => member.kind === "agent").map((member) => member.role);
    for (const role of Object.keys(this.statuses)) if (!roles.includes(role)) roles.push(role);
    return roles;
  }

  renderAgents() {
    const paused = new Set(this.notification?.paused || []);
    const roles = this.agentRoles();
    this.agents.replaceChildren(...roles.map((role) => {
      const update = this.statuses[role] || {};
      let status = update.status || "waiting";
      if (paused.has(role)) status = "paused";
      if (this.done) status = "finished";
      return h("div", { class: "cogym-agent", testid: "agent-status", dataset: { role, status } },
        h("div", {}, h("strong", { text: role + " " }), h("span", { class: "cogym-status", dataset: { status }, text: status })),
        h("div", { class: "cogym-muted", testid: "agent-last-action", text: update.last_action ? `last action: ${shorten(update.last_action, 200)}` : "no action yet" }));
    }));
    const allPaused = roles.length > 0 && roles.every((role) => paused.has(role));
    this.pauseButton.textContent = allPaused ? "Resume agent" : "Pause agent";
    this.pauseButton.dataset.state = allPaused ? "paused" : "running";
    this.pauseButton.disabled = this.done || roles.length === 0;
    this.finishButton.disabled = this.done;
    this.chatSend.disabled = this.done;
    this.chatInput.disabled = this.done;
  }

  togglePause() {
    const paused = this.pauseButton.dataset.state === "paused";
    this.sendAction({ name: paused ? "RESUME_AGENT" : "PAUSE_AGENT", args: {} });
  }

  renderConfirmations(pending, previous) {
    this.confirmBox.hidden = pending.length === 0;
    const before = new Set((previous?.pending_confirmations || []).map((c) => c.request_id));
    this.confirmations.replaceChildren(...pending.map((request) => {
      const mine = request.requester === this.role;
      const node = h("div", { class: "cogym-confirmation", testid: "confirmation", dataset: { requestId: request.request_id } },
        h("div", { class: "cogym-muted", text: `${request.requester} asks to run:` }),
        this.actionPreview(request.pending_action),
        mine ? h("div", { class: "cogym-muted", text: "Waiting for a teammate." }) : h("div", { class: "cogym-row" },
          h("button", { class: "cogym-primary", testid: "confirm-accept", dataset: { requestId: request.request_id }, text: "Accept", disabled: this.done,
            on: { click: () => this.sendAction({ name: "ACCEPT_CONFIRMATION", args: { request_id: request.request_id } }) } }),
          h("button", { class: "cogym-danger", testid: "confirm-reject", dataset: { requestId: request.request_id }, text: "Reject", disabled: this.done,
            on: { click: () => this.sendAction({ name: "REJECT_CONFIRMATION", args: { request_id: request.request_id } }) } })));
      if (previous && !before.has(request.request_id)) this.flash(node);
      return node;
    }));
  }

  // What a pending action would do: its name and params; a whole-text replacement as a diff.
  actionPreview(text) {
    const parsed = parseAction(text);
    if (!parsed) return h("pre", { class: "cogym-pre", testid: "confirmation-preview", text });
    const spec = this.actionSpecs().find((s) => s.name === parsed.name);
    const rows = [h("strong", { text: parsed.name })];
    for (const [key, value] of Object.entries(parsed.args)) {
      if (spec?.replaces && key === "text" && typeof value === "string") {
        const before = asText(this.notification?.view?.components?.find((c) => c.name === spec.replaces)?.content);
        rows.push(h("div", { class: "cogym-pre cogym-scroll" }, lineDiff(before, value).map(([kind, line]) =>
          h("div", { class: kind === "add" ? "cogym-diff-add" : kind === "del" ? "cogym-diff-del" : "", text: line || " " }))));
      } else {
        rows.push(h("div", {}, h("span", { class: "cogym-field", text: key }), h("span", { class: "cogym-pre", text: typeof value === "string" ? value : JSON.stringify(value, null, 2) })));
      }
    }
    return h("div", { testid: "confirmation-preview" }, rows);
  }

  // -- the generic task-action form ------------------------------------------------------------

  buildActionForm() {
    const specs = this.actionSpecs().filter((spec) => !spec.internal);
    if (!specs.length) {
      this.actionBox.hidden = true;
      return;
    }
    const select = h("select", { testid: "action-select" }, specs.map((spec) => h("option", { value: spec.name, text: spec.name })));
    const description = h("div", { class: "cogym-muted" });
    const params = h("div");
    const submit = h("button", { class: "cogym-primary", testid: "action-submit", text: "Run" });
    const fill = () => {
      const spec = specs.find((s) => s.name === select.value);
      description.textContent = spec?.description || "";
      params.replaceChildren(...(spec?.params || []).map((param) => {
        const attrs = { testid: "action-param", dataset: { param: param.name, type: param.type }, placeholder: param.description || param.name };
        let input;
        if (param.type === "boolean") input = h("input", { ...attrs, type: "checkbox" });
        else if (param.type === "integer" || param.type === "number") input = h("input", { ...attrs, type: "number", step: param.type === "integer" ? "1" : "any" });
        else if (param.type === "string") input = h("textarea", { ...attrs, rows: 1 });
        else input = h("textarea", { ...attrs, rows: 2, placeholder: `JSON: ${param.description || param.name}` });
        return h("label", { class: "cogym-row" }, h("span", { class: "cogym-field", text: param.name + (param.required ? "" : " (optional)") }), input);
      }));
    };
    submit.addEventListener("click", () => {
      const spec = specs.find((s) => s.name === select.value);
      if (!spec) return;
      const args = {};
      for (const input of params.querySelectorAll("[data-param]")) {
        const { param, type } = input.dataset;
        if (type === "boolean") { args[param] = input.checked; continue; }
        if (input.value === "") continue;
        if (type === "integer" || type === "number") args[param] = Number(input.value);
        else if (type === "string") args[param] = input.value;
        else {
          try { args[param] = JSON.parse(input.value); } catch { args[param] = input.value; }
        }
      }
      this.sendAction({ name: spec.name, args });
    });
    select.addEventListener("change", fill);
    fill();
    this.actionForm.replaceChildren(h("div", { class: "cogym-row" }, select, submit), description, params);
  }

  // -- sending --------------------------------------------------------------------------------

  // Hand an action to the transport; true once it left the panel.
  sendAction(action, extra = {}, id = nextActionId()) {
    return Boolean(this.transport && this.transport.send({ action, ...extra, id }));
  }

  // The server (or the kernel) did not apply an action, or could not read a message: say so, and
  // mark the chat message it was, if it was one, as not sent.
  refused(message) {
    const item = message.id === undefined ? null : this.outbox.find((entry) => entry.actionId === message.id);
    if (item) {
      item.state = "failed";
      this.drawChat();
    }
    this.refusedCount += 1;
    const count = this.refusedCount > 1 ? ` (${this.refusedCount} actions refused so far)` : "";
    this.showError(`${message.error || "The server refused that action."}${count}`, message.code || "error");
  }

  // Errors stay until the person dismisses them: a burst of actions must not hide its own refusal.
  showError(text, code = "error") {
    this.errorText.textContent = String(text);
    this.error.dataset.code = code;
    this.error.hidden = false;
  }

  dismissError() {
    this.error.hidden = true;
    this.refusedCount = 0;
  }

  // -- the rating form at the end -------------------------------------------------------------

  showRating(reason) {
    if (!this.ratingBox.hidden || this.ratingBuilt) return;
    this.ratingBuilt = true;
    const scale = (testid, rubric) => h("select", { testid }, h("option", { value: "", text: "Choose 1 to 5" }),
      Object.entries(rubric).map(([value, label]) => h("option", { value, text: label })));
    const outcome = scale("rating-outcome", OUTCOME_RUBRIC);
    const satisfaction = scale("rating-satisfaction", SATISFACTION_RUBRIC);
    const comment = h("textarea", { testid: "rating-comment", rows: 3, placeholder: "Anything you want to tell us (optional)" });
    const result = h("div", { testid: "rating-result", class: "cogym-muted" });
    const submit = h("button", { class: "cogym-primary", testid: "rating-submit", text: "Submit rating" });
    submit.addEventListener("click", async () => {
      if (!outcome.value || !satisfaction.value) {
        result.dataset.state = "error";
        result.textContent = "Please choose both ratings.";
        return;
      }
      submit.disabled = true;
      result.dataset.state = "saving";
      result.textContent = "Saving…";
      try {
        await this.transport.rate({ role: this.role, outcome_rating: Number(outcome.value), satisfaction: Number(satisfaction.value), comment: comment.value });
        result.dataset.state = "saved";
        result.textContent = "Thank you: your rating is saved with the session's results.";
      } catch (error) {
        submit.disabled = false;
        result.dataset.state = "error";
        result.textContent = `Could not save the rating: ${error?.message || error}`;
      }
    });
    this.ratingBox.replaceChildren(
      h("h4", { text: `The session has ended${reason ? " (" + reason + ")" : ""}. How did it go?` }),
      h("label", {}, h("span", { text: "The outcome: how good is the result?" }), outcome),
      h("label", {}, h("span", { text: "Overall satisfaction with the agent as a teammate" }), satisfaction),
      h("label", {}, h("span", { text: "Comment" }), comment),
      h("div", { class: "cogym-row" }, submit), result);
    this.ratingBox.hidden = false;
  }
}

// -- transports: the only part that differs between the modes -----------------------------------

function xsrfToken() {
  const match = /(?:^|;\s*)_xsrf=([^;]*)/.exec(typeof document !== "undefined" ? document.cookie : "");
  return match ? decodeURIComponent(match[1]) : null;
}

// server mode: the browser talks to the session's WebSocket and REST API on the Jupyter server.
export function serverTransport(model, receive, setConnection) {
  const token = model.get("token") || "";
  const wsUrl = new URL(model.get("ws_url"), window.location.href);
  wsUrl.protocol = wsUrl.protocol === "https:" ? "wss:" : "ws:";
  if (token) wsUrl.searchParams.set("token", token);
  const apiUrl = new URL(model.get("api_url"), window.location.href);
  let socket = null;
  let closed = false;
  let retry = 500;
  const queue = [];

  const connect = () => {
    setConnection("connecting");
    socket = new WebSocket(wsUrl.toString());
    socket.onopen = () => {
      retry = 500;
      while (queue.length) socket.send(queue.shift());
      setConnection("open");
    };
    socket.onmessage = (event) => {
      try {
        receive(JSON.parse(event.data));
      } catch (error) {
        console.warn("cogym: could not read a message", error);
      }
    };
    socket.onclose = () => {
      if (closed) return;
      setConnection("closed");
      setTimeout(connect, retry); // the server syncs a reconnecting seat: nothing is lost
      retry = Math.min(retry * 2, 10000);
    };
  };
  connect();

  return {
    send(payload) {
      const text = JSON.stringify(payload);
      if (socket && socket.readyState === WebSocket.OPEN) {
        socket.send(text);
        return true;
      }
      queue.push(text);
      return false;
    },
    async rate(rating) {
      const headers = { "Content-Type": "application/json" };
      if (token) headers.Authorization = `token ${token}`;
      const xsrf = xsrfToken();
      if (xsrf) headers["X-XSRFToken"] = xsrf;
      const response = await fetch(new URL(apiUrl.pathname.replace(/\/?$/, "/rating"), apiUrl).toString(),
        { method: "POST", headers, body: JSON.stringify(rating), credentials: "same-origin" });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(body.message || body.error || `HTTP ${response.status}`);
      return body;
    },
    close() {
      closed = true;
      if (socket) socket.close();
    },
  };
}

// local mode: the kernel hosts the session; messages travel through the widget's comm.
export function localTransport(model, receive, setConnection) {
  const waiting = new Map();
  let counter = 0;
  const onMessage = (content) => {
    if (!content || typeof content !== "object") return;
    if (content.type === "notification") receive(content.data);
    else if (content.type === "status") receive({ type: "status", ...content.data });
    else if (content.type === "error") receive({ type: "error", error: content.error, id: content.id });
    else if (content.type === "rated" || content.type === "rating_error") {
      const pending = waiting.get(content.id);
      waiting.delete(content.id);
      if (!pending) return;
      if (content.type === "rated") pending.resolve(content);
      else pending.reject(new Error(content.error));
    }
  };
  model.on("msg:custom", onMessage);
  model.send({ type: "hello" });
  setConnection("open");
  return {
    send(payload) {
      model.send({ type: "action", ...payload });
      return true;
    },
    rate(rating) {
      const id = ++counter;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        model.send({ type: "rating", id, ...rating });
      });
    },
    close() {
      model.off("msg:custom", onMessage);
    },
  };
}

export const TRANSPORTS = { server: serverTransport, local: localTransport };

function render({ model, el }) {
  const panel = new Panel(el, model);
  const open = TRANSPORTS[model.get("mode")] || serverTransport;
  panel.transport = open(model, (message) => panel.receive(message), (state) => panel.setConnection(state));
  return () => panel.transport.close();
}

export default { render };
