// Co-Gym trajectory viewer for anywidget and for a standalone HTML file: one ES module, no
// build step, no static imports.
//
// It shows one finished session, event by event: a timeline with a slider (arrows, Page Up /
// Page Down, Home and End move it; typing an event number and Enter jumps), each member's view
// and chat as they were right after the event, what the event changed, the LM call behind it
// and the failure and audit labels found at it. Everything it shows was computed in Python by
// replaying the session's log (cogym_lab.records.viewer); the payload carries each state only
// where it changed, mostly as small patches (applyPatch), and this module rebuilds the state at
// the event shown. The members' views are drawn by the session panel's own WorkspaceView (the
// kitchen, the plan and every other render type look as they did live), imported from the
// panel module's source text (the `panel_module` trait), read-only.
//
// Text from the session (views, chat, prompts, replies) only ever goes in as textContent.
//
// The module, top to bottom:
//   payload and frames      typedefs, gunzip, applyPatch, Frames (the state at an event)
//   safe rendering          h(), longText(), jsonText()
//   views                   SummaryView, TimelineView, MemberView, ChangesView, CallView,
//                           LabelsView: each owns its part of the DOM
//   TrajectoryViewer        composes them, owns the position and the keys
//   entry points            render() for anywidget, standalone() for the HTML export

// -- payload and frames -----------------------------------------------------------------------

/**
 * @typedef {object} TimelineEvent
 * @property {number} seq
 * @property {number} time
 * @property {string} type
 * @property {string | null} [actor]
 * @property {string | null} [action]
 * @property {number | null} [action_chars]
 * @property {string} status
 * @property {string | null} [error]
 * @property {boolean} [private]
 * @property {number | null} [tick]
 * @property {Record<string, unknown>} info
 */

/** @typedef {{at: number, components: number[], rest: number}} ViewPoint */
/** @typedef {{at: number, start: number, length: number}} ChatPoint */
/** @typedef {{at: number, value: number}} StatePoint */
/** @typedef {{path: string, before: string, after: string}} Change */
/** @typedef {{seq: number, count: number, changes: Change[]}} EventChanges */

/**
 * @typedef {object} LMCall
 * @property {number} index
 * @property {number | null} [ended]
 * @property {string | null} [time]
 * @property {string | null} [purpose]
 * @property {string | null} [model]
 * @property {unknown} [messages]
 * @property {string | null} [completion]
 * @property {string | null} [error]
 * @property {Record<string, unknown> | null} [usage]
 * @property {number | null} [latency]
 * @property {number | null} [attempts]
 * @property {number | null} [seed]
 * @property {boolean} [truncated]
 */

/** @typedef {{seq: number, role: string, call: number, earlier: number[]}} CallMatch */

/**
 * @typedef {object} Label
 * @property {number | null} seq
 * @property {"failure" | "audit" | "check"} source
 * @property {string} code
 * @property {string} title
 * @property {string} detail
 * @property {string} quote
 * @property {string | null} [severity]
 * @property {string | null} [attribution]
 * @property {boolean | null} [verified]
 * @property {boolean} [critical]
 */

/**
 * @typedef {object} SessionSummary
 * @property {string} session_id
 * @property {string} folder
 * @property {string} task
 * @property {string} [instance]
 * @property {{role: string, kind: string}[]} team
 * @property {string} status
 * @property {string | null} [end_reason]
 * @property {Record<string, number>} scores
 * @property {Record<string, Record<string, unknown>>} ratings
 * @property {boolean | null} [flagged]
 * @property {string | null} [replay_note]
 * @property {string | null} [replay_error]
 * @property {Record<string, string>} files
 */

/**
 * What Python sends (cogym_lab.records.viewer.payload.TrajectoryPayload).
 * @typedef {object} Payload
 * @property {number} version
 * @property {SessionSummary} session
 * @property {string[]} roles
 * @property {{name: string, description?: string}[]} action_specs
 * @property {TimelineEvent[]} events
 * @property {number} replayed
 * @property {Record<string, unknown>[]} values
 * @property {Record<string, ViewPoint[]>} views
 * @property {ChatMessage[]} messages
 * @property {ChatPoint[]} chat
 * @property {StatePoint[]} state
 * @property {EventChanges[]} changes
 * @property {Record<string, LMCall[]>} calls
 * @property {CallMatch[]} call_matches
 * @property {Record<string, number>} unmatched_calls
 * @property {Label[]} labels
 */

/**
 * @typedef {object} ChatMessage
 * @property {number} seq
 * @property {number} time
 * @property {string} sender
 * @property {string} text
 * @property {string | null} [to]
 */

/**
 * A component of a member's view, as the panel's WorkspaceView takes it.
 * @typedef {object} Component
 * @property {string} name
 * @property {string} render_type
 * @property {string} [title]
 * @property {boolean} [private]
 * @property {unknown} content
 */

/** @typedef {typeof import("./session_panel.js")} PanelModule */

/** The payload version this module reads (cogym_lab.records.viewer.payload.PAYLOAD_VERSION). */
const PAYLOAD_VERSION = 1;

/**
 * @param {unknown} data  the payload trait: a DataView (ipywidgets), an ArrayBuffer or bytes
 * @returns {Uint8Array}
 */
function bytesOf(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof DataView) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(0);
}

/**
 * @param {Uint8Array} bytes  gzipped UTF-8
 * @returns {Promise<string>}
 */
export async function gunzip(bytes) {
  const part = /** @type {BlobPart} */ (/** @type {unknown} */ (bytes)); // never a shared buffer
  const stream = new Blob([part]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

/**
 * A patch applied to `base` (cogym_lab.records.viewer.values: ["=", value], ["o", changed,
 * removed] or ["a", length, changed]); `base` is left as it was.
 * @param {unknown} base
 * @param {unknown} patch
 * @returns {unknown}
 */
export function applyPatch(base, patch) {
  const [kind, first, second] = /** @type {[string, unknown, unknown]} */ (patch);
  if (kind === "=") return first;
  if (kind === "o") {
    const removed = new Set(/** @type {string[]} */ (second));
    /** @type {Record<string, unknown>} */
    const result = {};
    for (const [key, value] of Object.entries(/** @type {Record<string, unknown>} */ (base))) {
      if (!removed.has(key)) result[key] = value;
    }
    for (const [key, part] of Object.entries(/** @type {Record<string, unknown>} */ (first))) {
      result[key] = Object.hasOwn(result, key) ? applyPatch(result[key], part)
        : /** @type {unknown[]} */ (part)[1];
    }
    return result;
  }
  if (kind === "a") {
    const items = /** @type {unknown[]} */ (base).slice(0, /** @type {number} */ (first));
    const changed = Object.entries(/** @type {Record<string, unknown>} */ (second))
      .map(([index, part]) => /** @type {[number, unknown]} */ ([Number(index), part]))
      .sort((a, b) => a[0] - b[0]);
    for (const [index, part] of changed) {
      if (index < items.length) items[index] = applyPatch(items[index], part);
      else items.push(/** @type {unknown[]} */ (part)[1]);
    }
    return items;
  }
  throw new Error(`unknown patch kind ${kind}`);
}

/**
 * @template {{at: number}} P
 * @param {P[]} points  in order of `at`
 * @param {number} index  an event's index
 * @returns {P | null} the point in effect at that event: the last one not after it
 */
function pointAt(points, index) {
  let low = 0;
  let high = points.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (points[middle].at <= index) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return found >= 0 ? points[found] : null;
}

/** Decoded values kept: a few thousand, so scrubbing back and forth decodes nothing twice. */
const VALUE_CACHE = 4096;

/**
 * The state at any event, rebuilt from the payload's points and value table as
 * cogym_lab.records.viewer.frames.Trajectory does in Python.
 */
export class Frames {
  /** @param {Payload} payload */
  constructor(payload) {
    this.payload = payload;
    /** @type {Map<number, unknown>} the latest decoded values, oldest first */
    this.cache = new Map();
  }

  /**
   * @param {number} number  an entry of the value table
   * @returns {unknown}
   */
  value(number) {
    if (this.cache.has(number)) {
      const value = this.cache.get(number);
      this.cache.delete(number); // the most recent last
      this.cache.set(number, value);
      return value;
    }
    const entry = /** @type {{v?: unknown, b?: number, p?: unknown}} */ (this.payload.values[number]);
    const value = Object.hasOwn(entry, "v") ? entry.v
      : applyPatch(this.value(/** @type {number} */ (entry.b)), entry.p);
    this.cache.set(number, value);
    if (this.cache.size > VALUE_CACHE) this.cache.delete(/** @type {number} */ (this.cache.keys().next().value));
    return value;
  }

  /** @param {number} index */
  replayed(index) {
    return index < this.payload.replayed;
  }

  /**
   * @param {number} index  an event's index
   * @param {string} role
   * @returns {Component[]} the member's components right after that event
   */
  components(index, role) {
    const point = pointAt(this.payload.views[role] || [], index);
    return point ? point.components.map((number) => /** @type {Component} */ (this.value(number))) : [];
  }

  /**
   * @param {number} index
   * @returns {ChatMessage[]} the whole chat right after that event
   */
  chat(index) {
    const point = pointAt(this.payload.chat, index);
    return point ? this.payload.messages.slice(point.start, point.start + point.length) : [];
  }

  /**
   * @param {number} index
   * @param {string} role
   * @returns {ChatMessage[]} what that member could read (as Coordinator.visible_chat)
   */
  visibleChat(index, role) {
    return this.chat(index).filter((m) => m.to === null || m.to === undefined || m.to === role
      || m.sender === role);
  }

  /**
   * @param {number} index
   * @returns {Record<string, unknown>} the rest of the state: seq, confirmations, pauses,
   *   step counts, done, end_reason, outcome
   */
  rest(index) {
    const point = pointAt(this.payload.state, index);
    return point ? /** @type {Record<string, unknown>} */ (this.value(point.value)) : {};
  }
}

// -- safe rendering ---------------------------------------------------------------------------

/** @typedef {Node | string | number | null | undefined | false} Child */

/**
 * An element with attributes and children; text only ever as text nodes. `text` sets
 * textContent, `testid` data-testid, `dataset` data-*, `on` listeners; other keys attributes.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown>} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = String(value);
    else if (key === "testid") node.dataset.testid = String(value);
    else if (key === "text") node.textContent = String(value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "on") {
      for (const [name, listener] of Object.entries(/** @type {Record<string, EventListener>} */ (value))) {
        node.addEventListener(name, listener);
      }
    } else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * Put `children` in `node` in place of what it held; null and false leave a child out (the
 * DOM's own replaceChildren would show them as the text "null").
 * @param {HTMLElement} node
 * @param {...Child} children
 */
function fill(node, ...children) {
  node.replaceChildren(...children.filter((child) => child !== null && child !== undefined && child !== false)
    .map((child) => (child instanceof Node ? child : String(child))));
}

/** Characters of a long text shown before "Show all". */
const TEXT_SHOWN = 20000;

/**
 * A text in a <pre>, cut to its first TEXT_SHOWN characters with a button that shows the rest.
 * @param {unknown} value  a string; anything else shows as JSON
 * @param {string} testid
 * @returns {HTMLElement}
 */
function longText(value, testid) {
  const text = typeof value === "string" ? value : jsonText(value);
  const pre = h("pre", { class: "cogym-pre cogym-tv-text", testid });
  if (text.length <= TEXT_SHOWN) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = text.slice(0, TEXT_SHOWN);
  const more = h("button", { class: "cogym-tv-more", testid: "viewer-show-all",
    text: `Show all ${text.length.toLocaleString("en")} characters`,
    on: { click: () => {
      pre.textContent = text;
      more.remove();
    } } });
  return h("div", {}, pre, more);
}

/**
 * @param {unknown} value
 * @returns {string} indented JSON (a string as it is)
 */
function jsonText(value) {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch (error) {
    return String(value);
  }
}

/**
 * @param {number} seconds
 * @returns {string} "+1:02.5" from the session's start
 */
function sinceStart(seconds) {
  const sign = seconds < 0 ? "-" : "+";
  const total = Math.abs(seconds);
  const minutes = Math.floor(total / 60);
  return `${sign}${minutes}:${(total - minutes * 60).toFixed(1).padStart(4, "0")}`;
}

/**
 * @param {string} text
 * @param {number} limit
 * @returns {string} one line, at most `limit` characters
 */
function oneLine(text, limit) {
  const line = text.replace(/\s*\n\s*/g, " ⏎ ");
  return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`;
}

/** Each label source: its words and its colour class. */
const LABEL_SOURCES = {
  failure: { words: "Failure", css: "cogym-tv-failure" },
  audit: { words: "User audit", css: "cogym-tv-audit" },
  check: { words: "Check", css: "cogym-tv-check" },
};

/**
 * @param {Label} label
 * @returns {string} "Failure C.1 · Name" in one line
 */
function labelWords(label) {
  const source = LABEL_SOURCES[label.source] || LABEL_SOURCES.failure;
  const title = label.title && label.title !== label.code ? ` · ${label.title}` : "";
  return `${source.words} ${label.code}${title}`;
}

// -- views --------------------------------------------------------------------------------------

/**
 * The header: the session, its team, how it ended, scores and ratings, which optional files
 * were read, and the session picker of a run folder.
 */
class SummaryView {
  /** @param {(session: string) => void} pick */
  constructor(pick) {
    this.picker = h("select", { testid: "viewer-session-picker", "aria-label": "Session",
      on: { change: () => pick(this.picker.value) } });
    this.pickerNote = h("span", { class: "cogym-muted", testid: "viewer-session-note" });
    this.body = h("div", { class: "cogym-tv-summary", testid: "viewer-summary" });
    this.root = h("div", { class: "cogym-header cogym-tv-header" },
      h("div", { class: "cogym-tv-title-row" },
        h("span", { class: "cogym-title", text: "Trajectory" }), this.picker, this.pickerNote),
      this.body);
  }

  /**
   * @param {string[]} sessions  the run folder's sessions (one for a session folder)
   * @param {string} current
   * @param {boolean} exported  a standalone file holds one session only
   */
  sessions(sessions, current, exported) {
    this.picker.replaceChildren(...sessions.map((name) => h("option", { value: name, text: name })));
    this.picker.value = current;
    this.picker.disabled = exported || sessions.length < 2;
    this.pickerNote.textContent = exported && sessions.length > 1
      ? `one of ${sessions.length} sessions of the run (export another with export_html)`
      : sessions.length > 1 ? `${sessions.length} sessions in this run: pick one` : "";
  }

  /** @param {Payload} payload */
  show(payload) {
    const s = payload.session;
    const team = s.team.map((m) => `${m.role} (${m.kind})`).join(", ") || "unknown";
    const scores = Object.entries(s.scores).map(([k, v]) => `${k} ${Number(v).toFixed(3)}`).join(" · ");
    const ratings = Object.entries(s.ratings).map(([role, r]) =>
      `${role}: ${Object.entries(r).map(([k, v]) => `${k} ${jsonText(v)}`).join(", ")}`);
    const unmatched = Object.entries(payload.unmatched_calls)
      .map(([role, count]) => `${count} LM call${count === 1 ? "" : "s"} of ${role} led to no event`);
    const files = Object.entries(s.files).map(([name, state]) => `${name}: ${state}`).join(" · ");
    const session = this.sessionLabels(payload);
    fill(this.body,
      h("div", { testid: "viewer-session", text: `Session ${s.session_id} · task ${s.task}`
        + (s.instance ? ` · instance ${s.instance}` : "") }),
      h("div", { class: "cogym-muted", text: `Team: ${team}` }),
      h("div", { class: "cogym-muted", testid: "viewer-ending",
        text: `Status: ${s.status}${s.end_reason ? ` (${s.end_reason})` : ""} · `
          + `${payload.events.length} events${scores ? ` · ${scores}` : ""}` }),
      ratings.length ? h("div", { class: "cogym-muted", text: `Ratings: ${ratings.join("; ")}` }) : null,
      s.flagged !== null && s.flagged !== undefined ? h("div", { testid: "viewer-flagged",
        class: s.flagged ? "cogym-tv-flagged" : "cogym-muted",
        text: s.flagged ? "The simulated-user audit flagged this session" : "The audit did not flag it" })
        : null,
      s.replay_error ? h("div", { class: "cogym-error", testid: "viewer-replay-error",
        text: `The log replays only up to event ${payload.replayed}: ${s.replay_error}` }) : null,
      s.replay_note ? h("div", { class: "cogym-muted", text: s.replay_note }) : null,
      unmatched.length ? h("div", { class: "cogym-muted", text: unmatched.join("; ") }) : null,
      files ? h("div", { class: "cogym-muted", testid: "viewer-files", text: files }) : null,
      session);
  }

  /**
   * @param {Payload} payload
   * @returns {HTMLElement | null} the labels on the whole session (found at no event)
   */
  sessionLabels(payload) {
    const labels = payload.labels.filter((label) => label.seq === null || label.seq === undefined);
    if (!labels.length) return null;
    return h("details", { class: "cogym-fold", testid: "viewer-session-labels" },
      h("summary", { text: `${labels.length} label${labels.length === 1 ? "" : "s"} on the whole session` }),
      labels.map((label) => labelItem(label)));
  }
}

/**
 * @param {Label} label
 * @returns {HTMLElement} the label in words, its quote as text
 */
function labelItem(label) {
  const source = LABEL_SOURCES[label.source] || LABEL_SOURCES.failure;
  const facts = [label.detail, label.severity && label.source !== "audit" ? label.severity : "",
    label.critical ? "critical" : "", label.verified === true ? "quote found in the log"
      : label.verified === false ? "quote not found in the log" : ""].filter(Boolean).join(" · ");
  return h("div", { class: `cogym-tv-label ${source.css}`, testid: "viewer-label",
    dataset: { source: label.source, code: label.code } },
  h("strong", { text: labelWords(label) }),
  facts ? h("span", { class: "cogym-muted", text: ` ${facts}` }) : null,
  label.quote ? h("blockquote", { class: "cogym-tv-quote", text: label.quote }) : null);
}

/** Events listed around the one shown, on each side. */
const LIST_AROUND = 6;

/**
 * The timeline: the slider, the labels marked along it, the event number field, and the
 * events around the one shown.
 */
class TimelineView {
  /**
   * @param {(index: number) => void} go  show the event at that index
   * @param {(text: string) => void} jump  show the event numbered `text`
   * @param {() => void} back  Escape in the number field: back to the viewer
   */
  constructor(go, jump, back) {
    this.go = go;
    /** @type {TimelineEvent[]} */
    this.events = [];
    /** @type {Map<number, Label[]>} */
    this.labels = new Map();
    /** @type {Map<number, number>} seq -> index */
    this.index = new Map();
    this.specs = /** @type {{name: string, description?: string}[]} */ ([]);
    /** @type {PanelModule | null} */
    this.panel = null;
    this.slider = h("input", { type: "range", min: "0", max: "0", step: "1", value: "0",
      class: "cogym-tv-slider", testid: "viewer-slider", "aria-label": "Event",
      on: { input: () => this.go(Number(this.slider.value)) } });
    this.marks = h("div", { class: "cogym-tv-marks", testid: "viewer-marks", "aria-label": "Labels on the timeline" });
    this.jumpField = h("input", { type: "text", inputmode: "numeric", class: "cogym-tv-jump",
      testid: "viewer-jump", "aria-label": "Go to event number", size: "6",
      on: { keydown: (/** @type {KeyboardEvent} */ event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          jump(this.jumpField.value);
        } else if (event.key === "Escape") {
          event.preventDefault();
          this.jumpField.value = this.jumpField.dataset.shown || "";
          this.jumpError.textContent = "";
          back();
        }
      } } });
    this.jumpError = h("span", { class: "cogym-tv-jump-error", testid: "viewer-jump-error", role: "status" });
    this.position = h("span", { class: "cogym-tv-position", testid: "viewer-position", "aria-live": "polite" });
    this.list = h("ol", { class: "cogym-tv-events", testid: "viewer-events" });
    this.root = h("div", { class: "cogym-tv-timeline", testid: "viewer-timeline" },
      h("div", { class: "cogym-tv-track" }, this.marks, this.slider),
      h("div", { class: "cogym-row cogym-tv-controls" },
        h("label", { class: "cogym-muted" }, "Event ", this.jumpField), this.position, this.jumpError,
        h("span", { class: "cogym-muted cogym-tv-keys",
          text: "← → move · PgUp PgDn ten · Home End · type a number and Enter · Esc leaves" })),
      this.list);
  }

  /**
   * @param {Payload} payload
   * @param {PanelModule} panel
   */
  load(payload, panel) {
    this.panel = panel;
    this.events = payload.events;
    this.specs = payload.action_specs;
    this.index = new Map(this.events.map((event, index) => [event.seq, index]));
    this.labels = new Map();
    for (const label of payload.labels) {
      if (label.seq === null || label.seq === undefined) continue;
      const list = this.labels.get(label.seq) || [];
      list.push(label);
      this.labels.set(label.seq, list);
    }
    this.slider.max = String(Math.max(0, this.events.length - 1));
    const span = Math.max(1, this.events.length - 1);
    this.marks.replaceChildren(...[...this.labels.entries()].map(([seq, labels]) => {
      const index = this.index.get(seq) ?? 0;
      const sources = [...new Set(labels.map((label) => label.source))];
      const css = LABEL_SOURCES[sources[0]]?.css || "";
      return h("button", { class: `cogym-tv-mark ${css}`, testid: "viewer-mark",
        style: `left: ${(index / span) * 100}%`,
        dataset: { seq: String(seq), sources: sources.join(" ") },
        title: `Event ${seq}: ${labels.map(labelWords).join("; ")}`,
        "aria-label": `Event ${seq}: ${labels.map(labelWords).join("; ")}`,
        on: { click: () => this.go(index) } });
    }));
  }

  /**
   * @param {TimelineEvent} event
   * @returns {string} what happened, in words
   */
  describe(event) {
    if (event.type === "clock") {
      const score = event.info.score !== undefined ? ` · score ${jsonText(event.info.score)}` : "";
      return `tick ${event.tick ?? "?"}${score}`;
    }
    const what = event.action && this.panel ? this.panel.describeAction(event.action,
      /** @type {import("./session_panel.js").ActionSpec[]} */ (this.specs)) : event.type;
    const cut = event.action_chars ? ` (${event.action_chars.toLocaleString("en")} characters, cut)` : "";
    const reason = event.type === "end" && event.info.reason ? `: ${jsonText(event.info.reason)}` : "";
    return `${what}${cut}${reason}`;
  }

  /** @param {number} index */
  show(index) {
    const event = this.events[index];
    if (!event) return;
    this.slider.value = String(index);
    this.slider.setAttribute("aria-valuetext", `event ${event.seq}: ${event.type}`);
    if (document.activeElement !== this.jumpField) this.jumpField.value = String(event.seq);
    this.jumpField.dataset.shown = String(event.seq);
    const start = this.events[0]?.time ?? event.time;
    this.position.textContent = `${event.seq} of ${this.events[this.events.length - 1]?.seq ?? 0}`
      + ` · ${sinceStart(event.time - start)}${event.tick ? ` · tick ${event.tick}` : ""}`;
    const from = Math.max(0, Math.min(index - LIST_AROUND, this.events.length - 2 * LIST_AROUND - 1));
    const rows = this.events.slice(from, from + 2 * LIST_AROUND + 1).map((shown, offset) =>
      this.row(shown, from + offset, from + offset === index));
    this.list.replaceChildren(...rows);
  }

  /**
   * @param {TimelineEvent} event
   * @param {number} index
   * @param {boolean} current
   * @returns {HTMLLIElement}
   */
  row(event, index, current) {
    const labels = this.labels.get(event.seq) || [];
    const start = this.events[0]?.time ?? event.time;
    return h("li", { class: `cogym-tv-event${current ? " cogym-tv-current" : ""}`
      + `${event.status === "error" ? " cogym-tv-refused" : ""}`, testid: "viewer-event",
    dataset: { seq: String(event.seq), type: event.type, current: String(current) },
    "aria-current": current ? "step" : false,
    on: { click: () => this.go(index) } },
    h("span", { class: "cogym-tv-seq", text: `#${event.seq}` }),
    h("span", { class: "cogym-muted", text: sinceStart(event.time - start) }),
    h("span", { class: "cogym-tv-actor", text: event.actor || "session" }),
    h("span", { class: "cogym-tv-type", text: event.type }),
    h("span", { class: "cogym-tv-what", text: oneLine(this.describe(event), 160) }),
    event.status === "error"
      ? h("span", { class: "cogym-tv-refusal", text: `refused: ${oneLine(event.error || "", 120)}` }) : null,
    labels.map((label) => h("span", { class: `cogym-tv-chip ${LABEL_SOURCES[label.source]?.css || ""}`,
      testid: "viewer-event-label", text: label.code })));
  }
}

/** What the panel's views need from a host: in the viewer, nothing acts. */
const READ_ONLY_CONTROLS = "button, input, select, textarea";

/** Controls that only change what a view shows: left usable, as in the panel's watch mode. */
const VIEW_ONLY = new Set(["editor-preview-toggle", "plan-step-inspect", "viewer-show-all"]);

/**
 * One member's view and chat at the event shown: the panel's WorkspaceView, read-only, and the
 * chat as that member could read it.
 */
class MemberView {
  /**
   * @param {PanelModule} panel
   * @param {string} role
   * @param {string} kind
   */
  constructor(panel, role, kind) {
    this.role = role;
    this.kind = kind;
    this.ended = false; // whether the session had ended at the event shown
    const host = {
      replacing: () => null,
      picking: () => null,
      done: () => this.ended, // the kitchen shows its result only once the game is over
      send: () => false,
      role,
      readonly: true,
    };
    this.workspace = new panel.WorkspaceView(host);
    this.workspace.privateBadge = `only ${role}`;
    this.chatLog = h("div", { class: "cogym-chat-log cogym-tv-chat", testid: "viewer-chat",
      dataset: { role } });
    this.state = h("div", { class: "cogym-muted", testid: "viewer-member-state" });
    this.root = h("div", { class: "cogym-tv-member", testid: "viewer-member", dataset: { role }, hidden: true },
      h("div", { class: "cogym-tv-member-view" }, this.workspace.root),
      h("div", { class: "cogym-box cogym-tv-member-chat" },
        h("h4", {}, h("span", { text: `Chat as ${role} saw it` })), this.state, this.chatLog));
    /** @type {ChatMessage[]} */
    this.shownChat = [];
  }

  /**
   * @param {Component[]} components
   * @param {ChatMessage[]} chat
   * @param {Record<string, unknown>} rest
   * @param {number} seq
   */
  show(components, chat, rest, seq) {
    this.ended = Boolean(rest.done);
    this.workspace.update(components, false, seq);
    lockControls(this.workspace.root);
    this.root.dataset.seq = String(seq);
    const counts = /** @type {Record<string, number>} */ (rest.step_counts || {});
    const paused = /** @type {string[]} */ (rest.paused || []);
    const pending = /** @type {{requester: string}[]} */ (rest.pending_confirmations || []);
    this.state.textContent = [`steps ${counts[this.role] ?? 0}`,
      paused.includes(this.role) ? "paused" : "",
      pending.length ? `${pending.length} approval${pending.length === 1 ? "" : "s"} waiting` : "",
      rest.done ? `ended: ${jsonText(rest.end_reason)}` : ""].filter(Boolean).join(" · ");
    if (chat.length === this.shownChat.length && chat.every((m, i) => m === this.shownChat[i])) return;
    this.shownChat = chat;
    this.chatLog.replaceChildren(...(chat.length ? chat.map((message) => this.message(message))
      : [h("div", { class: "cogym-muted", text: "No messages yet." })]));
    this.chatLog.scrollTop = this.chatLog.scrollHeight;
  }

  /**
   * @param {ChatMessage} message
   * @returns {HTMLElement}
   */
  message(message) {
    const to = message.to ? ` → ${message.to}` : "";
    return h("div", { class: `cogym-msg${message.sender === this.role ? " cogym-msg-mine" : ""}`,
      testid: "viewer-chat-message", dataset: { sender: message.sender, seq: String(message.seq) } },
    h("div", { class: "cogym-msg-head cogym-muted", text: `#${message.seq} ${message.sender}${to}` }),
    longText(message.text, "viewer-chat-text"));
  }
}

/**
 * Disable every control inside `root` but those that only change what is shown: views rebuild
 * their controls as they update, so this runs after each update.
 * @param {HTMLElement} root
 */
function lockControls(root) {
  for (const control of root.querySelectorAll(READ_ONLY_CONTROLS)) {
    const element = /** @type {HTMLElement} */ (control);
    if (VIEW_ONLY.has(element.dataset.testid || "")) continue;
    if (element instanceof HTMLTextAreaElement || (element instanceof HTMLInputElement && element.type === "text")) {
      element.readOnly = true; // still selectable, so its text can be copied
      element.setAttribute("aria-readonly", "true");
    } else {
      /** @type {HTMLButtonElement | HTMLInputElement | HTMLSelectElement} */ (element).disabled = true;
    }
  }
}

/** What the event changed, as state_diff names it. */
class ChangesView {
  constructor() {
    this.list = h("div", { class: "cogym-tv-changes", testid: "viewer-changes" });
    this.root = h("div", { class: "cogym-box" }, h("h4", {}, h("span", { text: "What this event changed" })),
      this.list);
  }

  /**
   * @param {EventChanges | undefined} changes
   * @param {boolean} replayed
   */
  show(changes, replayed) {
    if (!replayed || !changes) {
      this.list.replaceChildren(h("div", { class: "cogym-muted",
        text: "Not known: the log did not replay this far." }));
      return;
    }
    if (!changes.count) {
      this.list.replaceChildren(h("div", { class: "cogym-muted", testid: "viewer-no-change",
        text: "Nothing in the state (an event that followed from the one before shows there)." }));
      return;
    }
    const more = changes.count - changes.changes.length;
    fill(this.list,
      h("table", { class: "cogym-table cogym-tv-diff" },
        h("thead", {}, h("tr", {}, h("th", { text: "where" }), h("th", { text: "before" }),
          h("th", { text: "after" }))),
        h("tbody", {}, changes.changes.map((change) => h("tr", { testid: "viewer-change" },
          h("td", { class: "cogym-tv-path", text: change.path }),
          h("td", { class: "cogym-tv-before", text: change.before }),
          h("td", { class: "cogym-tv-after", text: change.after }))))),
      more > 0 ? h("div", { class: "cogym-muted", text: `… and ${more} more` }) : null);
  }
}

/** The LM call behind the event: its prompt and its reply, and the calls just before it. */
class CallView {
  constructor() {
    this.body = h("div", { testid: "viewer-call" });
    this.root = h("div", { class: "cogym-box" }, h("h4", {}, h("span", { text: "The LM call behind it" })),
      this.body);
  }

  /**
   * @param {Payload} payload
   * @param {TimelineEvent} event
   */
  show(payload, event) {
    const match = payload.call_matches.find((candidate) => candidate.seq === event.seq);
    if (!match) {
      const why = !event.actor ? "The session made this event, not a member."
        : !payload.calls[event.actor] ? `${event.actor} has no LM call log.`
          : `No LM call of ${event.actor} returned between its previous event and this one.`;
      this.body.replaceChildren(h("div", { class: "cogym-muted", testid: "viewer-no-call", text: why }));
      this.body.dataset.call = "";
      return;
    }
    const calls = payload.calls[match.role] || [];
    const call = calls[match.call];
    this.body.dataset.call = String(match.call);
    this.body.dataset.role = match.role;
    fill(this.body,
      this.call(call, event, true),
      match.earlier.length ? h("details", { class: "cogym-fold", testid: "viewer-earlier-calls" },
        h("summary", { text: `${match.earlier.length} earlier call${match.earlier.length === 1 ? "" : "s"}`
          + ` of ${match.role} since its previous event` }),
        match.earlier.map((number) => this.call(calls[number], event, false))) : null);
  }

  /**
   * @param {LMCall} call
   * @param {TimelineEvent} event
   * @param {boolean} open
   * @returns {HTMLElement}
   */
  call(call, event, open) {
    const usage = call.usage || {};
    const facts = [call.purpose, call.model,
      call.ended !== null && call.ended !== undefined
        ? `returned ${(event.time - call.ended).toFixed(2)} s before the event` : "",
      call.latency !== null && call.latency !== undefined ? `took ${call.latency.toFixed(2)} s` : "",
      usage.prompt_tokens !== undefined ? `${usage.prompt_tokens} + ${usage.completion_tokens} tokens` : "",
      call.seed !== null && call.seed !== undefined ? `seed ${call.seed}` : "",
      call.truncated ? "cut to fit the log" : ""].filter(Boolean).join(" · ");
    const messages = Array.isArray(call.messages) ? call.messages : call.messages === null
      || call.messages === undefined ? [] : [{ role: "?", content: call.messages }];
    return h("div", { class: "cogym-tv-call", testid: "viewer-call-record", dataset: { index: String(call.index) } },
      h("div", { class: "cogym-muted", text: `Call ${call.index + 1}: ${facts}` }),
      h("details", { class: "cogym-fold", open: open ? true : false, testid: "viewer-prompt" },
        h("summary", { text: `Prompt (${messages.length} message${messages.length === 1 ? "" : "s"})` }),
        messages.map((message) => {
          const record = message && typeof message === "object" ? /** @type {Record<string, unknown>} */ (message)
            : { role: "?", content: message };
          return h("div", { class: "cogym-tv-prompt-message", testid: "viewer-prompt-message",
            dataset: { role: String(record.role ?? "?") } },
          h("div", { class: "cogym-tv-prompt-role", text: String(record.role ?? "?") }),
          longText(record.content, "viewer-prompt-text"));
        })),
      h("div", { class: "cogym-tv-reply-head", text: call.error ? "Error" : "Reply" }),
      call.error ? longText(call.error, "viewer-call-error")
        : longText(call.completion ?? "(no reply)", "viewer-reply"));
  }
}

/** The labels found at the event shown. */
class LabelsView {
  constructor() {
    this.list = h("div", { testid: "viewer-labels" });
    this.root = h("div", { class: "cogym-box", hidden: true },
      h("h4", {}, h("span", { text: "Labels at this event" })), this.list);
  }

  /** @param {Label[]} labels */
  show(labels) {
    this.root.hidden = labels.length === 0;
    this.list.replaceChildren(...labels.map((label) => labelItem(label)));
  }
}

// -- the viewer --------------------------------------------------------------------------------

/** Keys the viewer takes wherever the focus is inside it (but in a text field). */
const MOVES = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, PageDown: 10, PageUp: -10 };

/**
 * @typedef {object} Host  what the viewer tells its surroundings
 * @property {(seq: number) => void} moved  the event shown changed
 * @property {(role: string) => void} picked  another member's view is shown
 * @property {(session: string) => void} session  another session of the run was picked
 */

/**
 * The whole viewer: it owns the position (the index of the event shown), the member shown and
 * the keys, and tells each view what to show.
 */
export class TrajectoryViewer {
  /**
   * @param {HTMLElement} el
   * @param {PanelModule} panel
   * @param {Host} host
   */
  constructor(el, panel, host) {
    this.panel = panel;
    this.host = host;
    /** @type {Payload | null} */
    this.payload = null;
    /** @type {Frames | null} */
    this.frames = null;
    this.index = 0;
    /** @type {string} */
    this.role = "";
    /** @type {Map<string, MemberView>} */
    this.members = new Map();
    this.summary = new SummaryView((session) => host.session(session));
    this.timeline = new TimelineView((index) => this.go(index), (text) => this.jump(text), () => this.focus());
    this.tabs = h("div", { class: "cogym-tv-tabs", role: "tablist", testid: "viewer-tabs" });
    this.memberArea = h("div", { class: "cogym-tv-members" });
    this.changes = new ChangesView();
    this.call = new CallView();
    this.labels = new LabelsView();
    this.notice = h("div", { class: "cogym-muted", testid: "viewer-notice", role: "status" });
    this.root = h("div", { class: "cogym-panel cogym-readonly cogym-trajectory", testid: "trajectory-viewer",
      tabindex: "0", "data-lm-suppress-shortcuts": "true", "aria-label": "Trajectory viewer",
      dataset: { state: "loading" } },
    this.summary.root, this.notice, this.timeline.root,
    h("div", { class: "cogym-tv-body" },
      h("div", { class: "cogym-tv-main" }, this.tabs, this.memberArea),
      h("div", { class: "cogym-tv-side" }, this.labels.root, this.changes.root, this.call.root)));
    this.root.addEventListener("keydown", (event) => this.onKey(event), true);
    for (const name of /** @type {const} */ (["keydown", "keypress", "keyup"])) {
      this.root.addEventListener(name, (event) => keepKey(event)); // never to JupyterLab
    }
    el.replaceChildren(this.root);
  }

  /**
   * @param {Payload} payload
   * @param {number} seq  the event to show first (0: the first)
   * @param {string} role  the member to show first ("": the first)
   */
  load(payload, seq, role) {
    if (payload.version !== PAYLOAD_VERSION) {
      this.fail(`This viewer reads payload version ${PAYLOAD_VERSION}, not ${payload.version}.`);
      return;
    }
    this.payload = payload;
    this.frames = new Frames(payload);
    this.summary.show(payload);
    this.timeline.load(payload, this.panel);
    for (const member of this.members.values()) member.root.remove();
    this.members = new Map();
    const kinds = new Map(payload.session.team.map((m) => [m.role, m.kind]));
    this.tabs.replaceChildren(...payload.roles.map((name) => h("button", { role: "tab", class: "cogym-tv-tab",
      testid: "viewer-tab", dataset: { role: name }, text: `${name} (${kinds.get(name) || "member"})`,
      on: { click: () => this.pick(name) } })));
    this.role = payload.roles.includes(role) ? role : payload.roles[0] || "";
    this.notice.textContent = payload.events.length ? "" : "This session has no events.";
    const index = payload.events.findIndex((event) => event.seq === seq);
    this.root.dataset.state = "ready";
    this.root.dataset.events = String(payload.events.length);
    this.go(index >= 0 ? index : 0, index >= 0); // the host learns where it starts if it did not say
  }

  /** @param {string} text  why nothing can be shown */
  fail(text) {
    this.root.dataset.state = "error";
    this.notice.textContent = text;
  }

  /** @param {string} role */
  pick(role) {
    if (!this.payload || !this.payload.roles.includes(role)) return;
    this.role = role;
    this.host.picked(role);
    this.render();
  }

  /**
   * @param {number} index
   * @param {boolean} [quiet]  do not tell the host (it gave this position)
   */
  go(index, quiet = false) {
    if (!this.payload || !this.payload.events.length) return;
    const last = this.payload.events.length - 1;
    this.index = Math.max(0, Math.min(last, Math.round(index)));
    this.render();
    if (!quiet) this.host.moved(this.payload.events[this.index].seq);
  }

  /**
   * Show the event numbered `text` (or say why not).
   * @param {string} text
   */
  jump(text) {
    if (!this.payload) return;
    const seq = Number(text.trim());
    const index = Number.isInteger(seq) ? this.payload.events.findIndex((event) => event.seq === seq) : -1;
    if (index < 0) {
      const events = this.payload.events;
      this.timeline.jumpError.textContent = events.length
        ? `No event ${oneLine(text, 20)}: the events are ${events[0].seq} to ${events[events.length - 1].seq}.`
        : "This session has no events.";
      return;
    }
    this.timeline.jumpError.textContent = "";
    this.go(index);
    this.focus();
  }

  /** The viewer itself takes the keys (after the number field, or a click in a view). */
  focus() {
    this.root.focus({ preventScroll: true });
  }

  /** Show everything at the current position. */
  render() {
    const payload = /** @type {Payload} */ (this.payload);
    const frames = /** @type {Frames} */ (this.frames);
    const event = payload.events[this.index];
    this.root.dataset.seq = String(event.seq);
    this.root.dataset.role = this.role;
    this.timeline.show(this.index);
    for (const tab of this.tabs.querySelectorAll("button")) {
      const selected = tab.dataset.role === this.role;
      tab.setAttribute("aria-selected", String(selected));
      tab.classList.toggle("cogym-tv-tab-current", selected);
    }
    const replayed = frames.replayed(this.index);
    for (const [name, member] of this.members) member.root.hidden = name !== this.role || !replayed;
    if (replayed && this.role) {
      const member = this.member(this.role);
      member.show(frames.components(this.index, this.role), frames.visibleChat(this.index, this.role),
        frames.rest(this.index), event.seq);
      member.root.hidden = false;
    }
    this.notice.textContent = replayed ? "" : "The log did not replay this far: no state to show.";
    this.changes.show(payload.changes[this.index], replayed);
    this.call.show(payload, event);
    this.labels.show(payload.labels.filter((label) => label.seq === event.seq));
  }

  /**
   * @param {string} role
   * @returns {MemberView} that member's view, made when first shown
   */
  member(role) {
    let member = this.members.get(role);
    if (!member) {
      const kind = this.payload?.session.team.find((m) => m.role === role)?.kind || "member";
      member = new MemberView(this.panel, role, kind);
      this.members.set(role, member);
      this.memberArea.append(member.root);
    }
    return member;
  }

  /**
   * Keys anywhere in the viewer but in a text field: arrows, Page Up/Down, Home and End move;
   * a digit starts an event number; Escape gives the keys back to the page (the notebook).
   * In the number field, Enter and Escape are the field's (TimelineView).
   * @param {KeyboardEvent} event
   */
  onKey(event) {
    if (event.isComposing || event.ctrlKey || event.metaKey || event.altKey || !this.payload) return;
    const target = /** @type {HTMLElement} */ (event.target);
    const inField = target instanceof HTMLTextAreaElement || (target instanceof HTMLInputElement
      && target.type !== "range") || target instanceof HTMLSelectElement;
    if (inField) {
      if (event.key === "Escape" && target !== this.timeline.jumpField) {
        event.preventDefault();
        event.stopPropagation();
        this.focus(); // Escape leaves a field, as in the panel
      }
      return;
    }
    const last = this.payload.events.length - 1;
    const step = MOVES[/** @type {keyof typeof MOVES} */ (event.key)];
    let index = null;
    if (step !== undefined) index = this.index + (event.shiftKey ? step * 10 : step);
    else if (event.key === "Home") index = 0;
    else if (event.key === "End") index = last;
    if (index !== null) {
      event.preventDefault(); // the range input and the page do not move too
      event.stopPropagation(); // nor a view inside (the kitchen takes arrows)
      this.go(index);
      return;
    }
    if (/^[0-9]$/.test(event.key)) {
      event.preventDefault();
      event.stopPropagation();
      this.timeline.jumpField.value = event.key;
      this.timeline.jumpField.focus();
      return;
    }
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      this.release();
    }
  }

  /**
   * Escape: the keys go back to the page. The nearest focusable element around the viewer takes
   * the focus (in JupyterLab, the notebook's cell: command mode); elsewhere it just leaves.
   */
  release() {
    const around = this.root.parentElement?.closest("[tabindex]");
    const active = document.activeElement;
    if (active instanceof HTMLElement && this.root.contains(active)) active.blur();
    if (around instanceof HTMLElement) around.focus({ preventScroll: true });
  }
}

/**
 * Stop a key at the viewer's edge, unless it is Tab (focus moves on) or a shortcut with Ctrl,
 * Alt or Cmd (the browser's and JupyterLab's).
 * @param {KeyboardEvent} event
 */
function keepKey(event) {
  if (event.key === "Tab" || event.ctrlKey || event.metaKey || event.altKey) return;
  event.stopPropagation();
}

// -- entry points --------------------------------------------------------------------------------

/**
 * @typedef {object} Model  anywidget's model, or the HTML export's stand-in
 * @property {(name: string) => unknown} get
 * @property {(name: string, value: unknown) => void} set
 * @property {() => void} save_changes
 * @property {(name: string, callback: () => void) => void} on
 * @property {(name: string, callback: () => void) => void} off
 */

/**
 * The panel module, imported from its source text (anywidget sends one module; the viewer
 * draws views with the panel's own classes).
 * @param {string} source
 * @returns {Promise<PanelModule>}
 */
async function importPanel(source) {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  try {
    return /** @type {PanelModule} */ (await import(url));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * Read the model's payload and show it.
 * @param {TrajectoryViewer} viewer
 * @param {Model} model
 */
async function showPayload(viewer, model) {
  const bytes = bytesOf(model.get("payload"));
  const error = String(model.get("error") || "");
  viewer.summary.sessions(/** @type {string[]} */ (model.get("sessions") || []), String(model.get("session") || ""),
    model.get("mode") === "export");
  if (error || !bytes.length) {
    viewer.fail(error || "Loading…");
    return;
  }
  viewer.root.dataset.state = "loading";
  const started = performance.now();
  const payload = /** @type {Payload} */ (JSON.parse(await gunzip(bytes)));
  viewer.load(payload, Number(model.get("seq")) || 0, String(model.get("role") || ""));
  viewer.root.dataset.loadMs = String(Math.round(performance.now() - started));
}

/**
 * anywidget's entry point.
 * @param {{model: Model, el: HTMLElement}} widget
 * @returns {Promise<() => void>} what anywidget calls to tear the viewer down
 */
async function render({ model, el }) {
  const panel = await importPanel(String(model.get("panel_module")));
  const viewer = new TrajectoryViewer(el, panel, {
    moved: (seq) => {
      model.set("seq", seq);
      // Saved at once, every time: ipywidgets echoes each save back, and only a change it
      // has sent is safe from the echo of an earlier one (a delayed save would be undone).
      model.save_changes();
    },
    picked: (role) => {
      model.set("role", role);
      model.save_changes();
    },
    session: (session) => {
      viewer.root.dataset.state = "loading";
      model.set("session", session);
      model.save_changes();
    },
  });
  const reload = () => {
    showPayload(viewer, model).catch((error) => viewer.fail(`The trajectory could not be read: ${error}`));
  };
  const moved = () => {
    const seq = Number(model.get("seq"));
    const index = viewer.payload ? viewer.payload.events.findIndex((event) => event.seq === seq) : -1;
    if (index >= 0 && index !== viewer.index) viewer.go(index, true);
  };
  const picked = () => viewer.pick(String(model.get("role")));
  model.on("change:payload", reload);
  model.on("change:error", reload);
  model.on("change:seq", moved);
  model.on("change:role", picked);
  await showPayload(viewer, model).catch((error) => viewer.fail(`The trajectory could not be read: ${error}`));
  return () => {
    model.off("change:payload", reload);
    model.off("change:error", reload);
    model.off("change:seq", moved);
    model.off("change:role", picked);
  };
}

/**
 * The HTML export's entry point: the same viewer on a stand-in model whose position lives in
 * the page's address (#event=N&member=R), so a reload shows the same event.
 * @param {HTMLElement} el
 * @param {Record<string, unknown>} state  the traits the widget would have
 * @returns {Promise<void>}
 */
export async function standalone(el, state) {
  const hash = new URLSearchParams(location.hash.slice(1));
  /** @type {Map<string, unknown>} */
  const values = new Map(Object.entries({ ...state, mode: "export",
    seq: Number(hash.get("event")) || 0, role: hash.get("member") || "" }));
  /** @type {Model} */
  const model = {
    get: (name) => values.get(name),
    set: (name, value) => {
      values.set(name, value);
    },
    save_changes: () => {
      const place = new URLSearchParams({ event: String(values.get("seq") || ""),
        member: String(values.get("role") || "") });
      history.replaceState(null, "", `#${place}`);
    },
    on: () => {},
    off: () => {},
  };
  await render({ model, el });
}

export default { render };
