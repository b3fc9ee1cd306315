// Co-Gym session panel for anywidget: one ES module, no build step, no static imports.
//
// The panel follows one person seat of a session. It receives updates (what an event changed
// in the seat's view and chat, the pending confirmations, ...) and agent status updates, and
// sends the person's actions. It keeps its own copy of the view and the chat (SeatCopy): an
// update carries only what changed, and a panel that missed one asks for the whole state again.
// Only the transport differs between the two modes:
//   server: the browser opens the session's WebSocket on the Jupyter server itself, so the
//           panel stays live while the kernel is busy;
//   local:  the kernel hosts the session and relays messages through the widget's comm.
// Every view is chosen by a component's render type, never by task. Text from LMs and data is
// only ever set as textContent, or escaped before any formatting. Each action carries an id; a
// refusal (an error frame: too many actions at once, a malformed or oversized message) names it,
// so the panel shows the person what was not applied and why.
// Watch mode (the model's `readonly` trait) follows any member read-only: the same views, every
// control that acts disabled, and no action ever sent (the server refuses them anyway).
// Shared texts (the editor) are edited live: each is a Yjs document, and the panel keeps a
// replica of it (SharedTexts). Yjs comes as the source text of one ES module in the model's
// `yjs_module` trait (js/vendor/yjs.mjs), imported at run time; without it (the trajectory
// viewer, a watcher) the editor shows the text read-only.
//
// The module, top to bottom:
//   wire messages and view state   JSDoc typedefs, checked by tsc (tsc -p js/jsconfig.json)
//   safe rendering                 h(), escapeHtml, renderMarkdown, parseAction, lineDiff
//   content views                  one class per read-only render type (TextView, TableView,
//                                  SearchResultsView, LibraryView, NotebookView,
//                                  ChecklistView; JsonView for any other)
//   shared texts and the editor    SharedTextReplica (one Yjs replica, its batches of the
//                                  person's operations), SharedTexts (the panel's replicas)
//                                  and the EditorView bound to one
//   the plan view                  PlanView (interactive plans: its step rows, the new-step
//                                  form and the side area with a step's output)
//   the kitchen view               KitchenView (the real-time cooking game on a canvas, drawn
//                                  by KitchenPainter; keys, macro buttons, result, replay)
//   panel views                    HeaderView, ErrorBanner, WorkspaceView, AgentStatusView,
//                                  ConfirmationsView, ChatView, ActionFormView, RatingView:
//                                  each owns its part of the DOM and its own state
//   SeatCopy                       the seat's copy of its view and chat, kept from the updates
//   Panel                          builds the layout from the views and routes messages to them
//   transports                     serverTransport, localTransport, loadYjs and the anywidget
//                                  render()

// -- wire messages and view state -----------------------------------------------------------

/**
 * JSON from the wire whose shape the views check at run time (component content, records):
 * unknown, so each view narrows it (typeof, Array.isArray, keyed()) before it reads it.
 * @typedef {unknown} Json
 */

/**
 * A JSON object (or array) read key by key: each value is Json again.
 * @typedef {Record<string, Json>} JsonRecord
 */

/**
 * One component of the seat's view: the workspace shows it in one box.
 * @typedef {object} Component
 * @property {string} name
 * @property {string} render_type  chooses the view: "editor", "library", "notebook", ...
 * @property {string} [title]
 * @property {boolean} [private]  only this seat sees it
 * @property {Json} content
 */

/**
 * @typedef {object} ParamSpec
 * @property {string} name
 * @property {string} type  "string", "integer", "number", "boolean"; any other type is JSON
 * @property {string} [description]
 * @property {boolean} [required]
 */

/**
 * @typedef {object} ActionSpec
 * @property {string} name
 * @property {string} [description]
 * @property {ParamSpec[]} [params]
 * @property {string} [replaces]  the component whose whole text the action replaces
 * @property {{component: string, label: string} | null} [picks]  offered on each item of that
 *   component, with the item's id as its first param
 * @property {string | null} [searches]  the component the action fills with its results: the
 *   panel shows a search box for it there
 * @property {boolean} [internal]  not offered in the task-action form
 */

/**
 * @typedef {object} Member
 * @property {string} role
 * @property {string} kind  "agent" or "person"
 */

/**
 * @typedef {object} SessionContext
 * @property {string} [task]
 * @property {string} [task_description]
 * @property {Member[]} [team]
 * @property {ActionSpec[]} [action_specs]
 */

/**
 * @typedef {object} ChatMessage
 * @property {number} seq
 * @property {number} time  seconds since the epoch
 * @property {string} sender
 * @property {string} text
 * @property {string | null} [to]
 * @property {{component: string, text: string, start: number, end: number} | null} [selection]
 *   the text the sender selected and asks about (cogym_lab.core.messages.TextSelection)
 */

/**
 * @typedef {object} ConfirmationRequest
 * @property {string} request_id
 * @property {string} requester
 * @property {string} pending_action  in the canonical form NAME(param=<JSON>, ...)
 */

/**
 * @typedef {object} SessionEvent
 * @property {string} [type]  "edit" for a person's live edit of a shared text
 * @property {string} [actor]
 * @property {string} [action]
 * @property {string} [status]
 * @property {string} [error]
 * @property {JsonRecord} [info]  e.g. `overlap` (see TextOverlap), `live`
 */

/**
 * Where an edit of a shared text overlapped another member's (an event's `info.overlap`): both
 * versions of those lines were kept, one after the other.
 * @typedef {object} TextOverlap
 * @property {string} component
 * @property {string[]} with  the roles whose edits it overlapped
 * @property {number[][]} lines  [first, last] line numbers (1-based) in the merged text
 */

/**
 * What the env sends the seat on each event (cogym_lab.core.messages.Update): only what the
 * event changed. The panel's SeatCopy applies it to its own copy of the view and the chat.
 * @typedef {object} Update
 * @property {string} [session_id]
 * @property {number} seq  the session's event number
 * @property {number | null} prev_seq  the seq of the previous update sent to this seat
 * @property {string} [recipient]
 * @property {SessionEvent} event
 * @property {boolean} whole  components and messages are the whole view and the whole chat
 * @property {Component[]} components  whole: every component; otherwise those that changed
 * @property {Record<string, number>} versions  every component of the view, in display order,
 *   with the seq at which it last changed for this seat
 * @property {ChatMessage[]} messages  whole: the whole chat; otherwise those sent since prev_seq
 * @property {SessionContext | null} [context]
 * @property {ConfirmationRequest[]} [pending_confirmations]
 * @property {string[]} [paused]  roles of the paused agents
 * @property {boolean} [done]
 * @property {string | null} [end_reason]
 * @property {Record<string, number>} [step_counts]
 * @property {Record<string, number>} [step_limits]
 * @property {number} [started_at]
 * @property {number} [time]
 * @property {Record<string, string> | null} [texts]  a person seat's shared texts: per
 *   component, the base64 Yjs update its replica lacks (whole: the whole document)
 */

/**
 * The seat's whole state after one event, as its SeatCopy makes it from an update: the update's
 * fields with the whole view and the whole chat. What the views read.
 * @typedef {object} Notification
 * @property {number} seq
 * @property {SessionEvent} event
 * @property {boolean} [whole]  made from a whole update: the copy was replaced, not changed
 * @property {{components?: Component[]}} view
 * @property {SessionContext | null} [context]
 * @property {ChatMessage[]} [chat]  the copy's own list: read it, never keep or change it
 * @property {ConfirmationRequest[]} [pending_confirmations]
 * @property {string[]} [paused]  roles of the paused agents
 * @property {boolean} [done]
 * @property {string | null} [end_reason]
 * @property {Record<string, number>} [step_counts]
 * @property {Record<string, number>} [step_limits]
 */

/**
 * An agent's status update (cogym_lab.core.messages.AgentStatus).
 * @typedef {object} AgentStatus
 * @property {"status"} [type]
 * @property {string} role
 * @property {string} [status]  thinking / acting / waiting / paused / failed / finished
 * @property {string | null} [waiting_for]  when waiting: "teammate" (you) or "tick" (news)
 * @property {string} [last_action]
 * @property {number} ts  seconds since the epoch, when the status changed
 */

/**
 * How far slow set-up work got (cogym_lab.core.progress.Progress).
 * @typedef {object} Progress
 * @property {string} task
 * @property {string} phase
 * @property {number} fraction  0..1
 * @property {number} elapsed  seconds
 * @property {number | null} [seconds_left]
 */

/**
 * The session's set-up (cogym_lab.core.messages.SetupStatus): null progress once it is over.
 * @typedef {object} SetupStatus
 * @property {"status"} [type]
 * @property {Progress | null} setup
 * @property {string | null} [error]  why the set-up failed (the session stops there)
 * @property {number} ts
 */

/**
 * One score explained in plain words by the task (cogym_lab.core.env.ScoreReport).
 * @typedef {object} ScoreReport
 * @property {string} name  the score's key, e.g. "performance"
 * @property {number} value
 * @property {string} label  what the score measures
 * @property {string[]} reasons  why it came out so, one finding each
 */

/**
 * A session's graded end (cogym_lab.nodes.session.Grading): the scores with their reports, or
 * why there are none (`note`, plain words) and the raw error of a grader that failed.
 * @typedef {object} Grading
 * @property {boolean} [delivered]
 * @property {string | null} [end_reason]
 * @property {Record<string, number>} [scores]
 * @property {ScoreReport[]} [score_reports]
 * @property {string | null} [note]  says, in plain words, an LM failure that ended the session
 * @property {string | null} [error]
 * @property {object | null} [failure]  that failure as recorded (cogym_lab.lm.failures.LMFailure)
 */

/**
 * Published once the session is graded (cogym_lab.nodes.session.GradingStatus).
 * @typedef {object} GradingStatus
 * @property {"status"} [type]
 * @property {Grading} grading
 * @property {number} ts
 */

/**
 * Something of an agent's notebook cell that was put back
 * (cogym_lab.server.live_notebooks.agent_cells.Restored).
 * @typedef {object} RestoredCell
 * @property {string} cell_id
 * @property {string} what  "cell" (the whole cell) or "outputs"
 * @property {string} label  e.g. "agent cell 2 (total = 12)"
 * @property {string} [found_in]  "save": a save of the notebook would have dropped it; "file":
 *   the file had lost it; "live": a move of the cell in the live notebook lost it
 * @property {number} [ts]
 */

/**
 * How the agent's cells reach the person's notebook, and what was put back
 * (cogym_lab.server.live_notebooks.link.ServerNotebookLink.notice).
 * @typedef {object} NotebookNotice
 * @property {string} [path]
 * @property {boolean} [live]  whether the notebook has a live document (real-time collaboration)
 * @property {string | null} [message]  without one: how the cells are written, in plain words
 * @property {string | null} [summary]  the latest thing put back, in plain words
 * @property {RestoredCell[]} [restored]  the latest things put back, oldest first
 */

/**
 * Published on the status channel by a session in a person's notebook.
 * @typedef {object} NotebookStatus
 * @property {"status"} [type]
 * @property {NotebookNotice} notebook
 * @property {number} ts
 */

/**
 * A refusal: the server (or the kernel) did not apply the action with this id.
 * @typedef {object} ErrorFrame
 * @property {"error"} [type]
 * @property {string} [error]
 * @property {string} [id]
 * @property {string} [code]  e.g. "rate_limited"
 */

/**
 * Whatever a transport delivers: an update, a status update or an error frame.
 * @typedef {object} IncomingMessage
 * @property {string} [type]
 * @property {string} [error]
 * @property {SessionEvent} [event]
 * @property {unknown} [versions]
 */

/**
 * @typedef {object} Action
 * @property {string} name
 * @property {Record<string, unknown>} args
 */

/**
 * What the panel hands a transport for one action.
 * @typedef {object} ActionPayload
 * @property {Action} action
 * @property {string} [base]  for a whole-text replacement: the text the person started from
 * @property {number} [seen_seq]  for a live edit (EDIT_TEXT): the update whose shared text it
 *   was made on
 * @property {string} id
 */

/** @typedef {{base?: string, seen_seq?: number}} ActionExtra  what an action travels with */

/**
 * @typedef {object} Rating
 * @property {string} role
 * @property {number} outcome_rating  1 to 5
 * @property {number} satisfaction  1 to 5
 * @property {string} comment
 * The Likert items (1 to 5, when answered; cogym_lab.records.likert has their statements):
 * @property {number} [useful_outputs]  what the assistant produced helped explore the problem
 * @property {number} [insights]  new insights
 * @property {number} [clear_steps]  it made clear what steps the problem needs
 * @property {number} [understanding]  a better understanding of the possible solutions
 * @property {number} [easy_to_use]  easy to use
 * @property {number} [steerable]  could readily get it to do something helpful
 * @property {number} [fits_workflow]  could become part of how one works
 * @property {number} [artifact]  happy with what was produced
 * @property {number} [next_steps]  sure about what to do next
 * @property {PairwiseChoice} [pairwise]  which outcome is better, when answered (Co-Gym C.4)
 * @property {Side[]} [pairwise_order]  the order the two outcomes were shown in, with it
 */

/** @typedef {"own" | "autonomous"} Side */
/** @typedef {"own" | "autonomous" | "tie"} PairwiseChoice */

/**
 * One of the two outcomes of the pairwise question, as the host offers it.
 * @typedef {object} ShownOutcome
 * @property {Side} side  whose outcome it is (the form does not say)
 * @property {string} label  "A" or "B"
 * @property {string} text
 */

/**
 * The rating form's pairwise question (cogym_lab.runtime.models.PairwiseOffer): the two outcomes
 * in the order to show them, or why there is no question.
 * @typedef {object} PairwiseOffer
 * @property {boolean} available
 * @property {string} [note]  why there is no question, in plain words
 * @property {ShownOutcome[]} [outcomes]
 */

/**
 * @typedef {object} Transport
 * @property {(payload: ActionPayload) => boolean} send  true once the payload left the panel
 * @property {(rating: Rating) => Promise<unknown>} rate
 * @property {() => Promise<unknown>} pairwise  the rating form's pairwise question (a PairwiseOffer)
 * @property {() => void} sync  ask for the seat's whole state again (a whole update answers)
 * @property {() => void} close
 */

/**
 * The widget's synced traits (cogym_lab.widgets.panel.SessionPanel).
 * @typedef {object} WidgetTraits
 * @property {"server" | "local"} mode
 * @property {string} session_id
 * @property {string} role  the person seat the panel acts for (read-only: the member it watches)
 * @property {boolean} [readonly]  watch mode: every control disabled, no action sent
 * @property {string} ws_url  server mode: the seat's WebSocket
 * @property {string} api_url  server mode: the session's REST address
 * @property {string} token  server mode: the Jupyter token, or empty
 * @property {ConnectionState | ""} connection  set by the panel
 * @property {number} last_seq  set by the panel: the last notification shown
 * @property {string} [yjs_module]  the source text of Yjs as one ES module; empty: no live
 *   editing (the editor is read-only)
 * @property {"all" | "chat"} [part]  what the view shows: the whole panel, or only the agents'
 *   status, the confirmations and the chat (the chat beside the notebook, see ChatPlacement)
 * @property {string} [data_notice]  that the task reads the small sample of its data that
 *   comes with cogym_lab, and how to get the full data; empty: it does not
 */

/**
 * The part of anywidget's model the panel uses.
 * @typedef {object} WidgetModel
 * @property {<K extends keyof WidgetTraits>(key: K) => WidgetTraits[K]} get
 * @property {<K extends keyof WidgetTraits>(key: K, value: WidgetTraits[K]) => void} set
 * @property {() => void} save_changes
 * @property {(event: string, listener: (content: unknown) => void) => void} on
 * @property {(event: string, listener: (content: unknown) => void) => void} off
 * @property {(content: Record<string, unknown>) => void} send
 * @property {NotebookWidgets} [widget_manager]  the notebook's widget manager (in JupyterLab)
 */

/**
 * The part of a notebook's widget manager (jupyterlab_widgets) a side chat uses to leave with
 * its notebook, see SideChatOwner.
 * @typedef {object} NotebookWidgets
 * @property {boolean} [isDisposed]  true once the manager itself was disposed
 * @property {{isDisposed: boolean} | null} [context]  a notebook's manager: the notebook's
 *   document, disposed when the notebook is closed (the manager itself may live on)
 * @property {() => Promise<{state: Record<string, {model_name: string,
 *   state: Record<string, unknown>}>}>} get_state  every model it holds, by id
 * @property {(id: string) => Promise<{close: (commClosed: boolean) => Promise<void>}>} get_model
 */

/** @typedef {"connecting" | "open" | "closed"} ConnectionState */

/**
 * The part of Yjs (js/vendor/yjs.mjs, imported at run time by loadYjs) that the shared texts
 * use. Typed here, so that tsc never reads the bundle.
 * @typedef {object} YModule
 * @property {new (options?: {gc?: boolean}) => YDoc} Doc
 * @property {(doc: YDoc, update: Uint8Array, origin?: unknown) => void} applyUpdate
 * @property {(doc: YDoc, stateVector?: Uint8Array) => Uint8Array} encodeStateAsUpdate
 * @property {(doc: YDoc) => Uint8Array} encodeStateVector
 * @property {(update: Uint8Array) => Uint8Array} encodeStateVectorFromUpdate
 * @property {(updates: Uint8Array[]) => Uint8Array} mergeUpdates
 * @property {(type: YText, index: number) => YRelativePosition} createRelativePositionFromTypeIndex
 * @property {(position: YRelativePosition, doc: YDoc) => {index: number} | null}
 *   createAbsolutePositionFromRelativePosition
 */

/**
 * A Yjs document (Y.Doc).
 * @typedef {object} YDoc
 * @property {number} clientID
 * @property {(name: string) => YText} getText
 * @property {(change: () => void, origin?: unknown) => void} transact
 * @property {(event: "update", listener: (update: Uint8Array, origin: unknown) => void) => void} on
 * @property {() => void} destroy
 */

/**
 * A Yjs text (Y.Text): its indices count UTF-16 code units, as JavaScript strings do.
 * @typedef {object} YText
 * @property {number} length
 * @property {(index: number, text: string) => void} insert
 * @property {(index: number, length: number) => void} delete
 * @property {() => string} toString
 */

/** @typedef {object} YRelativePosition  a place in a Y.Text that moves with the text around it */
/** @typedef {(message: unknown) => void} Receive  a transport's way in to the panel */
/** @typedef {(state: ConnectionState) => void} SetConnection */

/**
 * Hands an action to the transport; true once it left the panel.
 * @typedef {(action: Action, extra?: ActionExtra, id?: string) => boolean} SendAction
 */

/**
 * A chat message the person sent that the chat does not show yet.
 * @typedef {object} OutboxItem
 * @property {number} id
 * @property {string} actionId  the id of the action that carries it
 * @property {string} text
 * @property {"pending" | "sent" | "failed"} state
 */

/**
 * What the shared editor (and, as a ViewHost, the other views) need from the panel.
 * @typedef {object} EditorHost
 * @property {(component: string) => ActionSpec | null} replacing  the action that replaces
 *   that component's whole text, if any
 * @property {(component: string) => ActionSpec | null} picking  the action offered on each
 *   item of that component, if any
 * @property {(component: string) => ActionSpec[]} [searching]  the actions that fill that
 *   component with their results (searches), if any
 * @property {() => ActionSpec[]} [searches]  every search action of the task (a person's plan
 *   step searches with them, SEARCH_IN_STEP)
 * @property {() => boolean} done  whether the session has ended
 * @property {SendAction} send
 * @property {string} [role]  the seat the panel acts for (watch mode: the member it follows)
 * @property {boolean} [readonly]  watch mode: nothing acts
 * @property {(component: string) => SharedTextReplica | null} [sharedText]  the panel's replica
 *   of that component's shared text, once the session sent it (never without Yjs)
 * @property {boolean} [liveText]  Yjs is loaded: a shared text becomes editable once it comes
 * @property {(action: string) => boolean} [offers]  whether the session has that action (the
 *   workspace offers "+ New plan" only where NEW_PLAN exists)
 * @property {string} [session]  the session's id: what the plans' folded state is kept under
 */

/**
 * What read-only views need from the panel: the action offered on each item of a component.
 * @typedef {object} ViewHost
 * @property {(component: string) => ActionSpec | null} picking
 * @property {() => ActionSpec[]} [searches]  every search action of the task (EditorHost's)
 * @property {() => boolean} done  whether the session has ended
 * @property {SendAction} send
 * @property {string} [role]  the seat the panel acts for (watch mode: the member it follows)
 * @property {boolean} [readonly]  watch mode: nothing acts
 * @property {string} [session]  the session's id: what the plans' folded state is kept under
 */

/**
 * A view of one component's content.
 * @typedef {object} ComponentView
 * @property {HTMLElement} body
 * @property {(component: Component) => void} update
 */

/**
 * One box of the workspace.
 * @typedef {object} ComponentEntry
 * @property {HTMLElement} box
 * @property {ComponentView} view
 * @property {Component} component  the component it shows: the copy keeps an unchanged one
 * @property {string} json  the content it shows, as JSON, to tell whether it changed
 * @property {string} renderType
 * @property {SearchBar | null} [search]  the search box over it, when actions search into it
 */

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

/** The 5-point agreement scale of the optional statements (Cocoa's study), 1 to 5. */
const AGREEMENT_SCALE = {
  1: "1 - Strongly disagree",
  2: "2 - Disagree",
  3: "3 - Neither agree nor disagree",
  4: "4 - Agree",
  5: "5 - Strongly agree",
};

/** The answers of the pairwise question: the radio's value and its words ("A"/"B" by position). */
const PAIRWISE_ANSWERS = /** @type {const} */ ([
  ["A", "A is better"],
  ["B", "B is better"],
  ["tie", "About the same (a tie)"],
]);

/**
 * The optional statements of the rating form: the rating's field, and the statement. The Cocoa
 * study's nine (cogym_lab.records.likert, worded as the study kit's cocoa design words them).
 */
const COCOA_STATEMENTS = /** @type {const} */ ([
  ["useful_outputs", "What the assistant produced helped me explore the research problem."],
  ["insights", "Using the assistant gave me new insights I can use."],
  ["clear_steps", "The assistant made clear to me what steps this problem needs."],
  ["understanding", "I now understand the possible solutions to this problem better than before."],
  ["easy_to_use", "The assistant was easy to use."],
  ["steerable", "I could readily get the assistant to do something helpful."],
  ["fits_workflow", "I could see this assistant becoming part of how I work."],
  ["artifact", "I am happy with what I produced (the text and my next steps) with the assistant."],
  ["next_steps", "After this session I feel sure about what to do next."],
]);
/** What the form of a session without an interactive plan asks: three of the nine. */
const CORE_FIELDS = ["steerable", "easy_to_use", "useful_outputs"];

/**
 * The statements the rating form asks: all nine when the session has an interactive plan
 * (Cocoa's form), else the three core ones.
 * @param {readonly {render_type: string}[]} components  the seat's view at the end
 */
export function ratingStatements(components) {
  const cocoa = components.some((component) => component.render_type === "plan");
  return COCOA_STATEMENTS.filter(([field]) => cocoa || CORE_FIELDS.includes(field));
}

// -- safe rendering ---------------------------------------------------------------------------

/** @type {Record<string, string>} */
const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * @param {unknown} text
 * @returns {string} the text with the five HTML-special characters escaped
 */
export function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

/**
 * Markdown to HTML for the preview. The text is escaped FIRST; the formatting below only adds
 * tags of its own, so nothing in the text can become an element or an attribute.
 * @param {unknown} text
 * @returns {string} HTML
 */
export function renderMarkdown(text) {
  const lines = escapeHtml(text).split("\n");
  /** @type {string[]} */
  const out = [];
  /** @type {"ul" | "ol" | null} */
  let list = null;
  /** @type {string[]} */
  let paragraph = [];
  /** @type {string[] | null} */
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
    const item = bullet || numbered;
    if (heading) {
      flushParagraph();
      closeList();
      const level = heading[1].length;
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
    } else if (item) {
      flushParagraph();
      const kind = bullet ? "ul" : "ol";
      if (list !== kind) {
        closeList();
        out.push(`<${kind}>`);
        list = kind;
      }
      out.push(`<li>${inline(item[1])}</li>`);
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

/**
 * Inline formatting of already-escaped text.
 * @param {string} escaped
 * @returns {string} HTML
 */
function inline(escaped) {
  return escaped
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^\s()]+)\)/g,
      '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
}

/** @typedef {Node | string | number | boolean | null | undefined} Child */

/**
 * Event listeners for h(), by event name.
 * @typedef {{[E in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[E]) => void}} Listeners
 */

/**
 * An element's attributes for h(): `class`, `testid` (data-testid), `text` (textContent), `on`
 * (event listeners), `dataset`; any other key sets a property (non-string values the element
 * has as a property) or an attribute. undefined, null and false leave a key out.
 * @typedef {{[key: string]: unknown, on?: Listeners, dataset?: Record<string, string>}} Attrs
 */

/**
 * An element with attributes and children. Text goes in as text nodes, never as HTML.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
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
    else if (key === "on") {
      for (const [event, fn] of Object.entries(/** @type {Listeners} */ (value))) {
        node.addEventListener(event, /** @type {EventListener} */ (fn));
      }
    } else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key in node && typeof value !== "string") setProperty(node, key, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/**
 * Set a property of an element by name (e.g. `hidden`, `disabled`, `rows`, `spellcheck`).
 * @param {HTMLElement} node
 * @param {string} key  a property the element has
 * @param {unknown} value
 */
function setProperty(node, key, value) {
  /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (node))[key] = value;
}

let lastId = 0;

/** @returns {string} a number no other element of the page got from here (for id attributes) */
function uniqueId() {
  lastId += 1;
  return String(lastId);
}

/**
 * @param {unknown} text
 * @returns {HTMLDivElement} a line of muted text
 */
function muted(text) {
  return h("div", { class: "cogym-muted", text });
}

/**
 * @param {string} url  an http(s) URL (see safeUrl)
 * @param {string} text
 * @returns {HTMLAnchorElement} a link that opens in a new tab
 */
function link(url, text) {
  return h("a", { href: url, target: "_blank", rel: "noopener noreferrer", text });
}

/**
 * @param {unknown} value
 * @returns {string | null} the value if it is an http(s) URL
 */
function safeUrl(value) {
  return typeof value === "string" && /^https?:\/\//i.test(value) ? value : null;
}

/**
 * @param {unknown} value
 * @returns {string} strings as they are, numbers and booleans as text, anything else as JSON
 */
function asText(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/**
 * A JSON value read key by key, as the views read content. Only a cast: a key of a string or a
 * number reads as undefined, and a key of null or undefined throws, so the component then
 * shows as JSON (see JsonView).
 * @param {Json} value
 * @returns {JsonRecord}
 */
function keyed(value) {
  return /** @type {JsonRecord} */ (value);
}

/**
 * @param {unknown} text
 * @param {number} [limit]
 * @returns {string} the text as text, cut to `limit` characters with an ellipsis
 */
function shorten(text, limit = 160) {
  const value = asText(text);
  return value.length > limit ? value.slice(0, limit - 1) + "…" : value;
}

/** @typedef {(raw: string) => string} DescribeAction */

/**
 * An action in plain words for a person: what its spec says it does, then its arguments, each
 * on one line ("Add an item to the checklist: text “first aid kit”"). Text that is not an
 * action, or an action the session does not know, is shown as it is, on one line.
 * @param {string} raw  the action as the log holds it
 * @param {ActionSpec[]} specs  the session's action specs
 * @returns {string}
 */
export function describeAction(raw, specs) {
  const oneLine = (/** @type {unknown} */ value) => asText(value).replace(/\s*\n\s*/g, " ⏎ ");
  const parsed = parseAction(raw);
  if (!parsed) return describeCutAction(raw, specs) ?? shorten(oneLine(raw), 200);
  const spec = specs.find((candidate) => candidate.name === parsed.name);
  if (!spec && parsed.name === "SEND_TEAMMATE_MESSAGE") { // a message reads as what it says
    return `said: “${shorten(oneLine(parsed.args.message), 100)}”`;
  }
  const pending = parsed.args.pending_action;
  if (!spec && parsed.name === "REQUEST_TEAMMATE_CONFIRM" && typeof pending === "string") {
    return `asks for approval: ${describeAction(pending, specs)}`; // the action it would run
  }
  const what = (spec?.description || parsed.name.toLowerCase().replace(/_/g, " "))
    .replace(/[.\s]+$/, "");
  const args = Object.entries(parsed.args).map(([name, value]) =>
    `${name} “${shorten(oneLine(typeof value === "string" ? value : JSON.stringify(value)), 60)}”`);
  return args.length ? `${what}: ${args.join(", ")}` : what;
}

/**
 * An action cut short (a status carries only its start, ending in "…"), in plain words: a
 * message by what it says so far, any other action by its name. Never the action syntax.
 * @param {string} raw
 * @param {ActionSpec[]} specs
 * @returns {string | null} null when `raw` does not start like an action
 */
function describeCutAction(raw, specs) {
  const cut = /^\s*([A-Z][A-Z0-9_]*)\(([\s\S]*)$/.exec(raw || "");
  if (!cut) return null;
  const said = cut[1] === "SEND_TEAMMATE_MESSAGE"
    ? /message\s*=\s*"((?:[^"\\]|\\.)*)/.exec(cut[2]) : null;
  if (said) {
    const text = said[1].replace(/\\n/g, " ").replace(/\\(.)/g, "$1").replace(/…$/, "");
    const start = shorten(text.replace(/\s+/g, " ").trim(), 100);
    return `said: “${start.endsWith("…") ? start : start + "…"}”`;
  }
  const spec = specs.find((candidate) => candidate.name === cut[1]);
  return `${(spec?.description || cut[1].toLowerCase().replace(/_/g, " ")).replace(/[.\s]+$/, "")}…`;
}

/**
 * Shows an action in plain words; a click shows the raw action, and another the words again.
 * @param {HTMLElement} el
 * @param {string} raw
 * @param {string} plain
 * @param {string} [prefix]  kept in front of either form ("#11 agent: ")
 */
function showAction(el, raw, plain, prefix = "") {
  el.textContent = prefix + plain;
  el.title = "Click for the action as written: " + shorten(raw, 300);
  el.dataset.raw = raw;
  el.dataset.shown = "plain";
  el.onclick = () => {
    const plainShown = el.dataset.shown === "plain";
    el.textContent = prefix + (plainShown ? raw : plain);
    el.dataset.shown = plainShown ? "raw" : "plain";
  };
}

/** @type {WeakMap<HTMLElement, ReturnType<typeof setTimeout>>} */
const FLASH_TIMERS = new WeakMap();

/**
 * The visual cue for a part a notification changed: the class cogym-changed for a moment, and
 * the notification's number in data-changed-seq.
 * @param {HTMLElement} node
 * @param {number | undefined} seq
 */
function flash(node, seq) {
  node.classList.remove("cogym-changed");
  void node.offsetWidth; // restart the animation
  node.classList.add("cogym-changed");
  node.dataset.changedSeq = String(seq ?? "");
  clearTimeout(FLASH_TIMERS.get(node));
  FLASH_TIMERS.set(node, setTimeout(() => node.classList.remove("cogym-changed"), 1700));
}

// -- the canonical action form NAME(param=<JSON>, ...), for previews ---------------------------

/**
 * @param {string} text
 * @returns {Action | null} the action, or null if the text is not in the canonical form
 */
export function parseAction(text) {
  const head = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(/.exec(text || "");
  if (!head) return null;
  /** @type {Record<string, unknown>} */
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

/** @typedef {["same" | "add" | "del", string]} DiffLine */

/**
 * Line diff (longest common subsequence) for previews of whole-text replacements.
 * @param {unknown} before
 * @param {unknown} after
 * @param {number} [limit]  past this many lines, every line of `after` shows as added
 * @returns {DiffLine[]}
 */
export function lineDiff(before, after, limit = 400) {
  const a = String(before ?? "").split("\n");
  const b = String(after ?? "").split("\n");
  if (a.length > limit || b.length > limit) return b.map((line) => ["add", line]);
  const table = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j]
        ? table[i + 1][j + 1] + 1
        : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  /** @type {DiffLine[]} */
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

// -- content blocks shared by the views -------------------------------------------------------

/**
 * @param {JsonRecord} record
 * @returns {[string | null, string]} the key that titles a record, and its title
 */
function recordTitle(record) {
  for (const key of ["title", "name", "text", "label", "id"]) {
    if (record[key] !== undefined && record[key] !== null) return [key, asText(record[key])];
  }
  return [null, ""];
}

/**
 * A list of records: each titled (a link only for an http(s) url), then its other fields.
 * @param {Json} items
 * @returns {HTMLElement}
 */
function recordList(items) {
  if (!Array.isArray(items) || items.length === 0) return muted("Nothing yet.");
  return h("ul", { class: "cogym-records" }, items.map((item) => recordItem(item)));
}

/**
 * @param {Json} item
 * @returns {HTMLLIElement}
 */
function recordItem(item) {
  if (item === null || typeof item !== "object") {
    return h("li", { testid: "record", text: asText(item) });
  }
  const record = keyed(item);
  const [titleKey, title] = recordTitle(record);
  const url = safeUrl(record.url);
  const fields = Object.entries(record).filter(([key]) => key !== titleKey && key !== "url");
  return h("li", { testid: "record" },
    url ? link(url, title) : h("strong", { text: title }),
    h("div", {}, fields.map(([key, value]) =>
      h("span", { class: "cogym-field" }, `${key}: ${shorten(value, 300)}`))));
}

/**
 * A table from `{title, columns, rows, note}` or from a list of records (or of rows).
 * @param {Json} content
 * @returns {HTMLDivElement}
 */
function tableBlock(content) {
  /** @type {string[]} */
  let columns = [];
  /** @type {Json[]} */
  let rows = [];
  /** @type {HTMLElement[]} */
  const parts = [];
  if (content && !Array.isArray(content) && typeof content === "object") {
    const table = keyed(content);
    if (table.title) parts.push(muted(table.title));
    rows = Array.isArray(table.rows) ? table.rows : [];
    columns = Array.isArray(table.columns) ? table.columns.map(asText) : [];
  } else if (Array.isArray(content)) {
    rows = content;
  }
  if (!columns.length) columns = recordKeys(rows);
  parts.push(rows.length ? tableOf(columns, rows) : muted("No rows."));
  const note = content ? keyed(content).note : undefined;
  if (note) parts.push(muted(note));
  return h("div", {}, parts);
}

/**
 * @param {Json[]} rows
 * @returns {string[]} every key of the rows that are records, in order of appearance
 */
function recordKeys(rows) {
  /** @type {Set<string>} */
  const seen = new Set();
  for (const row of rows) {
    if (row && typeof row === "object" && !Array.isArray(row)) {
      Object.keys(row).forEach((k) => seen.add(k));
    }
  }
  return [...seen];
}

/**
 * @param {string[]} columns  none: one column of whole rows
 * @param {Json[]} rows  records, arrays, or single values
 * @returns {HTMLDivElement}
 */
function tableOf(columns, rows) {
  /** @type {(row: Json, column: string | null, index: number) => Json} */
  const cell = (row, column, index) => Array.isArray(row)
    ? row[index]
    : (row && typeof row === "object" ? keyed(row)[/** @type {string} */ (column)] : row);
  /** @type {(string | null)[]} */
  const shown = columns.length ? columns : [null];
  const head = columns.length
    ? h("thead", {}, h("tr", {}, columns.map((c) => h("th", { text: c }))))
    : null;
  return h("div", { class: "cogym-scroll" }, h("table", { class: "cogym-table" }, head,
    h("tbody", {}, rows.map((row) => h("tr", {}, shown.map((column, index) =>
      h("td", { text: shorten(cell(row, column, index), 500) })))))));
}

/**
 * @param {Json} content
 * @returns {HTMLElement} a string as preformatted text, an object as key/value lines
 */
function textBlock(content) {
  if (typeof content === "string") {
    return h("pre", { class: "cogym-pre cogym-scroll", text: content });
  }
  if (content && typeof content === "object" && !Array.isArray(content)) {
    return h("div", {}, Object.entries(content).map(([key, value]) => h("div", {},
      h("span", { class: "cogym-field", text: key }), h("span", { text: shorten(value, 500) }))));
  }
  return jsonBlock(content);
}

/**
 * @param {Json} content
 * @returns {HTMLPreElement} the content as indented JSON
 */
function jsonBlock(content) {
  return h("pre", { class: "cogym-pre cogym-scroll", text: JSON.stringify(content, null, 2) });
}

// -- content views: one class per read-only render type ---------------------------------------

/**
 * A read-only view of one component's content; it shows it as JSON, which is the view of any
 * render type without one of its own. Subclasses override render(). Content of a shape a view
 * does not expect still shows, as JSON.
 * @implements {ComponentView}
 */
class JsonView {
  /**
   * @param {Component} component
   * @param {ViewHost | null} [host]  for views that offer actions on their items
   */
  constructor(component, host = null) {
    this.name = component.name;
    this.host = host;
    this.body = h("div");
    this.update(component);
  }

  /** @param {Component} component */
  update(component) {
    let content;
    try {
      content = this.render(component.content);
    } catch (error) {
      content = jsonBlock(component.content); // an unexpected shape still shows as JSON
    }
    this.body.replaceChildren(content);
  }

  /**
   * @param {Json} content
   * @returns {HTMLElement}
   */
  render(content) {
    return jsonBlock(content);
  }
}

/** `text`: a string as preformatted text; an object as key/value lines. */
class TextView extends JsonView {
  /** @param {Json} content */
  render(content) {
    return textBlock(content);
  }
}

/** `table`: a table from `{title, columns, rows, note}` or a list of records. */
class TableView extends JsonView {
  /** @param {Json} content */
  render(content) {
    return tableBlock(content);
  }
}

/**
 * `search_results`: a list of results, or a table when the content is `{columns, rows}`. When
 * an action picks items of this component ("Add to library"), each result with an id gets its
 * button.
 */
class SearchResultsView extends JsonView {
  /** @param {Json} content */
  render(content) {
    const isTable = content && typeof content === "object" && !Array.isArray(content)
      && Array.isArray(keyed(content).rows);
    if (isTable) return tableBlock(content);
    const list = recordList(content);
    const spec = this.host ? this.host.picking(this.name) : null;
    if (!spec || !Array.isArray(content)) return list;
    const param = (spec.params || [])[0];
    list.querySelectorAll(":scope > li").forEach((li, index) => {
      const item = content[index];
      const id = item && typeof item === "object" ? keyed(item).id : undefined;
      if (!param || (typeof id !== "string" && typeof id !== "number")) return;
      const button = h("button", { class: "cogym-pick", testid: "item-pick",
        dataset: { action: spec.name, item: String(id) }, text: spec.picks?.label || spec.name,
        on: { click: () => {
          button.disabled = true; // one click, one action: the result comes back as a change
          /** @type {ViewHost} */ (this.host).send({ name: spec.name,
            args: { [param.name]: String(id) } });
        } } });
      button.disabled = /** @type {ViewHost} */ (this.host).done();
      li.append(button);
    });
    return list;
  }
}

/** `library`: numbered papers with authors, year, id and note. */
class LibraryView extends JsonView {
  /** @param {Json} entries */
  render(entries) {
    if (!Array.isArray(entries) || entries.length === 0) return muted("The library is empty.");
    return h("ol", { class: "cogym-records" },
      entries.map((entry, index) => this.entry(entry, index)));
  }

  /**
   * @param {Json} entry  a record, or a bare title
   * @param {number} index
   * @returns {HTMLLIElement}
   */
  entry(entry, index) {
    /** @type {JsonRecord} */
    const record = entry && typeof entry === "object" ? keyed(entry) : { title: entry };
    const number = record.number ?? index + 1;
    const url = safeUrl(record.url);
    const title = asText(record.title);
    return h("li", { testid: "library-entry" },
      h("strong", { text: `[${number}] ` }),
      url ? link(url, title) : h("span", { text: title }),
      muted([authorList(record.authors), record.year, record.id].filter(Boolean).join(" · ")),
      record.note ? h("div", { text: `Note: ${record.note}` }) : null);
  }
}

/**
 * @param {Json} authors
 * @returns {string} up to three names, then "et al."
 */
function authorList(authors) {
  if (!Array.isArray(authors)) return asText(authors);
  return authors.slice(0, 3).join(", ") + (authors.length > 3 ? " et al." : "");
}

/** `notebook`: cells with source, outputs and errors, then the cells still running. */
class NotebookView extends JsonView {
  /**
   * Re-rendered on every change: the view follows the newest cell (where plots and errors
   * land) when cells were added or the person was already at the bottom; otherwise it keeps
   * their place.
   * @param {Component} component
   */
  update(component) {
    const before = this.body.querySelector(".cogym-scroll");
    const count = this.body.querySelectorAll("[data-testid=notebook-cell]").length;
    const atBottom = !before || before.scrollTop + before.clientHeight >= before.scrollHeight - 8;
    const top = before ? before.scrollTop : 0;
    super.update(component);
    const after = /** @type {HTMLElement | null} */ (this.body.querySelector(".cogym-scroll"));
    if (!after) return;
    const grew = this.body.querySelectorAll("[data-testid=notebook-cell]").length > count;
    const follow = grew || atBottom;
    // Laid out only once it is in the page: scroll on the next frame.
    requestAnimationFrame(() => { after.scrollTop = follow ? after.scrollHeight : top; });
    after.dataset.following = String(follow);
  }

  /** @param {Json} content */
  render(content) {
    const notebook = keyed(content);
    const cells = Array.isArray(notebook?.cells) ? notebook.cells : [];
    const running = content && typeof notebook.running === "object" && notebook.running
      ? notebook.running
      : {};
    /** @type {HTMLDivElement[]} */
    const parts = cells.map((cell, index) => this.cell(cell, index));
    for (const [role, code] of Object.entries(running)) parts.push(this.running(role, code));
    if (!parts.length) return muted("No cells yet.");
    return h("div", { class: "cogym-scroll" }, parts);
  }

  /**
   * @param {Json} content  a cell's record (a null cell throws: the notebook shows as JSON)
   * @param {number} index
   * @returns {HTMLDivElement}
   */
  cell(content, index) {
    const cell = keyed(content);
    const count = cell.execution_count ?? cell.index ?? index + 1;
    const dataset = { status: asText(cell.status), ranBy: asText(cell.ran_by) };
    const outputs = Array.isArray(cell.outputs) ? cell.outputs : [];
    return h("div", { class: "cogym-cell", testid: "notebook-cell", dataset },
      muted(`In [${count}] · ${cell.ran_by ?? "?"} · ${cell.status ?? ""}`),
      h("pre", { class: "cogym-pre cogym-cell-source", text: asText(cell.source) }),
      outputs.map((output) => this.output(output)),
      cell.error ? h("div", { class: "cogym-error", text: asText(cell.error) }) : null,
      cell.truncated ? muted("(output truncated)") : null);
  }

  /**
   * @param {Json} output  text, a PNG as base64, or HTML (shown as text)
   * @returns {HTMLElement}
   */
  output(output) {
    if (!output || typeof output !== "object") {
      return h("pre", { class: "cogym-pre", text: asText(output) });
    }
    const { png, html, traceback, text } = keyed(output);
    if (typeof png === "string" && /^[A-Za-z0-9+/=\s]+$/.test(png)) {
      const src = `data:image/png;base64,${png.replace(/\s/g, "")}`;
      return h("img", { src, alt: "cell output" });
    }
    const shown = html ? "(HTML output: shown as text)\n" + html : "";
    return h("pre", { class: "cogym-pre", text: traceback || text || shown });
  }

  /**
   * @param {string} role
   * @param {Json} code
   * @returns {HTMLDivElement} a cell that role is running now
   */
  running(role, code) {
    return h("div", { class: "cogym-cell", testid: "notebook-running" },
      muted(`${role} is running…`),
      h("pre", { class: "cogym-pre cogym-cell-source", text: asText(code) }));
  }
}

/** `checklist`: items with ☑/☐ and who added them. */
class ChecklistView extends JsonView {
  /** @param {Json} items */
  render(items) {
    if (!Array.isArray(items) || items.length === 0) return muted("The list is empty.");
    return h("ul", { class: "cogym-records" }, items.map((item) => this.item(item)));
  }

  /**
   * @param {Json} item  a record, or a bare text
   * @returns {HTMLLIElement}
   */
  item(item) {
    /** @type {JsonRecord} */
    const record = item && typeof item === "object" ? keyed(item) : { text: item };
    const done = Boolean(record.done ?? record.checked);
    const [, title] = recordTitle(record);
    const dataset = { done: String(done) };
    return h("li", { class: "cogym-check", testid: "checklist-item", dataset },
      h("span", { text: done ? "☑ " : "☐ " }),
      h("span", { class: "cogym-check-text", text: title }),
      record.added_by ? h("span", { class: "cogym-muted", text: `  (${record.added_by})` }) : null);
  }
}

/** The read-only view of each render type; the editor and the plan act: see EditorView, PlanView. */
const CONTENT_VIEWS = {
  text: TextView,
  search_results: SearchResultsView,
  library: LibraryView,
  notebook: NotebookView,
  table: TableView,
  checklist: ChecklistView,
};

/**
 * @param {string} renderType
 * @returns {typeof JsonView} the view class of a read-only render type; JsonView for others
 */
function contentViewFor(renderType) {
  return Object.hasOwn(CONTENT_VIEWS, renderType)
    ? CONTENT_VIEWS[/** @type {keyof typeof CONTENT_VIEWS} */ (renderType)]
    : JsonView;
}

// -- shared texts: Yjs replicas, and the editor bound to one ------------------------------------

/** The action a live edit travels as (cogym_lab.core.collaboration.EDIT_TEXT). */
const EDIT_TEXT = "EDIT_TEXT";
/** The name of the Y.Text in every shared text's document (cogym_lab.core.shared_text.ROOT). */
const TEXT_ROOT = "text";
/** Origins of a replica's transactions: the person's typing, and what the session sent. */
const TYPED = Symbol("typed here");
const FROM_SESSION = Symbol("from the session");
/** A batch of typing leaves this long after the typing pauses (ms) ... */
const EDIT_PAUSE_MS = 300;
/** ... or this long after its first change, while the typing goes on ... */
const EDIT_MAX_WAIT_MS = 1000;
/** ... and never sooner than this after the batch before it (the server limits a socket's rate). */
const EDIT_GAP_MS = 500;
/** A batch refused for the rate is sent again this long after (ms). */
const EDIT_RETRY_MS = 1000;
/** A replica that finds itself apart from the session's text asks for a sync at most this often. */
const RESYNC_MS = 5000;
/** A batch the session has not answered this long after it was sent (ms) is taken as lost. */
const LOST_MS = 4000;
/** The words of a refusal whose cure is a sync (cogym_lab.core.shared_text.TextEditError). */
const NEEDS_SYNC = "builds on text the session does not have";

/**
 * @param {Uint8Array} bytes
 * @returns {string}
 */
function toBase64(bytes) {
  let binary = "";
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  }
  return btoa(binary);
}

/**
 * @param {string} text
 * @returns {Uint8Array}  throws for text that is not base64
 */
function fromBase64(text) {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

/**
 * @typedef {object} TextChange  one span of a text replaced
 * @property {number} index  where it starts
 * @property {number} remove  how many code units it removes there
 * @property {string} insert  what it puts in their place
 */

/**
 * The one change that turns `before` into `after`: their common start and end are kept, what
 * lies between is replaced. Indices count UTF-16 code units, as Y.Text's do in JavaScript; a
 * pair of surrogates (an emoji, say) is never split.
 * @param {string} before
 * @param {string} after
 * @returns {TextChange | null}  null when the texts are equal
 */
export function textChange(before, after) {
  if (before === after) return null;
  const shortest = Math.min(before.length, after.length);
  let start = 0;
  while (start < shortest && before.charCodeAt(start) === after.charCodeAt(start)) start += 1;
  if (start > 0 && isHighSurrogate(before.charCodeAt(start - 1))) start -= 1;
  let end = 0;
  while (end < shortest - start
    && before.charCodeAt(before.length - 1 - end) === after.charCodeAt(after.length - 1 - end)) {
    end += 1;
  }
  if (end > 0 && isLowSurrogate(before.charCodeAt(before.length - end))) end -= 1;
  return { index: start, remove: before.length - start - end,
    insert: after.slice(start, after.length - end) };
}

/** @param {number} code @returns {boolean} */
function isHighSurrogate(code) {
  return code >= 0xd800 && code <= 0xdbff;
}

/** @param {number} code @returns {boolean} */
function isLowSurrogate(code) {
  return code >= 0xdc00 && code <= 0xdfff;
}

/**
 * Where `change` (made on `base`) lands once `theirs` (also made on `base`) is applied first.
 * Used only when the session's changes came while the person was composing (an input method):
 * otherwise the replica always holds what the textarea shows.
 * @param {TextChange} change
 * @param {TextChange} theirs
 * @returns {TextChange}
 */
function rebase(change, theirs) {
  const theirEnd = theirs.index + theirs.remove;
  if (change.index >= theirEnd) {
    return { ...change, index: change.index + theirs.insert.length - theirs.remove };
  }
  if (change.index + change.remove <= theirs.index) return change;
  // The same span: their text stays whole, the person's goes right after it.
  return { index: theirs.index + theirs.insert.length, remove: 0, insert: change.insert };
}

/**
 * What a replica needs from the panel.
 * @typedef {object} ReplicaHost
 * @property {SendAction} send
 * @property {() => boolean} online  whether an action sent now reaches the session
 * @property {() => void} sync  ask for the seat's whole state again (a whole update answers)
 */

/**
 * One batch of the person's operations on a shared text.
 * @typedef {object} EditBatch
 * @property {number} number  batches are numbered in the order they were made
 * @property {Uint8Array} update  the replica's own operations (a Yjs update)
 * @property {number | null} seenSeq  the update whose text they were made on
 * @property {number} [sentAt]  when it was last sent (Date.now())
 */

/**
 * The editor bound to a replica: told around each change that came from the session, and
 * whenever the replica's state (sending, sent, offline) may have changed.
 * @typedef {object} ReplicaView
 * @property {() => void} beforeRemote  (take the textarea's text in; note the caret)
 * @property {() => void} afterRemote  (show the new text; put the caret back where it was)
 * @property {() => void} stateChanged
 */

/**
 * The panel's replica of one shared text: a Yjs document with one Y.Text, as the session's is
 * (cogym_lab.core.shared_text). What the session sends is applied to it; what the person types
 * is applied to it as the replica's own operations, which leave in batches (EDIT_TEXT actions)
 * a moment after the typing pauses, each with the seq of the update whose text it was made on
 * (`seen_seq`). Before an update from the session is applied, the typing so far leaves first,
 * so that a batch is only ever made on one version of the text. A batch refused for the rate
 * is sent again; one that builds on text the session lacks asks for a sync; after a whole
 * update, whatever the replica has that the session lacks is sent again, so that nothing typed
 * is lost when the connection drops.
 */
export class SharedTextReplica {
  /**
   * @param {YModule} Y
   * @param {string} name  the component
   * @param {ReplicaHost} host
   */
  constructor(Y, name, host) {
    this.Y = Y;
    this.name = name;
    this.host = host;
    // Deleted text is kept: the session may insert next to text deleted meanwhile, and Yjs
    // would drop an insertion next to text it had collected.
    this.doc = new Y.Doc({ gc: false });
    this.text = this.doc.getText(TEXT_ROOT);
    /** @type {number | null} the seq of the last update whose part of this text was applied */
    this.seenSeq = null;
    /** @type {Uint8Array[]} the person's operations not sent yet (the batch being made) */
    this.pending = [];
    /** @type {number | null} the seq that batch was made on */
    this.pendingSeq = null;
    this.pendingSince = 0;
    this.lastSent = -Infinity;
    this.made = 0; // batches made so far
    /** @type {EditBatch[]} batches made, to send (in order) */
    this.queue = [];
    /** @type {Map<string, EditBatch>} batches sent, by action id, until the session answers */
    this.inFlight = new Map();
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    /** @type {ReturnType<typeof setTimeout> | null} the queue waits for it (rate limit) */
    this.retry = null;
    /** @type {ReturnType<typeof setTimeout> | null} looks for batches never answered */
    this.lost = null;
    /** @type {ReplicaView | null} */
    this.view = null;
    this.news = false; // whether the update being applied changed the document
    this.resynced = -Infinity; // when the replica last asked for a sync (see confirm)
    /** @type {string | null} why the session refused the last batch, until one is taken */
    this.refusal = null;
    this.doc.on("update", (update, origin) => {
      if (origin === TYPED) this.typed(update);
      else if (origin === FROM_SESSION) this.news = true;
    });
  }

  /** Stop the replica's timers (the panel is gone). */
  close() {
    for (const timer of [this.timer, this.retry, this.lost]) {
      if (timer !== null) clearTimeout(timer);
    }
    this.timer = this.retry = this.lost = null;
  }

  /** @returns {boolean} whether some of the person's typing has not reached the session yet */
  get busy() {
    return this.pending.length > 0 || this.queue.length > 0 || this.inFlight.size > 0;
  }

  /**
   * The person's change, applied as the replica's own operations.
   * @param {TextChange} change
   */
  edit(change) {
    this.doc.transact(() => {
      if (change.remove) this.text.delete(change.index, change.remove);
      if (change.insert) this.text.insert(change.index, change.insert);
    }, TYPED);
  }

  /** @param {Uint8Array} update  a transaction of the person's */
  typed(update) {
    if (!this.pending.length) {
      this.pendingSeq = this.seenSeq;
      this.pendingSince = Date.now();
    }
    this.pending.push(update);
    if (this.timer !== null) clearTimeout(this.timer);
    const now = Date.now();
    const wait = Math.max(0, Math.min(EDIT_PAUSE_MS, this.pendingSince + EDIT_MAX_WAIT_MS - now),
      this.lastSent + EDIT_GAP_MS - now);
    this.timer = setTimeout(() => this.flush(), wait);
    this.view?.stateChanged();
  }

  /** The batch being made is complete: send it (and any before it) now, if online. */
  flush() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length) {
      this.made += 1;
      this.queue.push({ number: this.made, update: this.Y.mergeUpdates(this.pending),
        seenSeq: this.pendingSeq });
      this.pending = [];
    }
    this.drain();
  }

  /** Send the queued batches in order, unless a refused one waits for its retry or offline. */
  drain() {
    if (this.retry === null && this.host.online()) {
      for (const batch of this.queue.splice(0)) this.transmit(batch);
    }
    this.view?.stateChanged();
  }

  /** @param {EditBatch} batch */
  transmit(batch) {
    const id = nextActionId();
    this.inFlight.set(id, batch);
    this.lastSent = batch.sentAt = Date.now();
    if (this.lost === null) this.lost = setTimeout(() => this.findLost(), LOST_MS);
    /** @type {ActionExtra} */
    const extra = batch.seenSeq === null ? {} : { seen_seq: batch.seenSeq };
    this.host.send({ name: EDIT_TEXT, args: { component: this.name, update: toBase64(batch.update),
      client: this.doc.clientID } }, extra, id);
  }

  /**
   * What the session sent for this text. If it changes the text, the typing so far leaves at
   * once, as made on the text before it (the same batch, and sent in the same order, as if it
   * had left just before the update was applied), and later typing makes a new batch. An update
   * that brings nothing new (the person's own operations, sent back) leaves the batch be.
   * @param {Uint8Array} update  a Yjs update (a whole update: the whole document)
   * @param {number} seq  the update frame's
   * @param {boolean} whole
   */
  receive(update, seq, whole) {
    this.view?.beforeRemote(); // the textarea's text into the replica first
    this.news = false;
    this.Y.applyUpdate(this.doc, update, FROM_SESSION);
    this.seenSeq = whole || this.seenSeq === null ? seq : Math.max(this.seenSeq, seq);
    if (whole) this.resend(update, seq);
    else if (this.news && this.pending.length) this.flush();
    this.view?.afterRemote();
    this.view?.stateChanged();
  }

  /**
   * After a whole update: send what the replica has and the session lacks, as one batch made
   * on that update: the typing not sent yet, batches refused, and any lost. Batches still in
   * flight (sent on this connection) are not sent again: the session answers them.
   * @param {Uint8Array} state  the session's whole document
   * @param {number} seq
   */
  resend(state, seq) {
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.retry !== null) clearTimeout(this.retry);
    this.timer = this.retry = null;
    this.pending = [];
    this.queue = [];
    const sent = [...this.inFlight.values()].map((batch) => batch.update);
    const known = sent.length ? this.Y.mergeUpdates([state, ...sent]) : state;
    const missing = this.Y.encodeStateAsUpdate(this.doc, this.Y.encodeStateVectorFromUpdate(known));
    if (!this.changes(known, missing)) return;
    this.made += 1;
    const batch = { number: this.made, update: missing, seenSeq: seq };
    if (this.host.online()) this.transmit(batch);
    else this.queue.push(batch);
  }

  /**
   * Whether `update` changes the document `state` holds. (An update of a whole replica always
   * carries every deletion it knows of, so its size says nothing.)
   * @param {Uint8Array} state
   * @param {Uint8Array} update
   * @returns {boolean}
   */
  changes(state, update) {
    const probe = new this.Y.Doc({ gc: false });
    try {
      this.Y.applyUpdate(probe, state);
      const text = probe.getText(TEXT_ROOT);
      const before = [text.toString(), toBase64(this.Y.encodeStateVector(probe))];
      this.Y.applyUpdate(probe, update);
      return text.toString() !== before[0] || toBase64(this.Y.encodeStateVector(probe)) !== before[1];
    } finally {
      probe.destroy();
    }
  }

  /**
   * Batches in flight that the session never answered (sent on a connection that then broke
   * without closing, say): taken as lost, and a sync makes the replica send them again.
   */
  findLost() {
    this.lost = null;
    const now = Date.now();
    const waiting = [...this.inFlight.values()].map((batch) => batch.sentAt || now);
    if (!waiting.length) return;
    const oldest = Math.min(...waiting);
    if (now - oldest < LOST_MS) {
      this.lost = setTimeout(() => this.findLost(), oldest + LOST_MS - now);
      return;
    }
    this.inFlight.clear();
    this.resynced = now;
    this.host.sync(); // its whole update makes the replica send what the session lacks
    this.view?.stateChanged();
  }

  /** The session applied the oldest batch in flight (an `edit` event of the person's). */
  answered() {
    const oldest = this.inFlight.keys().next();
    if (!oldest.done) this.inFlight.delete(oldest.value);
    this.refusal = null;
    this.view?.stateChanged();
  }

  /**
   * The session's text as an update says (the component's content), checked against the
   * replica's once nothing is left to send. The same: every batch has arrived, whether or not
   * its answer did. Not the same with nothing in flight: the session lacks some of the
   * replica's operations (one got lost, or the session kept one it could not place yet), so
   * the replica asks for a sync, whose whole update makes it send what the session lacks.
   * @param {string} text
   */
  confirm(text) {
    if (this.pending.length || this.queue.length) return;
    if (text === this.text.toString()) {
      if (this.inFlight.size || this.refusal !== null) {
        this.inFlight.clear();
        this.refusal = null;
        this.view?.stateChanged();
      }
    } else if (!this.inFlight.size && this.refusal === null && this.host.online()
        && Date.now() - this.resynced > RESYNC_MS) {
      this.resynced = Date.now();
      this.host.sync();
    }
  }

  /**
   * A refusal of one of this replica's batches, by the server (an error frame, which names it)
   * or by the session (an error event: the oldest in flight). True when the replica takes care
   * of it: a batch refused for the rate, or built on one that was, goes again in a moment; one
   * built on text the session lacks asks for a sync, whose whole update makes the replica send
   * what the session lacks. False when the person should be told (the state line says it).
   * @param {ErrorFrame} frame  an error event's `error`, for the session's refusal
   * @param {string | undefined} id  the batch's action id (the session's: the oldest in flight)
   * @returns {boolean}
   */
  refused(frame, id = frame.id) {
    const batch = id === undefined ? undefined : this.inFlight.get(id);
    if (!batch || id === undefined) return false;
    this.inFlight.delete(id);
    const needsSync = (frame.error || "").includes(NEEDS_SYNC);
    const after = needsSync && this.queue.some((queued) => queued.number < batch.number);
    if (frame.code === "rate_limited" || after) {
      this.queue.push(batch);
      this.queue.sort((a, b) => a.number - b.number);
      if (this.retry === null) {
        this.retry = setTimeout(() => {
          this.retry = null;
          this.drain();
        }, EDIT_RETRY_MS);
      }
    } else if (needsSync) {
      this.host.sync();
    } else {
      this.refusal = frame.error || "refused";
    }
    this.view?.stateChanged();
    return frame.code === "rate_limited" || needsSync;
  }
}

/**
 * The panel's replicas of the session's shared texts, one per component, made as the session
 * first sends each (a person seat's updates carry `texts`).
 */
export class SharedTexts {
  /**
   * @param {YModule} Y
   * @param {ReplicaHost} host
   * @param {string} role  the person seat: its own `edit` events answer its batches
   */
  constructor(Y, host, role) {
    this.Y = Y;
    this.host = host;
    this.role = role;
    /** @type {Map<string, SharedTextReplica>} */
    this.replicas = new Map();
  }

  /**
   * @param {string} name  a component
   * @returns {SharedTextReplica | null}
   */
  get(name) {
    return this.replicas.get(name) || null;
  }

  /**
   * An update from the session: each text it carries goes to its replica (before the copy
   * shows the update, so that the editor shows the text it brought).
   * @param {Update} update
   */
  receive(update) {
    const texts = update.texts && typeof update.texts === "object" ? update.texts : {};
    for (const [name, data] of Object.entries(texts)) {
      if (typeof data !== "string" || !data) continue;
      let replica = this.replicas.get(name);
      if (!replica) {
        replica = new SharedTextReplica(this.Y, name, this.host);
        this.replicas.set(name, replica);
      }
      try {
        replica.receive(fromBase64(data), update.seq, Boolean(update.whole));
      } catch (error) {
        console.warn(`cogym: the shared text ${name} of update ${update.seq} was not applied`, error);
      }
    }
    const event = update.event || {};
    if (event.type === "edit" && event.actor === this.role && event.status !== "error") {
      this.replicaOf(event)?.answered();
    }
  }

  /**
   * @param {SessionEvent} event  an edit of the person's
   * @returns {SharedTextReplica | null}  the replica it answers
   */
  replicaOf(event) {
    const info = event.info && typeof event.info === "object" ? event.info : {};
    const parsed = event.action ? parseAction(event.action) : null;
    const named = /"component":\s*"((?:[^"\\]|\\.)*)"/.exec(event.action || ""); // as JSON
    const name = typeof info.component === "string" ? info.component
      : typeof parsed?.args.component === "string" ? parsed.args.component
        : named ? named[1] : null;
    const replica = name !== null ? this.get(name) : null;
    return replica || [...this.replicas.values()].find((each) => each.inFlight.size) || null;
  }

  /**
   * @param {ErrorFrame} frame
   * @returns {boolean}  whether a replica took care of the refusal (see SharedTextReplica.refused)
   */
  refused(frame) {
    if (frame.id === undefined) return false; // no action named: not a live edit's
    return [...this.replicas.values()].some((replica) => replica.refused(frame));
  }

  /**
   * An error event of the person's: when it is a live edit, its replica's refusal (see
   * SharedTextReplica.refused). True when the person need not be told.
   * @param {SessionEvent} event
   * @returns {boolean}
   */
  failed(event) {
    const action = event.action || "";
    if (!action.startsWith(`${EDIT_TEXT}(`) && !action.includes(`"${EDIT_TEXT}"`)) return false;
    const replica = this.replicaOf(event);
    const oldest = replica?.inFlight.keys().next().value;
    return replica ? replica.refused({ error: event.error }, oldest) : false;
  }

  /** Send every replica's typing now (leaving the page). */
  flush() {
    for (const replica of this.replicas.values()) replica.flush();
  }

  /** The panel is torn down: its replicas' timers stop. */
  close() {
    for (const replica of this.replicas.values()) replica.close();
  }

  /**
   * The connection changed. Closed: what was in flight may be lost (the whole update that
   * comes when it opens again says what the session has). Open again: the batches made
   * meanwhile leave, each with the version it was made on.
   */
  connectionChanged() {
    const online = this.host.online();
    for (const replica of this.replicas.values()) {
      if (!online) replica.inFlight.clear();
      replica.drain();
    }
  }
}

/**
 * What an overlap was, in plain words, for the person at `role`: null when it is none of theirs.
 * @param {Json} raw  an event's `info.overlap` (see TextOverlap)
 * @param {string} actor  whose edit it was
 * @param {string} role
 * @returns {{component: string, words: string} | null}
 */
export function overlapNotice(raw, actor, role) {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
  const overlap = keyed(raw);
  const others = Array.isArray(overlap.with) ? overlap.with.filter((who) => typeof who === "string")
    : [];
  const mine = actor === role;
  if (typeof overlap.component !== "string" || (!mine && !others.includes(role))) return null;
  const spans = (Array.isArray(overlap.lines) ? overlap.lines : []).flatMap((span) => {
    if (!Array.isArray(span) || !span.every((n) => Number.isInteger(n))) return [];
    const [first, last] = /** @type {number[]} */ (span);
    return [last === undefined || last === first ? `line ${first}` : `lines ${first}–${last}`];
  });
  const whose = mine ? others.map(possessive).join(" and ") || "a teammate's" : possessive(actor);
  const subject = mine ? `Your edit and ${whose}` : `${capital(whose)} edit and yours`;
  const check = spans.length ? ` — check ${spans.join(", ")}` : "";
  return { component: overlap.component,
    words: `${subject} changed the same lines; both versions are kept, one after the other${check}.` };
}

/** @param {string} role @returns {string} "the agent's", "sam's" */
function possessive(role) {
  return role === "agent" ? "the agent's" : `${role}'s`;
}

/** @param {string} text @returns {string} */
function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The state line's words for each state of the shared editor. */
const EDITOR_STATES = {
  synced: "Saved: everyone sees this text",
  syncing: "Saving…",
  offline: "Offline: your changes are kept here and sent when the connection is back",
  refused: "Not saved: the session refused the last change (the message above says why)",
  waiting: "Waiting for the session's text…",
  ended: "The session has ended: the text is read-only",
  readonly: "Read-only",
};

/**
 * The text a person selected in a component, as a message's `selection` carries it
 * (cogym_lab.core.messages.TextSelection): offsets in code points, as the session counts them
 * (a textarea counts UTF-16 units: an emoji before the selection counts one, not two).
 * @param {string} component
 * @param {string} text  the whole text
 * @param {number} start  the textarea's selectionStart
 * @param {number} end  its selectionEnd
 * @returns {{component: string, text: string, start: number, end: number} | null} null when
 *   nothing but white space is selected
 */
export function selectionOf(component, text, start, end) {
  const from = Math.max(0, Math.min(start, end, text.length));
  const to = Math.min(Math.max(start, end), text.length);
  const selected = text.slice(from, to);
  if (!selected.trim()) return null;
  const points = (/** @type {string} */ part) => [...part].length;
  const at = points(text.slice(0, from));
  return { component, text: selected, start: at, end: at + points(selected) };
}

/** The key that asks the agent about the selected text (Alt+A; Option+A on a Mac): JupyterLab
 * binds no Alt+A, and the editor's Ctrl/Cmd+Enter already sends the typing at once. */
const ASK_KEY = "KeyA";

/**
 * The shared editor: a textarea bound to the panel's replica of the text, with a markdown
 * preview. What the person types reaches the session as they type (see SharedTextReplica);
 * what others change appears without moving the person's caret or selection and without
 * touching what they have typed. Without a replica (no Yjs, a watcher, the trajectory viewer,
 * a text that no action edits) it shows the component's text, read-only.
 * @implements {ComponentView}
 * @implements {ReplicaView}
 */
class EditorView {
  /**
   * @param {Component} component
   * @param {EditorHost} host
   */
  constructor(component, host) {
    this.host = host;
    this.name = component.name;
    /** @type {SharedTextReplica | null} */
    this.replica = null;
    this.shown = ""; // the replica's text as the textarea last showed it
    this.composing = false; // an input method is composing: the textarea is left alone
    this.behind = false; // the session's changes came while composing: shown once it ends
    /** @type {{start: YRelativePosition, end: YRelativePosition, scroll: number} | null} */
    this.mark = null;
    this.previewing = false;
    this.textarea = h("textarea", {
      testid: "editor-textarea", dataset: { component: component.name }, spellcheck: false,
      on: {
        input: () => this.typed(),
        keydown: (event) => this.onKey(/** @type {KeyboardEvent} */ (event)),
        blur: () => this.replica?.flush(),
        compositionstart: () => { this.composing = true; },
        compositionend: () => {
          this.composing = false;
          this.typed();
        },
      } });
    this.preview = h("div", { class: "cogym-markdown", testid: "editor-preview", hidden: true });
    this.state = h("span", { class: "cogym-editor-state", testid: "editor-state", role: "status" });
    this.toggle = h("button", { testid: "editor-preview-toggle", text: "Preview",
      on: { click: () => this.togglePreview() } });
    this.noticeText = h("span", { testid: "editor-overlap-text" });
    this.notice = h("div", { class: "cogym-editor-notice", testid: "editor-overlap", role: "status",
      hidden: true }, this.noticeText, h("button", { class: "cogym-dismiss",
      testid: "editor-overlap-dismiss", title: "Dismiss", "aria-label": "Dismiss", text: "×",
      on: { click: () => { this.notice.hidden = true; } } }));
    // Asking the agent about the selected text (Cocoa §4.1.1): the button (or Alt+A) opens a
    // field for the request; Enter sends it as a message with the selection attached.
    this.askButton = h("button", { testid: "editor-ask", text: "Ask the agent about the selection",
      title: "Ask the agent about the selected text (Alt+A)", disabled: true,
      "aria-keyshortcuts": "Alt+A", on: { mousedown: (event) => event.preventDefault(),
        click: () => this.openAsk() } });
    /** @type {ReturnType<typeof selectionOf>} the selection the open request is about */
    this.asking = null;
    this.askQuote = h("blockquote", { class: "cogym-ask-quote", testid: "editor-ask-quote" });
    this.askInput = /** @type {HTMLInputElement} */ (h("input", { type: "text",
      testid: "editor-ask-input", placeholder: "What should the agent do with it?",
      "aria-label": "Your request about the selected text (Enter sends, Escape cancels)",
      on: { keydown: (event) => this.onAskKey(/** @type {KeyboardEvent} */ (event)) } }));
    this.askSend = h("button", { class: "cogym-primary", testid: "editor-ask-send", text: "Ask",
      on: { click: () => this.sendAsk() } });
    this.askBox = h("div", { class: "cogym-editor-ask", testid: "editor-ask-box", hidden: true },
      this.askQuote, h("div", { class: "cogym-row" }, this.askInput, this.askSend));
    for (const event of ["select", "keyup", "mouseup"]) {
      this.textarea.addEventListener(event, () => this.selectionChanged());
    }
    this.body = h("div", { class: "cogym-editor" },
      h("div", { class: "cogym-row" }, this.toggle, this.askButton, this.state), this.notice,
      this.textarea, this.preview, this.askBox);
    this.update(component);
  }

  /** @returns {ReturnType<typeof selectionOf>} what is selected in the textarea now */
  selected() {
    return selectionOf(this.name, this.textarea.value, this.textarea.selectionStart,
      this.textarea.selectionEnd);
  }

  /** The Ask button is open while text is selected (and the session may still be acted in). */
  selectionChanged() {
    this.askButton.disabled = !this.selected() || this.host.done() || Boolean(this.host.readonly);
  }

  /** Opens the request field for the selected text (nothing selected: nothing happens). */
  openAsk() {
    const selection = this.selected();
    if (!selection || this.host.done() || this.host.readonly) return;
    this.asking = selection;
    this.askQuote.textContent = shorten(selection.text, 400);
    this.askBox.hidden = false;
    this.askInput.focus();
  }

  /** @param {boolean} [refocus]  the keyboard goes back to the text */
  closeAsk(refocus = false) {
    this.asking = null;
    this.askBox.hidden = true;
    this.askInput.value = "";
    if (refocus) this.textarea.focus();
  }

  /** @param {KeyboardEvent} event  Enter sends, Escape cancels (Shift+Enter does nothing) */
  onAskKey(event) {
    if (event.key === "Enter" && !event.isComposing) {
      event.preventDefault();
      if (!event.shiftKey) this.sendAsk();
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      this.closeAsk(true);
    }
  }

  /** The request goes to the team as a message with the selection attached. */
  sendAsk() {
    const request = this.askInput.value.trim();
    if (!this.asking || !request || this.host.done() || this.host.readonly) {
      if (!request) this.askInput.focus();
      return;
    }
    this.host.send({ name: "SEND_TEAMMATE_MESSAGE",
      args: { message: request, selection: this.asking } });
    this.closeAsk(true);
  }

  /** @returns {ActionSpec | null} the action that replaces this component's whole text */
  get spec() {
    return this.host.replacing(this.name);
  }

  /** @returns {boolean} whether the person may type here now */
  get editable() {
    return Boolean(this.replica && this.spec) && !this.host.done() && !this.host.readonly;
  }

  /** @param {Component} component */
  update(component) {
    this.bind();
    if (!this.replica) this.showText(asText(component.content));
    else if (typeof component.content === "string") this.replica.confirm(component.content);
    this.textarea.readOnly = !this.editable;
    this.stateChanged();
    if (this.previewing) this.renderPreview();
  }

  /** Take the replica of this text once the session has sent it. */
  bind() {
    if (this.replica || this.host.readonly) return;
    const replica = this.host.sharedText?.(this.name) || null;
    if (!replica) return;
    this.replica = replica;
    replica.view = this;
    this.showText(replica.text.toString());
  }

  /**
   * Show `text`, the caret kept at its offsets (a read-only text, or the replica's first).
   * @param {string} text
   */
  showText(text) {
    this.shown = text;
    if (this.textarea.value === text) return;
    const { selectionStart, selectionEnd, scrollTop } = this.textarea;
    this.textarea.value = text;
    this.textarea.setSelectionRange(Math.min(selectionStart, text.length),
      Math.min(selectionEnd, text.length));
    this.textarea.scrollTop = scrollTop;
  }

  /** The person changed the textarea: the change goes to the replica as its own operations. */
  typed() {
    const replica = this.replica;
    if (!replica || this.composing) return;
    const value = this.textarea.value;
    const change = textChange(this.shown, value);
    if (!this.editable) {
      if (change) this.showText(this.shown); // not theirs to change (a race with the end)
      return;
    }
    const current = replica.text.toString();
    if (change) {
      const theirs = this.behind ? textChange(this.shown, current) : null;
      const placed = theirs ? rebase(change, theirs) : change;
      replica.edit(placed);
      if (theirs) { // the session's changes came while composing: show them now
        const caret = placed.index + placed.insert.length;
        this.textarea.value = replica.text.toString();
        this.textarea.setSelectionRange(caret, caret);
      }
    } else if (this.behind) {
      this.showText(current);
    }
    this.behind = false;
    this.shown = this.textarea.value;
    if (this.previewing) this.renderPreview();
  }

  /** Before the session's change is applied: the textarea's text first, then its caret. */
  beforeRemote() {
    this.mark = null;
    if (!this.replica || this.composing) return;
    if (this.textarea.value !== this.shown) this.typed(); // never lose what was typed
    const { Y, text } = this.replica;
    this.mark = { start: Y.createRelativePositionFromTypeIndex(text, this.textarea.selectionStart),
      end: Y.createRelativePositionFromTypeIndex(text, this.textarea.selectionEnd),
      scroll: this.textarea.scrollTop };
  }

  /** After it: the new text, with the caret and selection where they were in the text. */
  afterRemote() {
    const replica = this.replica;
    if (!replica) return;
    if (this.composing) {
      this.behind = true;
      return;
    }
    const text = replica.text.toString();
    const mark = this.mark;
    this.mark = null;
    if (text === this.textarea.value) {
      this.shown = text;
      return;
    }
    const direction = this.textarea.selectionDirection;
    this.textarea.value = text;
    this.shown = text;
    if (mark) {
      const at = (/** @type {YRelativePosition} */ position) =>
        replica.Y.createAbsolutePositionFromRelativePosition(position, replica.doc)?.index ?? 0;
      this.textarea.setSelectionRange(at(mark.start), at(mark.end), direction || "none");
      this.textarea.scrollTop = mark.scroll;
    }
    if (this.previewing) this.renderPreview();
  }

  /** The state line: saved, saving, offline (kept here), or why the text is read-only. */
  stateChanged() {
    /** @type {keyof typeof EDITOR_STATES} */
    let state = "readonly";
    if (this.host.done()) state = "ended";
    else if (!this.spec || this.host.readonly) state = "readonly";
    else if (!this.replica) state = this.host.sharedText && this.host.liveText ? "waiting" : "readonly";
    else if (this.replica.refusal !== null) state = "refused";
    else if (this.replica.busy) state = this.replica.host.online() ? "syncing" : "offline";
    else state = "synced";
    this.state.dataset.state = state;
    this.state.textContent = EDITOR_STATES[state];
  }

  /**
   * A short notice of an overlap with a teammate's edit; it stays until dismissed and never
   * takes the focus.
   * @param {string} words
   */
  showNotice(words) {
    this.noticeText.textContent = words;
    this.notice.hidden = false;
  }

  /**
   * Ctrl/Cmd+S (or +Enter) sends the typing at once; Alt+A asks the agent about the selection.
   * @param {KeyboardEvent} event
   */
  onKey(event) {
    if ((event.ctrlKey || event.metaKey) && (event.key === "s" || event.key === "Enter")) {
      event.preventDefault();
      this.replica?.flush();
    } else if (event.altKey && !event.ctrlKey && !event.metaKey && event.code === ASK_KEY) {
      event.preventDefault(); // on a Mac, Option+A would type "å"
      this.replica?.flush(); // the agent sees the text as it stands
      this.openAsk();
    }
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

// -- the plan view: co-planning and co-execution (interactive plans, docs/plans.md) -----------

/**
 * What a plan step produced (cogym_lab.core.plans.StepOutput).
 * @typedef {object} PlanStepOutput
 * @property {Json[]} [items]  small records, each with its `kind` (paper, author, topic, entity,
 *   cell, record, text; none in old logs): shown as cards by kind (outputCard)
 * @property {string} [text]
 * @property {boolean} [edited]  the person curated it
 */

/**
 * One step of a plan (cogym_lab.core.plans.PlanStep).
 * @typedef {object} PlanStep
 * @property {string} id
 * @property {string} description
 * @property {string} assignee  "agent" or "person"
 * @property {string} status  not_run / running / needs_input / done / failed / stale
 * @property {PlanStepOutput | null} [output]
 * @property {number} [runs]
 * @property {string | null} [completed_by]
 * @property {string | null} [undo]  the description a suggestion replaced, until kept or undone
 * @property {string | null} [output_format]  what it should produce: paper_list, author_list,
 *   topic_list, entity_list, cell_list, table, text (null: anything)
 */

/**
 * @typedef {object} PlanDraft  a proposal, or the plan itself
 * @property {string} [title]
 * @property {PlanStep[]} steps
 */

/**
 * The plan component's content (cogym_lab.core.plans.PlanState).
 * @typedef {object} PlanContent
 * @property {string} [request]
 * @property {PlanDraft[]} proposals
 * @property {PlanDraft | null} plan
 * @property {boolean} [continuous]
 * @property {string | null} [pause_after]
 * @property {boolean} [awaiting_output]
 * @property {string | null} [output]
 */

/** Each step status: its mark (the running one is a spinner) and its words for screen readers. */
const STEP_STATUS = {
  not_run: { mark: "•", words: "not run yet" },
  running: { mark: "", words: "running" },
  needs_input: { mark: "?", words: "needs input" },
  done: { mark: "✓", words: "done" },
  failed: { mark: "✗", words: "failed" },
  stale: { mark: "↻", words: "stale: an earlier step changed, run it again" },
};

/**
 * @param {Json} content
 * @returns {PlanContent | null} the content read as a plan, or null for another shape
 */
function planContent(content) {
  if (!content || typeof content !== "object" || Array.isArray(content)) return null;
  const record = keyed(content);
  if (!("proposals" in record) && !("plan" in record)) return null;
  /** @param {Json} steps */
  const stepsOf = (steps) => (Array.isArray(steps) ? steps : []).filter((step) =>
    step && typeof step === "object" && typeof keyed(step).id === "string");
  /** @param {Json} draft @returns {PlanDraft} */
  const draftOf = (draft) => ({ title: asText(keyed(draft).title),
    steps: /** @type {PlanStep[]} */ (stepsOf(keyed(draft).steps)) });
  const proposals = Array.isArray(record.proposals) ? record.proposals : [];
  return {
    request: asText(record.request),
    proposals: proposals.filter((p) => p && typeof p === "object").map(draftOf),
    plan: record.plan && typeof record.plan === "object" ? draftOf(record.plan) : null,
    continuous: Boolean(record.continuous),
    pause_after: typeof record.pause_after === "string" ? record.pause_after : null,
    awaiting_output: Boolean(record.awaiting_output),
    output: typeof record.output === "string" ? record.output : null,
  };
}

/**
 * A plan of another shape (a text or a list, as tasks' own plans are): markdown for a string,
 * a numbered list for a list, and anything else as text.
 * @param {Json} content
 * @returns {HTMLElement}
 */
function plainPlan(content) {
  if (typeof content === "string") {
    const preview = h("div", { class: "cogym-markdown" });
    preview.innerHTML = renderMarkdown(content); // escaped first: see renderMarkdown
    return preview;
  }
  if (Array.isArray(content)) {
    return h("ol", { class: "cogym-records" }, content.map((step) =>
      h("li", { testid: "plan-step" }, step && typeof step === "object"
        ? recordList([step])
        : h("span", { text: asText(step) }))));
  }
  return textBlock(content);
}

/**
 * @param {string} side  "agent" or "person"
 * @returns {string} the side a step is handed to by the assignment toggle
 */
function otherSide(side) {
  return side === "agent" ? "person" : "agent";
}

/**
 * A text field that keeps what the person typed while updates come. It shows the session's
 * text only while the person has not changed it; a save sends the text with the text it
 * started from (its base), and keeps showing what was sent until the session's text moves on.
 */
class DraftText {
  /** @param {HTMLTextAreaElement | HTMLInputElement} field */
  constructor(field) {
    this.field = field;
    this.base = ""; // the session's text the person's edit started from
    /** @type {{from: string, text: string} | null} sent, while the session still shows `from` */
    this.pending = null;
  }

  /** @returns {boolean} whether the person changed the text since it was last taken */
  get dirty() {
    return this.field.value !== this.base;
  }

  /** @param {string} remote  the session's text now */
  take(remote) {
    if (this.pending && remote === this.pending.from) return; // not applied yet: keep showing it
    this.pending = null;
    if (this.dirty) return; // the person's edit wins until saved or cancelled
    this.field.value = remote;
    this.base = remote;
  }

  /** @returns {string} the text to send; what was there before stays its base until applied */
  sent() {
    const text = this.field.value;
    this.pending = { from: this.base, text };
    this.base = text;
    return text;
  }

  cancel() {
    this.field.value = this.pending ? this.pending.text : this.base;
  }
}

/**
 * One step of the plan: its status, its assignment toggle, its description (edited in place),
 * and its buttons. Updated in place, so the field being edited keeps its text and its focus.
 */
class PlanStepRow {
  /**
   * @param {PlanView} plan
   * @param {PlanStep} step
   */
  constructor(plan, step) {
    this.plan = plan;
    this.step = step;
    this.number = 0;
    this.mark = h("span", { class: "cogym-step-mark", "aria-hidden": "true" });
    this.statusWords = h("span", { class: "cogym-sr-only" });
    this.status = h("span", { class: "cogym-step-status", testid: "plan-step-status" },
      this.mark, this.statusWords);
    this.assign = h("button", { class: "cogym-step-assign", testid: "plan-step-assign",
      on: { click: () => this.send("ASSIGN_STEP", { assignee: otherSide(this.step.assignee) }) } });
    this.description = h("textarea", { class: "cogym-step-text", testid: "plan-step-description",
      rows: 1, spellcheck: true, on: { keydown: (event) => this.onKey(event) } });
    this.draft = new DraftText(this.description);
    this.run = h("button", { class: "cogym-icon", testid: "plan-step-run", text: "▶",
      on: { click: () => this.send("RUN_STEP") } });
    this.pause = h("button", { testid: "plan-step-pause", text: "Pause after this step",
      on: { click: () => this.send("PAUSE_AFTER_STEP") } });
    this.inspect = h("button", { testid: "plan-step-inspect",
      on: { click: () => this.plan.inspect(this.step.id, true) } });
    this.remove = h("button", { class: "cogym-icon cogym-danger", testid: "plan-step-delete",
      text: "✕", on: { click: () => this.send("DELETE_STEP") } });
    this.suggest = h("button", { testid: "plan-step-suggest", text: "Suggest",
      on: { click: () => this.send("ASK_SUGGESTION") } });
    this.undo = h("button", { testid: "plan-step-undo", text: "Undo suggestion",
      on: { click: () => this.send("UNDO_SUGGESTION") } });
    this.addBelow = h("button", { class: "cogym-icon", testid: "plan-step-add", text: "+",
      on: { click: () => this.plan.newStep.open(this) } });
    this.moveUp = h("button", { class: "cogym-icon", testid: "plan-step-up", text: "↑",
      on: { click: () => this.move(-1) } });
    this.moveDown = h("button", { class: "cogym-icon", testid: "plan-step-down", text: "↓",
      on: { click: () => this.move(1) } });
    this.edited = h("span", { class: "cogym-badge", testid: "plan-step-edited", text: "edited",
      hidden: true });
    // Search inside the person's own step (Cocoa §4.2.2): the task's search box, whose search
    // goes out as SEARCH_IN_STEP, so its results become the step's output. Shown while the
    // step waits for the person.
    const searches = plan.host.searches?.() || [];
    this.search = searches.length ? new SearchBar(searches, plan.host, "this step", {
      testid: "plan-step-", send: (action) => this.searchInStep(action) }) : null;
    this.searchRow = h("div", { class: "cogym-step-search", testid: "plan-step-search",
      hidden: true }, this.search?.root ?? null);
    this.root = h("li", { class: "cogym-step", testid: "plan-step",
      on: { keydown: (event) => this.onRowKey(/** @type {KeyboardEvent} */ (event)) } },
      h("div", { class: "cogym-step-line" }, this.status,
        h("span", { class: "cogym-step-number", "aria-hidden": "true" }), this.assign,
        this.description, this.edited),
      h("div", { class: "cogym-step-buttons" }, this.run, this.pause, this.inspect, this.suggest,
        this.undo, this.moveUp, this.moveDown, this.remove, this.addBelow),
      this.searchRow);
    /** @type {number} how many steps the plan has, for the last step's ↓ */
    this.count = 0;
  }

  /**
   * @param {PlanStep} step
   * @param {number} number  its place in the plan, from 1
   * @param {{runnable: boolean, continuous: boolean, pauseAfter: string | null, done: boolean,
   *   count: number}} state  `count`: how many steps the plan has
   */
  update(step, number, state) {
    this.step = step;
    this.number = number;
    this.count = state.count;
    const status = Object.hasOwn(STEP_STATUS, step.status)
      ? STEP_STATUS[/** @type {keyof typeof STEP_STATUS} */ (step.status)]
      : { mark: "•", words: step.status };
    Object.assign(this.root.dataset, { step: step.id, status: step.status, assignee: step.assignee });
    /** @type {HTMLElement} */ (this.root.querySelector(".cogym-step-number")).textContent = `${number}.`;
    this.mark.textContent = status.mark;
    this.statusWords.textContent = `Step ${number}: ${status.words}.`;
    this.status.title = status.words;
    const side = step.assignee === "person" ? "person" : "agent";
    this.assign.textContent = side === "person" ? "Person" : "Agent";
    this.assign.dataset.assignee = side;
    this.assign.setAttribute("aria-label",
      `Step ${number} is the ${side}'s: hand it to the ${otherSide(side)}`);
    this.draft.take(asText(step.description));
    this.description.setAttribute("aria-label", `Step ${number}: its description (Enter saves, `
      + "Shift+Enter is a new line, Escape cancels)");
    const running = step.status === "running";
    const inProgress = running || step.status === "needs_input";
    this.run.disabled = state.done || !state.runnable;
    this.run.setAttribute("aria-label", `Run step ${number}`);
    this.run.title = `Run step ${number}`;
    this.pause.hidden = !(inProgress && state.continuous);
    const pausing = state.pauseAfter === step.id;
    this.pause.disabled = state.done || pausing;
    this.pause.textContent = pausing ? "Pauses after this step" : "Pause after this step";
    this.remove.disabled = state.done || running;
    this.remove.setAttribute("aria-label", `Delete step ${number}`);
    this.suggest.disabled = state.done || running;
    this.suggest.setAttribute("aria-label", `Ask for a suggestion to replace step ${number}`);
    this.undo.hidden = step.undo == null;
    this.undo.disabled = state.done;
    this.undo.setAttribute("aria-label", `Bring back step ${number}'s description before the `
      + "suggestion");
    this.remove.title = `Delete step ${number}`;
    this.moveUp.disabled = state.done || running || number <= 1;
    this.moveDown.disabled = state.done || running || number >= state.count;
    this.moveUp.setAttribute("aria-label", `Move step ${number} up (Alt+Arrow Up)`);
    this.moveUp.title = `Move step ${number} up (Alt+↑)`;
    this.moveDown.setAttribute("aria-label", `Move step ${number} down (Alt+Arrow Down)`);
    this.moveDown.title = `Move step ${number} down (Alt+↓)`;
    this.addBelow.disabled = state.done;
    this.addBelow.setAttribute("aria-label", `Add a step below step ${number}`);
    this.addBelow.title = `Add a step below step ${number}`;
    const waiting = step.assignee === "person" && step.status === "needs_input";
    this.inspect.textContent = waiting ? "Your input…" : "Output";
    this.inspect.setAttribute("aria-label", waiting
      ? `Step ${number} needs your input: open it` : `Show the output of step ${number}`);
    this.edited.hidden = !step.output?.edited;
    this.description.readOnly = state.done;
    const searchable = (waiting || step.status === "failed") && !state.done && !this.plan.host.readonly;
    this.searchRow.hidden = !this.search || !searchable;
    if (this.search) {
      this.search.root.setAttribute("aria-label", `Search for step ${number} (its results become `
        + "the step's output)");
      this.search.setDone(state.done);
    }
  }

  /**
   * The step's search box searched: the search goes out inside SEARCH_IN_STEP (a search of one
   * field as its text, else its fields as an object), and the step's output opens beside the
   * plan to show the results as cards.
   * @param {Action} action  the task's search, as the box made it
   */
  searchInStep(action) {
    const args = action.args || {};
    const values = Object.values(args);
    const query = values.length === 1 && typeof values[0] === "string" ? values[0] : args;
    this.send("SEARCH_IN_STEP", { query, search: action.name });
    this.plan.inspect(this.step.id);
  }

  /** @param {KeyboardEvent} event  Enter or Ctrl/Cmd+S saves, Shift+Enter is a new line */
  onKey(event) {
    const save = (event.key === "Enter" && !event.shiftKey && !event.isComposing)
      || ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s");
    if (save) {
      event.preventDefault();
      this.save();
    } else if (event.key === "Escape") {
      this.draft.cancel(); // the panel's key guard then leaves the field
    }
  }

  /** @param {KeyboardEvent} event  Alt+ArrowUp / Alt+ArrowDown anywhere in the row move it */
  onRowKey(event) {
    if (!event.altKey || event.ctrlKey || event.metaKey) return;
    const by = event.key === "ArrowUp" ? -1 : event.key === "ArrowDown" ? 1 : 0;
    if (!by) return;
    event.preventDefault();
    this.move(by);
  }

  /**
   * Sends MOVE_STEP one place up (-1) or down (1); the row moves when the plan comes back, and
   * keeps the focus (see PlanView.update).
   * @param {number} by
   */
  move(by) {
    const button = by < 0 ? this.moveUp : this.moveDown;
    if (button.disabled || this.plan.host.done()) return;
    this.send("MOVE_STEP", { position: this.number - 1 + by });
  }

  save() {
    const text = this.description.value.trim();
    if (!this.draft.dirty || this.plan.host.done()) return;
    if (!text) {
      this.draft.cancel(); // a step needs a description: an emptied one is not sent
      return;
    }
    const base = this.draft.base;
    this.description.value = text;
    this.draft.sent();
    this.send("EDIT_STEP", { description: text, base });
  }

  /**
   * @param {string} name  a plan action about this step
   * @param {Record<string, unknown>} [args]
   */
  send(name, args = {}) {
    this.plan.act(name, { step: this.step.id, ...args });
  }
}

/**
 * One button of an offer the agent made on the plan: its words and the plan action it sends.
 * @typedef {object} OfferButton
 * @property {string} label
 * @property {Action} action
 */

/**
 * What the agent offers on the plan (Cocoa §4.1.4), as buttons: replanning the steps after an
 * edited step (a choice each, and Keep the plan), and completions of a step's text (one each).
 * @param {Json} content  the plan component's content
 * @returns {{replan: {after: string, reason: string, buttons: OfferButton[]} | null,
 *   completions: {step: string, buttons: OfferButton[]} | null}}
 */
export function planOffers(content) {
  const record = content && typeof content === "object" && !Array.isArray(content) ? keyed(content) : {};
  const offer = record.replan && typeof record.replan === "object" ? keyed(record.replan) : null;
  const offered = record.completions && typeof record.completions === "object"
    ? keyed(record.completions) : null;
  /** @param {Json} value @returns {Json[]} */
  const list = (value) => (Array.isArray(value) ? value : []);
  /** @param {Json} steps */
  const named = (steps) => list(steps).map((step) => asText(keyed(step).description)).join(" → ");
  const replan = offer && typeof offer.after === "string" ? {
    after: offer.after, reason: asText(offer.reason),
    buttons: [...list(offer.choices).map((choice, index) => ({ label: named(choice),
      action: { name: "ACCEPT_REPLAN", args: { choice: index } } })),
    { label: "Keep the plan as it is", action: { name: "DISMISS_REPLAN", args: {} } }],
  } : null;
  const step = offered && typeof offered.step === "string" ? offered.step : null;
  const completions = step ? {
    step, buttons: list(offered?.choices ?? []).map((text, index) => ({ label: asText(text),
      action: { name: "PICK_COMPLETION", args: { step, choice: index } } })),
  } : null;
  return { replan, completions };
}

/**
 * How far a plan got, in a line: what a folded plan shows under its title.
 * @param {{proposals: unknown[], plan: {steps: {status: string}[]} | null}} plan
 * @returns {string} e.g. "4 steps: 1 done, step 2 running"
 */
export function planSummary(plan) {
  if (!plan.plan) {
    const count = plan.proposals.length;
    return count ? `${count} proposed plan${count > 1 ? "s" : ""} to choose from` : "No steps yet";
  }
  const steps = plan.plan.steps;
  const done = steps.filter((s) => s.status === "done").length;
  const busy = steps.findIndex((s) => s.status === "running" || s.status === "needs_input");
  const parts = [`${steps.length} step${steps.length === 1 ? "" : "s"}`];
  const states = [];
  if (done) states.push(done === steps.length ? "all done" : `${done} done`);
  if (busy >= 0) {
    states.push(`step ${busy + 1} ${steps[busy].status === "running" ? "running" : "needs input"}`);
  }
  return states.length ? `${parts[0]}: ${states.join(", ")}` : parts[0];
}

/** The agent's offers on the plan (replanning, completions of a step): a button per choice. */
class PlanOfferView {
  /** @param {PlanView} plan */
  constructor(plan) {
    this.plan = plan;
    this.json = "";
    this.replan = h("div", { class: "cogym-plan-offer", testid: "plan-replan-offer", role: "status",
      hidden: true });
    this.completions = h("div", { class: "cogym-plan-offer", testid: "plan-completions", role: "status",
      hidden: true });
    this.root = h("div", { class: "cogym-plan-offers" }, this.replan, this.completions);
  }

  /**
   * @param {Json} content  the plan component's content
   * @param {(id: string) => number} numberOf  a step's place in the plan, from 1 (0: gone)
   * @param {boolean} done
   */
  render(content, numberOf, done) {
    const offers = planOffers(content);
    const json = JSON.stringify([offers, done]);
    if (json === this.json) return;
    this.json = json;
    /** @param {OfferButton[]} buttons @param {string} testid */
    const buttons = (buttons, testid) => h("div", { class: "cogym-row" }, buttons.map((button) =>
      h("button", { testid, text: button.label, disabled: done,
        on: { click: () => this.plan.act(button.action.name, button.action.args) } })));
    this.replan.hidden = !offers.replan;
    if (offers.replan) {
      const number = numberOf(offers.replan.after);
      this.replan.replaceChildren(
        h("h5", { text: `Replan the steps after step ${number}?` }),
        h("p", { class: "cogym-muted", text: offers.replan.reason
          || "The edit may change the plan's course." }),
        buttons(offers.replan.buttons, "plan-replan-choice"));
    }
    this.completions.hidden = !offers.completions;
    if (offers.completions) {
      this.completions.replaceChildren(
        h("h5", { text: `Complete step ${numberOf(offers.completions.step)} with:` }),
        buttons([...offers.completions.buttons, { label: "No, thanks",
          action: { name: "DISMISS_COMPLETIONS", args: {} } }], "plan-completion-choice"));
    }
  }
}

/**
 * A form's text field keys: Enter submits, Shift+Enter is a new line (the field's own), Escape
 * cancels. Enter while an input method composes a word is the composer's.
 * @param {KeyboardEvent} event
 * @param {() => void} submit
 * @param {() => void} cancel
 */
function formKey(event, submit, cancel) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit();
  } else if (event.key === "Escape") {
    cancel();
  }
}

/** The form that adds a step below another: a description, who does it, Add and Cancel. */
class NewStepForm {
  /** @param {PlanView} plan */
  constructor(plan) {
    this.plan = plan;
    /** @type {PlanStepRow | null} the row it adds below; null: at the end */
    this.after = null;
    this.text = h("textarea", { class: "cogym-step-text", testid: "plan-new-step", rows: 1,
      "aria-label": "The new step's description (Enter adds it, Escape cancels)",
      placeholder: "What the step does", on: { keydown: (event) => this.onKey(event) } });
    this.assignee = h("select", { testid: "plan-new-step-assignee", "aria-label": "Who does it" },
      h("option", { value: "agent", text: "Agent" }), h("option", { value: "person", text: "Person" }));
    this.add = h("button", { class: "cogym-primary", testid: "plan-new-step-add", text: "Add step",
      on: { click: () => this.submit() } });
    this.cancel = h("button", { testid: "plan-new-step-cancel", text: "Cancel",
      on: { click: () => this.close() } });
    this.root = h("li", { class: "cogym-step cogym-new-step", hidden: true },
      h("div", { class: "cogym-step-line" }, this.text),
      h("div", { class: "cogym-step-buttons" }, this.assignee, this.add, this.cancel));
  }

  /**
   * @param {PlanStepRow | null} row  the row to add below (null: at the end)
   * @param {HTMLElement} [list]  where the form goes when there is no row (no plan yet: the
   *   prompt's own list)
   */
  open(row, list = this.plan.steps) {
    this.after = row;
    if (row) row.root.after(this.root);
    else list.append(this.root);
    this.root.hidden = false;
    this.text.focus();
  }

  close() {
    const back = this.after ? this.after.addBelow
      : this.plan.board.hidden ? this.plan.writeFirst : this.plan.addAtEnd;
    this.root.hidden = true;
    this.text.value = "";
    if (this.root.contains(document.activeElement)) back.focus();
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    formKey(event, () => this.submit(), () => this.close());
  }

  submit() {
    const description = this.text.value.trim();
    if (!description || this.plan.host.done()) return;
    this.plan.act("ADD_STEP", { description, assignee: this.assignee.value,
      after: this.after ? this.after.step.id : "" });
    this.close();
  }
}

/**
 * The kinds a step's output item may have (cogym_lab.core.step_outputs.ITEM_KINDS), and the
 * output formats a step may ask for, with their words for the format picker.
 */
const ITEM_KINDS = ["paper", "author", "topic", "entity", "cell", "record", "text"];
const OUTPUT_FORMATS = /** @type {const} */ ([
  ["", "Any output"], ["paper_list", "Papers"], ["author_list", "Authors"],
  ["topic_list", "Topics"], ["entity_list", "Entities (phrases, questions)"],
  ["cell_list", "Notebook cells"], ["table", "A table"], ["text", "A paragraph of text"]]);
/** Field values a card shows at most, in characters: a 1 MB field must not fill the panel. */
const CARD_FIELD_CHARS = 300;

/**
 * A step's output item as a card (Cocoa §4.2.3): its kind, a title, a line under the title and
 * labelled fields, every value plain text (the DOM shows it as text, never as HTML). A paper
 * shows its title, authors and year; an author their name, affiliation and papers; a topic its
 * name and description; an entity (a phrase, a question) its text; a cell its source and
 * output; a record (a table row) its fields. An item without a known kind (an old log's) is a
 * generic card: its title and its other fields.
 * @param {Json} item
 * @returns {{kind: string, title: string, subtitle: string, fields: [string, string][],
 *   url: string | null}}
 */
export function outputCard(item) {
  if (item === null || typeof item !== "object" || Array.isArray(item)) {
    return { kind: "generic", title: shorten(asText(item), CARD_FIELD_CHARS), subtitle: "",
      fields: [], url: null };
  }
  const record = keyed(item);
  const kind = typeof record.kind === "string" && ITEM_KINDS.includes(record.kind) ? record.kind
    : "generic";
  /** @param {Json | undefined} value */
  const text = (value) => shorten(Array.isArray(value) ? value.map(asText).join(", ")
    : asText(value), CARD_FIELD_CHARS);
  /** @param {string[]} keys @returns {[string, string][]} the keys that have a value */
  const some = (keys) => /** @type {[string, string][]} */ (keys
    .filter((key) => record[key] !== undefined && record[key] !== null && record[key] !== "")
    .map((key) => [key, text(record[key])]));
  const [titleKey, title] = recordTitle(record);
  /** @param {string[]} shown @returns {[string, string][]} the fields not shown otherwise */
  const rest = (shown) => some(Object.keys(record).filter((key) => key !== "kind"
    && key !== "url" && !shown.includes(key)));
  const url = safeUrl(record.url);
  switch (kind) {
    case "paper":
      return { kind, title: text(record.title ?? record.id), url,
        subtitle: [text(record.authors), text(record.year)].filter(Boolean).join(" · "),
        fields: some(["venue", "snippet", "abstract", "id"]) };
    case "author":
      return { kind, title: text(record.name ?? record.id), url,
        subtitle: text(record.affiliation),
        fields: some(["papers", "paper_count", "h_index", "id"]) };
    case "topic":
      return { kind, title: text(record.topic ?? record.name ?? record.title), url,
        subtitle: text(record.description), fields: rest(["topic", "name", "title", "description"]) };
    case "entity":
    case "text":
      return { kind, title: text(record.text ?? record.title ?? record.label), url, subtitle: "",
        fields: rest(["text", "title", "label"]) };
    case "cell":
      return { kind, title: text(record.source), url, subtitle: text(record.output),
        fields: rest(["source", "output"]) };
    default: { // a record (a table row) or an item of no known kind: titled by its name
      const named = titleKey || Object.keys(record).find((key) =>
        ["title", "name", "text", "label"].includes(key.toLowerCase()) && text(record[key]));
      return { kind, title: titleKey ? text(title) : named ? text(record[named]) : "", url,
        subtitle: "", fields: rest(named ? [named] : []) };
    }
  }
}

/**
 * @param {ReturnType<typeof outputCard>} card
 * @returns {HTMLElement} the card's body: text nodes only
 */
function cardBody(card) {
  const title = card.kind === "cell" ? h("pre", { class: "cogym-card-code", text: card.title })
    : card.url ? link(card.url, card.title) : h("strong", { text: card.title || "(untitled)" });
  return h("div", { class: "cogym-card-body" },
    h("span", { class: "cogym-badge cogym-card-kind", text: card.kind === "generic" ? "item" : card.kind }),
    h("div", { class: "cogym-card-title", testid: "step-output-card-title" }, title),
    card.subtitle ? h("div", { class: "cogym-muted", testid: "step-output-card-subtitle",
      text: card.subtitle }) : null,
    card.fields.map(([key, value]) => h("div", { class: "cogym-field" }, `${key}: ${value}`)));
}

/**
 * The side area of the plan: one step's output, to inspect and curate. Its items show as a list
 * with a remove button each and a field to add one; its text in a textarea. A person step that
 * needs input (or a failed step) is completed from here; a done step's output is saved from here.
 */
class StepOutputView {
  /** @param {PlanView} plan */
  constructor(plan) {
    this.plan = plan;
    /** @type {PlanStep | null} */
    this.step = null;
    this.number = 0;
    /** @type {Json[]} the items as the person curates them */
    this.items = [];
    this.itemsBase = "[]"; // the session's items, as JSON, that the curation started from
    /** @type {{from: string, items: string} | null} items sent, while the session shows `from` */
    this.pendingItems = null;
    this.editable = false; // the person may change the output now
    this.heading = h("h5", { class: "cogym-output-heading", testid: "step-output-title", tabindex: "-1" });
    this.state = h("div", { class: "cogym-muted", testid: "step-output-state" });
    this.edited = h("span", { class: "cogym-badge", testid: "step-output-edited",
      text: "edited by a person", hidden: true });
    this.list = h("ul", { class: "cogym-records cogym-output-items", testid: "step-output-items" });
    this.itemInput = h("input", { type: "text", testid: "step-output-item-input",
      "aria-label": "A new item (Enter adds it)", placeholder: "Add an item",
      on: { keydown: (event) => this.onItemKey(event) } });
    this.addItem = h("button", { testid: "step-output-item-add", text: "Add item",
      on: { click: () => this.add() } });
    this.text = h("textarea", { testid: "step-output-text", rows: 5,
      "aria-label": "The step's output text" });
    this.draft = new DraftText(this.text);
    this.complete = h("button", { class: "cogym-primary", testid: "step-output-complete",
      text: "Complete step", on: { click: () => this.submit("COMPLETE_STEP") } });
    this.save = h("button", { class: "cogym-primary", testid: "step-output-save",
      text: "Save output", on: { click: () => this.submit("EDIT_STEP_OUTPUT") } });
    this.format = /** @type {HTMLSelectElement} */ (h("select", { testid: "step-output-format",
      "aria-label": "What the step should produce (its output format)",
      on: { change: () => this.setFormat() } },
    OUTPUT_FORMATS.map(([value, words]) => h("option", { value, text: words }))));
    this.empty = muted("Choose a step's Output to see what it produced.");
    this.adder = h("div", { class: "cogym-row" }, this.itemInput, this.addItem);
    // The items and the text: hidden for a step with no output that does not wait for anyone here.
    this.fields = h("div", { class: "cogym-output-editor" },
      h("div", { class: "cogym-field", text: "Items" }), this.list, this.adder,
      h("label", { class: "cogym-field", text: "Text" }), this.text,
      h("div", { class: "cogym-row" }, this.complete, this.save));
    this.editor = h("div", { class: "cogym-output-editor" },
      h("div", { class: "cogym-row" }, this.heading, this.edited), this.state,
      h("label", { class: "cogym-row cogym-field" }, "Produces ", this.format), this.fields);
    this.root = h("section", { class: "cogym-step-output", testid: "step-output",
      "aria-label": "The step's output" }, this.empty, this.editor);
  }

  /**
   * @param {PlanStep | null} step  the step shown; null: none
   * @param {number} number  its place in the plan
   */
  show(step, number) {
    const changedStep = this.step?.id !== step?.id;
    if (changedStep) { // another step's drafts start afresh
      this.text.value = "";
      this.itemInput.value = "";
      this.draft = new DraftText(this.text);
      this.pendingItems = null;
      this.itemsBase = "";
    }
    this.step = step;
    this.number = number;
    this.empty.hidden = Boolean(step);
    this.editor.hidden = !step;
    this.root.dataset.step = step ? step.id : "";
    if (!step) return;
    const output = step.output || {};
    const waiting = this.waitsForPerson(step);
    const curable = Boolean(step.output) && ["done", "stale"].includes(step.status);
    const done = this.plan.host.done();
    this.heading.textContent = `Step ${number}: ${shorten(asText(step.description), 80)}`;
    this.state.textContent = waiting ? "This step waits for you: add what it needs, then complete it."
      : step.output ? `Done by ${step.completed_by || "?"}${(step.runs || 0) > 1 ? `, run ${step.runs} times` : ""}.`
        : "No output yet.";
    this.edited.hidden = !output.edited;
    if (document.activeElement !== this.format) this.format.value = step.output_format || "";
    this.format.disabled = done;
    this.draft.take(asText(output.text));
    this.takeItems(Array.isArray(output.items) ? output.items : []);
    const editable = !done && (waiting || curable);
    this.text.readOnly = !editable;
    this.itemInput.readOnly = !editable;
    this.addItem.disabled = !editable;
    this.complete.hidden = !waiting;
    this.complete.disabled = done;
    this.save.hidden = !curable || waiting;
    this.save.disabled = done;
    this.editable = editable;
    this.fields.hidden = !step.output && !waiting;
    this.adder.hidden = !editable;
    this.drawItems();
  }

  /**
   * @param {PlanStep} step
   * @returns {boolean} whether the person completes it from here
   */
  waitsForPerson(step) {
    return (step.assignee === "person" && step.status === "needs_input") || step.status === "failed";
  }

  /** Sends SET_STEP_FORMAT with the format picked (empty: any output). */
  setFormat() {
    const step = this.step;
    if (!step || this.plan.host.done() || this.format.value === (step.output_format || "")) return;
    this.plan.host.send({ name: "SET_STEP_FORMAT", args: { step: step.id, format: this.format.value } });
  }

  /** @param {Json[]} remote  the session's items now */
  takeItems(remote) {
    const json = JSON.stringify(remote);
    if (this.pendingItems && json === this.pendingItems.from) return;
    this.pendingItems = null;
    if (this.itemsBase && JSON.stringify(this.items) !== this.itemsBase) return; // curated
    this.items = [...remote];
    this.itemsBase = json;
  }

  /** The items as cards by kind (see outputCard), each with its remove button. */
  drawItems() {
    this.list.replaceChildren(...this.items.map((item, index) => {
      const card = outputCard(item);
      const remove = h("button", { class: "cogym-icon cogym-danger", testid: "step-output-item-remove",
        text: "✕", title: "Remove this item", "aria-label": `Remove item: ${shorten(card.title, 60)}`,
        disabled: !this.editable, on: { click: () => this.removeItem(index) } });
      return h("li", { class: `cogym-output-item cogym-card cogym-card-${card.kind}`,
        testid: "step-output-item", dataset: { kind: card.kind } },
      h("span", { class: "cogym-output-item-text" }, cardBody(card)), remove);
    }));
    if (!this.items.length) this.list.append(h("li", { class: "cogym-muted", text: "No items." }));
  }

  /** @param {KeyboardEvent} event  Enter adds the item */
  onItemKey(event) {
    if (event.key === "Enter" && !event.isComposing) {
      event.preventDefault();
      this.add();
    }
  }

  add() {
    const text = this.itemInput.value.trim();
    if (!text || !this.editable) return;
    if (!this.itemsBase) this.itemsBase = JSON.stringify(this.items);
    this.items = [...this.items, { title: text }];
    this.itemInput.value = "";
    this.drawItems();
  }

  /** @param {number} index */
  removeItem(index) {
    if (!this.itemsBase) this.itemsBase = JSON.stringify(this.items);
    this.items = this.items.filter((_, i) => i !== index);
    this.drawItems();
    this.itemInput.focus(); // the button pressed is gone: the keyboard goes on from the field
  }

  /** @param {"COMPLETE_STEP" | "EDIT_STEP_OUTPUT"} name */
  submit(name) {
    const step = this.step;
    if (!step || this.plan.host.done()) return;
    const items = this.items;
    this.pendingItems = { from: this.itemsBase, items: JSON.stringify(items) };
    this.itemsBase = JSON.stringify(items);
    const text = this.draft.sent();
    this.plan.act(name, { step: step.id, text, items });
  }
}

/**
 * `plan`: the shared plan of interactive plans (docs/plans.md). The proposals to choose from;
 * then the plan's steps, each with its status, who does it, its description (edited in place)
 * and its buttons; Run all and Run remaining; a side area with one step's output; the plan
 * output below. Every control sends a plan action. Updated in place: what the person is typing
 * keeps its text and its focus whatever else changes. Content of another shape (a text or a
 * list) shows as before: markdown, or a numbered list.
 * @implements {ComponentView}
 */
class PlanView {
  /**
   * @param {Component} component
   * @param {ViewHost} host
   */
  constructor(component, host) {
    this.name = component.name;
    this.host = host;
    /** @type {Map<string, PlanStepRow>} */
    this.rows = new Map();
    // Folded or not is the person's layout, kept per session and plan in this browser, so it
    // survives a reload (and a tab opened later on the same session).
    this.storageKey = `cogym-plan-collapsed:${host.session || ""}:${this.name}`;
    /** @type {string | null} the step the person chose to inspect */
    this.chosen = null;
    this.plain = h("div", { hidden: true });
    this.proposals = h("div", { class: "cogym-proposals", testid: "plan-proposals", hidden: true });
    this.proposalsJson = "";
    this.title = h("h5", { class: "cogym-plan-title", testid: "plan-title" });
    this.request = h("div", { class: "cogym-muted cogym-plan-request", testid: "plan-request" });
    this.summary = h("span", { class: "cogym-muted", testid: "plan-summary", hidden: true });
    this.content = h("div", { class: "cogym-plan-content", id: `cogym-plan-${uniqueId()}` });
    this.toggle = h("button", { class: "cogym-icon cogym-plan-toggle", testid: "plan-collapse",
      "aria-controls": this.content.id, on: { click: () => this.setCollapsed(!this.collapsed) } });
    this.header = h("div", { class: "cogym-plan-header" }, this.toggle,
      h("div", { class: "cogym-plan-heading" }, this.title, this.request, this.summary));
    this.runAll = h("button", { testid: "plan-run-all", text: "▶▶ Run all",
      "aria-label": "Run all: the whole plan from its first step",
      on: { click: () => this.act("RUN_ALL") } });
    this.runRemaining = h("button", { testid: "plan-run-remaining", text: "▶ Run remaining",
      "aria-label": "Run remaining: from the first step not done",
      on: { click: () => this.act("RUN_REMAINING") } });
    this.mode = h("span", { class: "cogym-muted", testid: "plan-mode", "aria-live": "polite" });
    this.steps = h("ol", { class: "cogym-steps", testid: "plan-steps", "aria-label": "The plan's steps" });
    this.newStep = new NewStepForm(this);
    this.addAtEnd = h("button", { testid: "plan-add-step", text: "+ Add a step",
      on: { click: () => this.newStep.open(null) } });
    this.awaiting = h("div", { class: "cogym-plan-note", testid: "plan-awaiting-output", role: "status",
      text: "Every step is done: the plan output is written next.", hidden: true });
    this.outputText = h("div", { class: "cogym-plan-output-text", testid: "plan-output-text" });
    this.output = h("details", { class: "cogym-fold cogym-plan-output", testid: "plan-output", hidden: true },
      h("summary", { text: "Plan output" }), this.outputText);
    this.side = new StepOutputView(this);
    this.offers = new PlanOfferView(this);
    // No plan and no proposal: say so, with a way to write the first step or ask for a plan.
    this.writeFirst = h("button", { class: "cogym-primary", testid: "plan-write-first",
      text: "Write the first step", on: { click: () => this.newStep.open(null, this.firstStep) } });
    this.askAgent = h("button", { testid: "plan-ask-agent", text: "Ask the agent to propose a plan",
      on: { click: () => this.askForPlan() } });
    this.emptyNote = h("span", { class: "cogym-muted", testid: "plan-empty-note", "aria-live": "polite" });
    this.firstStep = h("ol", { class: "cogym-steps", "aria-label": "The plan's first step" });
    this.empty = h("div", { class: "cogym-plan-empty", testid: "plan-empty", hidden: true },
      h("p", { text: "There is no plan yet. Write its first step yourself, or ask the agent to "
        + "propose one." }),
      h("div", { class: "cogym-row" }, this.writeFirst, this.askAgent, this.emptyNote), this.firstStep);
    this.main = h("div", { class: "cogym-plan-main" },
      h("div", { class: "cogym-row" }, this.runAll, this.runRemaining, this.mode),
      this.offers.root, this.steps, h("div", { class: "cogym-row" }, this.addAtEnd));
    this.board = h("div", { class: "cogym-plan-board", hidden: true }, this.main, this.side.root);
    this.content.append(this.plain, this.empty, this.proposals, this.board, this.awaiting, this.output);
    this.body = h("div", { class: "cogym-plan-view", testid: "plan-view", dataset: { plan: this.name } },
      this.header, this.content);
    this.collapsed = false;
    this.setCollapsed(readStored(this.storageKey, "local") === "yes", false);
    this.update(component);
  }

  /**
   * Sends a plan action for this plan: every one names its plan (`plan`: the component's
   * name), so that several plans in one session each get their own.
   * @param {string} name
   * @param {Record<string, unknown>} [args]
   * @returns {boolean} whether it left the panel
   */
  act(name, args = {}) {
    return this.host.send({ name, args: { ...args, plan: this.name } });
  }

  /**
   * Folds the plan to its header (its title, what it is for, and a line on how far it got),
   * or unfolds it. A plain button: Enter and Space work it.
   * @param {boolean} collapsed
   * @param {boolean} [remember]  keep the choice for this session and plan in this browser
   */
  setCollapsed(collapsed, remember = true) {
    this.collapsed = collapsed;
    this.content.hidden = collapsed;
    this.summary.hidden = !collapsed;
    this.body.dataset.collapsed = String(collapsed);
    const what = this.title.textContent || "the plan";
    this.toggle.textContent = collapsed ? "▸" : "▾";
    this.toggle.setAttribute("aria-expanded", String(!collapsed));
    this.toggle.setAttribute("aria-label", `${collapsed ? "Expand" : "Collapse"} ${shorten(what, 60)}`);
    this.toggle.title = collapsed ? "Expand the plan" : "Collapse the plan";
    if (remember) writeStored(this.storageKey, collapsed ? "yes" : "", "local");
  }

  /** @param {Component} component */
  update(component) {
    const focused = document.activeElement;
    const field = focused instanceof HTMLTextAreaElement || focused instanceof HTMLInputElement
      ? { start: focused.selectionStart, end: focused.selectionEnd } : null;
    const plan = planContent(component.content);
    try {
      if (plan) this.render(plan, component.content);
      else this.showPlain(plainPlan(component.content));
    } catch (error) {
      this.showPlain(jsonBlock(component.content)); // an unexpected shape still shows as JSON
    }
    // A row moved by a reorder loses the focus: give it back, with the caret where it was.
    if (focused instanceof HTMLElement && focused !== document.activeElement
        && focused.isConnected && this.body.contains(focused)) {
      focused.focus();
      if (field && (focused instanceof HTMLTextAreaElement || focused instanceof HTMLInputElement)) {
        focused.setSelectionRange(field.start, field.end);
      }
    }
    // ↑ on a step that became the first is off now: the row's other arrow takes the focus.
    if (focused instanceof HTMLButtonElement && focused.disabled && focused.isConnected
        && this.body.contains(focused)) {
      const row = focused.closest("li");
      const other = /** @type {HTMLElement | null} */ (row?.querySelector(
        "[data-testid=plan-step-up]:not(:disabled), [data-testid=plan-step-down]:not(:disabled)")
        || row?.querySelector("[data-testid=plan-step-description]"));
      other?.focus();
    }
  }

  /** @param {HTMLElement} node  a plan of another shape */
  showPlain(node) {
    this.plain.replaceChildren(node);
    this.plain.hidden = false;
    this.empty.hidden = true;
    this.proposals.hidden = true;
    this.board.hidden = true;
    this.awaiting.hidden = true;
    this.output.hidden = true;
  }

  /**
   * @param {PlanContent} plan
   * @param {Json} content  the component's content as sent: the agent's offers are read from it
   */
  render(plan, content) {
    this.plain.hidden = true;
    const done = this.host.done();
    this.renderProposals(plan.proposals, done);
    const steps = plan.plan ? plan.plan.steps : [];
    const wasEmpty = !this.empty.hidden;
    const typingFirst = this.empty.contains(document.activeElement);
    const onPromptButton = document.activeElement === this.writeFirst
      || document.activeElement === this.askAgent;
    this.empty.hidden = Boolean(plan.plan) || plan.proposals.length > 0;
    this.writeFirst.disabled = done;
    this.askAgent.disabled = done || this.askAgent.dataset.asked === "true";
    if (!this.empty.hidden) this.empty.dataset.state = done ? "ended" : "open";
    this.board.hidden = !plan.plan;
    this.title.textContent = plan.plan ? plan.plan.title || "Untitled plan"
      : plan.proposals.length ? "Plans to choose from" : "No plan yet";
    this.request.textContent = plan.request ? `For: ${shorten(plan.request, 240)}` : "";
    this.summary.textContent = planSummary(plan);
    this.toggle.setAttribute("aria-label", `${this.collapsed ? "Expand" : "Collapse"} `
      + shorten(this.title.textContent, 60));
    const inProgress = steps.find((s) => s.status === "running" || s.status === "needs_input");
    const notDone = steps.filter((s) => s.status !== "done");
    this.runAll.disabled = done || !steps.length || Boolean(inProgress);
    this.runRemaining.disabled = done || !notDone.length || Boolean(inProgress);
    const pauseNumber = steps.findIndex((s) => s.id === plan.pause_after) + 1;
    this.mode.textContent = plan.continuous
      ? `Running on${pauseNumber ? `, pausing after step ${pauseNumber}` : ""}.`
      : inProgress ? "Running one step." : "";
    this.addAtEnd.disabled = done;
    this.renderSteps(steps, plan, done);
    this.offers.render(content, (id) => steps.findIndex((s) => s.id === id) + 1, done);
    this.awaiting.hidden = !plan.awaiting_output;
    this.output.hidden = plan.output === null || plan.output === undefined;
    this.outputText.textContent = plan.output || "";
    this.pickInspected(steps);
    // The first step came back as the plan: the keyboard goes on with it, not to the body.
    if (wasEmpty && typingFirst && plan.plan && steps.length) {
      this.rows.get(steps[0].id)?.description.focus();
    }
    // Proposals came while the keyboard was on the prompt's buttons: it goes on to the first.
    if (wasEmpty && onPromptButton && !plan.plan && plan.proposals.length) {
      /** @type {HTMLElement | null} */ (this.proposals.querySelector("[data-testid=plan-select]"))?.focus();
    }
  }

  /** The keyboard goes to where a person starts this plan: its first step, or its toggle. */
  focusStart() {
    const start = [this.writeFirst, this.askAgent, this.toggle].find((button) =>
      !button.disabled && button.getClientRects().length > 0);
    (start || this.toggle).focus();
  }

  /** Asks the agent in the chat for plans to choose from; their proposals show here. */
  askForPlan() {
    if (this.host.done()) return;
    const which = this.name === FIRST_PLAN ? "this task"
      : `${this.name} (${shorten(this.request.textContent, 120) || "the task"})`;
    const sent = this.host.send({ name: "SEND_TEAMMATE_MESSAGE",
      args: { message: `Please propose a plan for ${which}: I will pick one or change it.` } });
    if (!sent) return;
    this.askAgent.dataset.asked = "true";
    this.askAgent.disabled = true;
    this.emptyNote.textContent = "Asked the agent in the chat: its plans will show here.";
  }

  /**
   * @param {PlanDraft[]} proposals
   * @param {boolean} done
   */
  renderProposals(proposals, done) {
    const json = JSON.stringify([proposals, done]);
    this.proposals.hidden = !proposals.length;
    if (json === this.proposalsJson) return;
    this.proposalsJson = json;
    this.proposals.replaceChildren(
      h("h5", { text: proposals.length > 1 ? `Choose a plan (${proposals.length} proposed)` : "A proposed plan" }),
      ...proposals.map((proposal, index) => {
        const title = proposal.title || `Plan ${index + 1}`;
        return h("section", { class: "cogym-proposal", testid: "plan-proposal", dataset: { index: String(index) },
          "aria-label": `Proposed plan ${index + 1}: ${shorten(title, 80)}` },
        h("strong", { text: title }),
        h("ol", { class: "cogym-proposal-steps" }, proposal.steps.map((step) =>
          h("li", { testid: "plan-proposal-step" },
            h("span", { class: "cogym-badge", text: step.assignee === "person" ? "person" : "agent" }),
            " ", h("span", { text: asText(step.description) })))),
        h("button", { class: "cogym-primary", testid: "plan-select", text: "Use this plan",
          "aria-label": `Use this plan: ${shorten(title, 80)}`, disabled: done,
          on: { click: () => this.act("SELECT_PLAN", { index }) } }));
      }));
  }

  /**
   * @param {PlanStep[]} steps
   * @param {PlanContent} plan
   * @param {boolean} done  the session ended
   */
  renderSteps(steps, plan, done) {
    const busy = steps.some((s) => s.status === "running" || s.status === "needs_input");
    /** @type {Set<string>} */
    const seen = new Set();
    let allDoneBefore = true;
    steps.forEach((step, index) => {
      seen.add(step.id);
      let row = this.rows.get(step.id);
      if (!row) {
        row = new PlanStepRow(this, step);
        this.rows.set(step.id, row);
      }
      row.update(step, index + 1, { runnable: allDoneBefore && !busy, continuous: Boolean(plan.continuous),
        pauseAfter: plan.pause_after || null, done, count: steps.length });
      allDoneBefore = allDoneBefore && step.status === "done";
      const rowsShown = [...this.steps.children].filter((node) => node !== this.newStep.root);
      if (rowsShown[index] !== row.root) this.steps.insertBefore(row.root, rowsShown[index] || null);
    });
    for (const [id, row] of this.rows) {
      if (seen.has(id)) continue;
      if (this.newStep.after === row) this.newStep.close();
      row.root.remove();
      this.rows.delete(id);
    }
    if (!this.newStep.root.hidden) this.newStep.after?.root.after(this.newStep.root);
  }

  /**
   * The side area shows the step the person chose; else the one waiting for the person; else
   * the step in progress.
   * @param {PlanStep[]} steps
   */
  pickInspected(steps) {
    const chosen = steps.find((s) => s.id === this.chosen);
    const step = chosen || steps.find((s) => this.side.waitsForPerson(s))
      || steps.find((s) => s.status === "running") || null;
    const number = step ? steps.indexOf(step) + 1 : 0;
    this.side.show(step, number);
    for (const row of this.rows.values()) {
      row.inspect.setAttribute("aria-pressed", String(row.step.id === step?.id));
    }
  }

  /**
   * @param {string} stepId  show that step's output in the side area
   * @param {boolean} [focus]  and move the keyboard there
   */
  inspect(stepId, focus = false) {
    this.chosen = stepId;
    const steps = [...this.rows.values()].map((row) => row.step);
    const ordered = [...this.steps.children].map((node) => [...this.rows.values()]
      .find((row) => row.root === node)).filter((row) => row !== undefined).map((row) => row.step);
    this.pickInspected(ordered.length ? ordered : steps);
    if (focus) (this.side.editable ? this.side.text : this.side.heading).focus();
  }
}

/** The first plan's component name (cogym_lab.core.plan_env.PLAN_COMPONENT). */
const FIRST_PLAN = "interactive_plan";

/**
 * "+ New plan": starts another plan beside the session's plans (NEW_PLAN). A button opens a
 * field for what the plan is for; Enter starts it, Shift+Enter is a new line, Escape cancels.
 * Empty, the new plan answers the task's own request.
 */
class NewPlanForm {
  /** @param {EditorHost} host */
  constructor(host) {
    this.host = host;
    /** whether a plan was asked for and has not come yet: it takes the keyboard when it comes */
    this.asked = false;
    this.open = h("button", { testid: "plan-new-plan", text: "+ New plan",
      "aria-label": "New plan: start another plan beside this one",
      on: { click: () => this.show() } });
    this.text = h("textarea", { class: "cogym-step-text", testid: "plan-new-plan-request", rows: 1,
      "aria-label": "What the new plan is for (Enter starts it, Shift+Enter is a new line, "
        + "Escape cancels; empty: the task's request)",
      placeholder: "What the new plan is for (empty: the task's request)",
      on: { keydown: (event) => this.onKey(/** @type {KeyboardEvent} */ (event)) } });
    this.start = h("button", { class: "cogym-primary", testid: "plan-new-plan-start",
      text: "Start plan", on: { click: () => this.submit() } });
    this.cancel = h("button", { testid: "plan-new-plan-cancel", text: "Cancel",
      on: { click: () => this.close() } });
    this.form = h("div", { class: "cogym-row cogym-new-plan-form", hidden: true },
      this.text, this.start, this.cancel);
    this.root = h("div", { class: "cogym-new-plan", testid: "plan-new-plan-box" }, this.open, this.form);
  }

  show() {
    if (this.host.done()) return;
    this.form.hidden = false;
    this.open.hidden = true;
    this.text.focus();
  }

  close() {
    const typing = this.root.contains(document.activeElement);
    this.form.hidden = true;
    this.open.hidden = false;
    this.text.value = "";
    if (typing) this.open.focus();
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    formKey(event, () => this.submit(), () => this.close());
  }

  submit() {
    if (this.host.done()) return;
    const sent = this.host.send({ name: "NEW_PLAN", args: { request: this.text.value.trim() } });
    if (!sent) return;
    this.asked = true;
    this.close();
  }

  /**
   * A plan came: if this form asked for it and the keyboard was still on "+ New plan", the
   * keyboard goes on in the new plan.
   * @param {PlanView} view  the new plan, in the page
   * @param {boolean} keyboardHere  the keyboard was on "+ New plan" before the plan came
   */
  arrived(view, keyboardHere) {
    if (!this.asked) return;
    this.asked = false;
    if (keyboardHere) view.focusStart();
  }

  /** @param {boolean} done  the session ended: no more plans */
  setDone(done) {
    this.open.disabled = done;
    if (done && !this.form.hidden) this.close();
  }
}

// -- the kitchen view ---------------------------------------------------------------------------

/**
 * Something in the kitchen: an ingredient, a plate (with what is on it), a burger, the
 * extinguisher. `progress` (0..1) runs while it cooks, is chopped or puts out a fire.
 * @typedef {object} KitchenItem
 * @property {string} name
 * @property {string} status  "Fresh", "In-progress", "Well-cooked", "Overcooked", "Chopped", ... or ""
 * @property {number | null} progress
 * @property {KitchenItem[]} contents
 */

/**
 * @typedef {object} KitchenChef
 * @property {string} role
 * @property {[number, number]} pos  [column, row]
 * @property {string} facing  up, down, left or right
 * @property {KitchenItem | null} holding
 * @property {string | null} macro  the running macro action, as the env wrote it
 */

/**
 * @typedef {object} KitchenOrder
 * @property {string} dish
 * @property {number} remaining  ticks
 * @property {number} total  ticks
 * @property {number} reward
 */

/**
 * @typedef {object} KitchenResult
 * @property {number} score
 * @property {number} served
 * @property {number} missed
 * @property {number} wrong
 * @property {Record<string, number>} contribution  each role's share, 0..1
 */

/**
 * A `kitchen` component's content, checked field by field (see kitchenContent): the grid, who
 * is where, what lies where, the orders and the clock.
 * @typedef {object} KitchenContent
 * @property {string[]} grid  one character per tile
 * @property {Record<string, string>} legend  character -> what the tile is
 * @property {number} tick
 * @property {number} ticks
 * @property {number} tickSeconds
 * @property {number} score
 * @property {boolean} done
 * @property {KitchenChef[]} chefs
 * @property {{pos: [number, number], item: KitchenItem}[]} items
 * @property {KitchenOrder[]} orders
 * @property {[number, number][]} fires
 * @property {number} served
 * @property {number} missed
 * @property {number} wrong
 * @property {KitchenResult | null} result
 * @property {string[]} movesOnly  the roles that play with moves and interact only (no macros)
 */

/**
 * @param {Json} value
 * @param {number} fallback
 * @returns {number} the value if it is a finite number, else the fallback
 */
function finite(value, fallback) {
  return typeof value === "number" && Number.isFinite(value) ? value : fallback;
}

/**
 * @param {Json} value
 * @returns {[number, number] | null} an [x, y] pair of integers
 */
function gridPos(value) {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [x, y] = value;
  return Number.isInteger(x) && Number.isInteger(y) ? [Number(x), Number(y)] : null;
}

/**
 * @param {Json} value
 * @returns {JsonRecord} the value's fields when it is an object, else none
 */
function fieldsOf(value) {
  return value && typeof value === "object" && !Array.isArray(value) ? keyed(value) : {};
}

/**
 * @param {Json} value
 * @param {number} [depth]  plates hold items; deeper nesting is cut off
 * @returns {KitchenItem | null}
 */
function kitchenItem(value, depth = 0) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  const record = keyed(value);
  const contents = Array.isArray(record.contents) && depth < 3
    ? record.contents.map((item) => kitchenItem(item, depth + 1)).filter((item) => item !== null)
    : [];
  const progress = finite(record.progress, NaN);
  return { name: asText(record.name).slice(0, 40), status: asText(record.status).slice(0, 40),
    progress: Number.isNaN(progress) ? null : Math.min(1, Math.max(0, progress)),
    contents: /** @type {KitchenItem[]} */ (contents) };
}

/**
 * A kitchen's content, read defensively: what is missing or of the wrong type is left out
 * (or zero), so a malformed field never breaks the drawing.
 * @param {Json} content
 * @returns {KitchenContent | null} null when there is no grid to draw
 */
function kitchenContent(content) {
  if (!content || typeof content !== "object" || Array.isArray(content)) return null;
  const record = keyed(content);
  if (!Array.isArray(record.grid) || !record.grid.length) return null;
  const grid = record.grid.slice(0, 60).map((row) => asText(row).slice(0, 60));
  /** @type {Record<string, string>} */
  const legend = {};
  if (record.legend && typeof record.legend === "object" && !Array.isArray(record.legend)) {
    for (const [char, name] of Object.entries(keyed(record.legend))) legend[char] = asText(name);
  }
  const list = (/** @type {Json} */ value) => (Array.isArray(value) ? value : []);
  const chefs = list(record.chefs).flatMap((chef) => {
    const fields = fieldsOf(chef);
    const pos = gridPos(fields.pos);
    return pos ? [{ role: asText(fields.role).slice(0, 40), pos, facing: asText(fields.facing),
      holding: kitchenItem(fields.holding), macro: fields.macro ? asText(fields.macro) : null }] : [];
  });
  const items = list(record.items).flatMap((entry) => {
    const fields = fieldsOf(entry);
    const pos = gridPos(fields.pos);
    const item = kitchenItem(fields.item);
    return pos && item ? [{ pos, item }] : [];
  });
  const orders = list(record.orders).flatMap((order) => {
    const fields = fieldsOf(order);
    return fields.dish ? [{ dish: asText(fields.dish).slice(0, 40), remaining: finite(fields.remaining, 0),
      total: finite(fields.total, 0), reward: finite(fields.reward, 0) }] : [];
  });
  const fires = list(record.fires).map(gridPos).filter((pos) => pos !== null);
  return { grid, legend, tick: finite(record.tick, 0), ticks: finite(record.ticks, 0),
    tickSeconds: finite(record.tick_seconds, 0.25), score: finite(record.score, 0),
    done: Boolean(record.done), chefs, items, orders,
    fires: /** @type {[number, number][]} */ (fires), served: finite(record.served, 0),
    missed: finite(record.missed, 0), wrong: finite(record.wrong, 0), result: kitchenResult(record.result),
    movesOnly: list(record.moves_only).map((role) => asText(role).slice(0, 40)) };
}

/**
 * @param {Json} value
 * @returns {KitchenResult | null}
 */
function kitchenResult(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  const record = keyed(value);
  /** @type {Record<string, number>} */
  const contribution = {};
  if (record.contribution && typeof record.contribution === "object") {
    for (const [role, share] of Object.entries(keyed(record.contribution))) {
      contribution[role.slice(0, 40)] = finite(share, 0);
    }
  }
  return { score: finite(record.score, 0), served: finite(record.served, 0),
    missed: finite(record.missed, 0), wrong: finite(record.wrong, 0), contribution };
}

/**
 * @param {number} seconds
 * @returns {string} "m:ss"
 */
function clockText(seconds) {
  const whole = Math.max(0, Math.ceil(seconds));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

/**
 * A macro action as the env writes it (`PREPARE(food="Beef", plate=true)`), in short words
 * for a bubble over the chef: "Prepare Beef, plate".
 * @param {string} macro
 * @returns {string}
 */
function macroWords(macro) {
  const parsed = parseAction(macro);
  if (!parsed) return shorten(macro, 40);
  const name = parsed.name.toLowerCase().replace(/_/g, " ");
  const words = Object.entries(parsed.args).flatMap(([key, value]) =>
    value === true ? [key] : value === false || value === "" || value === null ? [] : [asText(value)]);
  return [name[0].toUpperCase() + name.slice(1), words.join(", ")].filter(Boolean).join(" ");
}

/**
 * @param {string} dish  as the env names it: "BeefLettuceBurger"
 * @returns {string} in words: "Beef+lettuce burger"
 */
function dishWords(dish) {
  const words = dish.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase().replace(/ (?=.* burger$)/, "+");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** What a tile is, from the legend's words: decides how the tile is drawn. */
const TILE_KINDS = /** @type {const} */ ([
  ["wall", /wall/], ["floor", /floor|empty|ground/], ["serve", /serv|window|deliver/],
  ["trash", /trash|bin|garbage/], ["pan", /pan|stove|pot|grill/], ["board", /board|cut|chop/],
  ["beef", /beef/], ["lettuce", /lettuce/], ["bread", /bread|bun/], ["plate", /plate|dish/],
  ["extinguisher", /extinguish/], ["center", /cent(er|re)/], ["counter", /counter|table/],
]);

/**
 * @param {string} char
 * @param {Record<string, string>} legend
 * @returns {string} one of the TILE_KINDS' names, or "other"
 */
function tileKind(char, legend) {
  const words = (legend[char] || "").toLowerCase();
  if (!words) return char === " " || char === "." ? "floor" : char === "#" ? "wall" : "other";
  const found = TILE_KINDS.find(([, pattern]) => pattern.test(words));
  return found ? found[0] : "other";
}

/** Where a chef facing each way looks: [dx, dy]. */
const FACING = { up: [0, -1], down: [0, 1], left: [-1, 0], right: [1, 0] };

/** What each ingredient station hands out (drawn on it). */
const STATION_ITEMS = { beef: "Beef", lettuce: "Lettuce", bread: "Bread", plate: "Plate",
  extinguisher: "FireExtinguisher" };

/** The chefs' colours, in team order: the first member's chef is blue, the second's orange. */
const CHEF_COLOURS = ["#2f6fdb", "#e0762b", "#8a4fd0", "#2a9d5c"];

/** Ingredients by their state: raw, under way, ready, ruined. */
const ITEM_COLOURS = {
  Beef: { Fresh: "#e8707a", "In-progress": "#b5653a", "Well-cooked": "#7a4a2a", Overcooked: "#262626" },
  Lettuce: { Unchopped: "#2e8b3a", Chopped: "#8fd45e" },
};

/** A ring around an item in each status: under way, ready, ruined. */
const STATUS_RINGS = { "In-progress": "#f0a020", "Well-cooked": "#2fa84f", Chopped: "#2fa84f", Overcooked: "#d62828" };

/**
 * Each progress bar's colour: cooking (orange), then a cooked beef's time to overcooking and an
 * overcooked one's to the fire (red), chopping (green), putting out a fire (blue).
 * @param {KitchenItem} item
 * @returns {string}
 */
function progressColour(item) {
  if (item.name === "Beef") return item.status === "In-progress" ? "#f08c00" : "#d62828";
  return { Lettuce: "#37b24d", FireExtinguisher: "#1c7ed6" }[item.name] || "#868e96";
}

/**
 * Draws a kitchen on a canvas: the tiles (cached, they change only with the size), then what
 * changes every tick: items, fires, chefs, orders. Only fillText puts text on it, so no text
 * from the content can become markup.
 */
class KitchenPainter {
  /** @param {HTMLCanvasElement} canvas */
  constructor(canvas) {
    this.canvas = canvas;
    this.tile = 32;
    this.left = 0;
    this.top = 0;
    this.hud = 36;
    /** @type {HTMLCanvasElement | null} the tiles, drawn once per grid and size */
    this.background = null;
    this.backgroundKey = "";
  }

  /**
   * Size the canvas for `width` CSS pixels and the grid; the tile is as large as fits both the
   * width and about half of the window's height.
   * @param {KitchenContent} kitchen
   * @param {number} width  CSS pixels
   */
  layout(kitchen, width) {
    const rows = kitchen.grid.length;
    const cols = Math.max(...kitchen.grid.map((row) => row.length), 1);
    const room = Math.max(200, (window.innerHeight || 800) * 0.55);
    this.tile = Math.max(10, Math.min(72, Math.floor(Math.min(width / cols, room / rows))));
    this.hud = Math.max(34, Math.round(this.tile * 0.95));
    this.left = Math.floor((width - this.tile * cols) / 2);
    this.top = this.hud + 4;
    const height = this.top + this.tile * rows + 2;
    const ratio = window.devicePixelRatio || 1;
    const canvas = this.canvas;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    canvas.style.height = `${height}px`;
    Object.assign(canvas.dataset, { tile: String(this.tile), gridLeft: String(this.left),
      gridTop: String(this.top), drawnWidth: String(width) });
  }

  /**
   * @param {KitchenContent} kitchen
   * @param {{width: number, mine: string | null, replaying: boolean}} view
   */
  paint(kitchen, view) {
    this.layout(kitchen, view.width);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    const ratio = window.devicePixelRatio || 1;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.drawImage(this.tiles(kitchen, ratio), 0, 0);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    for (const { pos, item } of kitchen.items) this.item(ctx, item, ...this.centre(pos), this.tile * 0.3);
    for (const pos of kitchen.fires) this.fire(ctx, ...this.centre(pos));
    kitchen.chefs.forEach((chef, index) => this.chef(ctx, chef, index, chef.role === view.mine));
    // Labels last, so that a chef next to another never hides its name or its macro.
    kitchen.chefs.forEach((chef, index) => this.chefLabels(ctx, chef, index, chef.role === view.mine));
    for (const { pos, item } of kitchen.items) {
      const [x, y] = pos;
      this.progress(ctx, item, tileKind(kitchen.grid[y]?.[x] || "", kitchen.legend), ...this.centre(pos));
    }
    const badge = view.replaying ? `Replay · tick ${kitchen.tick}`
      : kitchen.result ? `Game over · score ${kitchen.result.score}` : "";
    const room = badge ? view.width - this.badge(ctx, badge, view.width) - 12 : view.width;
    this.orders(ctx, kitchen, room);
  }

  /**
   * @param {[number, number]} pos
   * @returns {[number, number]} the tile's centre in CSS pixels
   */
  centre([x, y]) {
    return [this.left + (x + 0.5) * this.tile, this.top + (y + 0.5) * this.tile];
  }

  /**
   * @param {KitchenContent} kitchen
   * @param {number} ratio  device pixels per CSS pixel
   * @returns {HTMLCanvasElement} the tiles, from the cache while grid and size are the same
   */
  tiles(kitchen, ratio) {
    const key = JSON.stringify([kitchen.grid, kitchen.legend, this.canvas.width, this.canvas.height,
      this.tile, this.left]);
    if (this.background && key === this.backgroundKey) return this.background;
    const background = document.createElement("canvas");
    background.width = this.canvas.width;
    background.height = this.canvas.height;
    const ctx = background.getContext("2d");
    if (ctx) {
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      kitchen.grid.forEach((row, y) => [...row].forEach((char, x) =>
        this.tileAt(ctx, tileKind(char, kitchen.legend), char, x, y)));
    }
    this.background = background;
    this.backgroundKey = key;
    return background;
  }

  /**
   * @param {CanvasRenderingContext2D} ctx
   * @param {string} kind
   * @param {string} char
   * @param {number} x
   * @param {number} y
   */
  tileAt(ctx, kind, char, x, y) {
    const t = this.tile;
    const px = this.left + x * t;
    const py = this.top + y * t;
    const cx = px + t / 2;
    const cy = py + t / 2;
    const colours = { wall: "#4b4f58", floor: "#f3ead8", serve: "#9ad29a", trash: "#b8bcc4", center: "#dcb68a" };
    ctx.fillStyle = Object.hasOwn(colours, kind)
      ? colours[/** @type {keyof typeof colours} */ (kind)] : "#c89b6d";
    ctx.fillRect(px, py, t, t);
    ctx.strokeStyle = kind === "floor" ? "rgba(0,0,0,0.06)" : "rgba(0,0,0,0.25)";
    ctx.lineWidth = 1;
    ctx.strokeRect(px + 0.5, py + 0.5, t - 1, t - 1);
    if (kind === "wall" || kind === "floor" || kind === "counter") return;
    if (kind === "center") { // where PASS_ON puts things for the partner: a dotted inset
      ctx.setLineDash([2, 3]);
      ctx.strokeStyle = "rgba(90, 60, 30, 0.55)";
      ctx.strokeRect(px + t * 0.12, py + t * 0.12, t * 0.76, t * 0.76);
      ctx.setLineDash([]);
      return;
    }
    if (kind === "pan") {
      this.disc(ctx, cx, cy, t * 0.36, "#33363b", "#16181b");
      ctx.fillStyle = "#16181b";
      ctx.fillRect(cx + t * 0.3, cy - t * 0.05, t * 0.2, t * 0.1);
    } else if (kind === "board") {
      ctx.fillStyle = "#f1d9a8";
      ctx.fillRect(px + t * 0.15, py + t * 0.2, t * 0.7, t * 0.6);
      ctx.strokeStyle = "#8a6a3a";
      ctx.strokeRect(px + t * 0.15, py + t * 0.2, t * 0.7, t * 0.6);
    } else if (kind === "serve") {
      this.label(ctx, "⇧", cx, cy - t * 0.12, t * 0.4, "#14532d");
      this.label(ctx, "serve", cx, cy + t * 0.22, t * 0.2, "#14532d");
      return;
    } else if (kind === "trash") {
      this.disc(ctx, cx, cy, t * 0.3, "#7d838c", "#4b4f58");
      this.label(ctx, "✕", cx, cy, t * 0.32, "#ffffff");
      return;
    } else if (["beef", "lettuce", "bread", "plate", "extinguisher"].includes(kind)) {
      ctx.fillStyle = "#8b5a2b";
      ctx.fillRect(px + t * 0.1, py + t * 0.1, t * 0.8, t * 0.8);
      const sample = STATION_ITEMS[/** @type {keyof typeof STATION_ITEMS} */ (kind)];
      this.item(ctx, { name: sample, status: kind === "beef" ? "Fresh" : kind === "lettuce" ? "Unchopped" : "",
        progress: null, contents: [] }, cx, cy - t * 0.06, t * 0.24);
    } else {
      this.label(ctx, char, cx, cy, t * 0.4, "#3b2a1a");
      return;
    }
    const letters = { pan: "pan", board: "cut", beef: "B", lettuce: "L", bread: "Br", plate: "P",
      extinguisher: "ext" };
    const letter = letters[/** @type {keyof typeof letters} */ (kind)] || "";
    this.label(ctx, letter, px + t * 0.2, py + t * 0.16, t * 0.2, "#fff8e6", "rgba(0,0,0,0.55)");
  }

  /**
   * Text centred on (x, y), `size` pixels high, with an optional plate behind it.
   * @param {CanvasRenderingContext2D} ctx
   * @param {string} text
   * @param {number} x
   * @param {number} y
   * @param {number} size
   * @param {string} colour
   * @param {string} [plate]
   */
  label(ctx, text, x, y, size, colour, plate) {
    ctx.font = `600 ${Math.max(8, Math.round(size))}px system-ui, sans-serif`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    if (plate) {
      const width = ctx.measureText(text).width + size * 0.6;
      ctx.fillStyle = plate;
      this.roundRect(ctx, x - width / 2, y - size * 0.65, width, size * 1.3, size * 0.3);
      ctx.fill();
    }
    ctx.fillStyle = colour;
    ctx.fillText(text, x, y);
  }

  /**
   * @param {CanvasRenderingContext2D} ctx
   * @param {number} x
   * @param {number} y
   * @param {number} r
   * @param {string} fill
   * @param {string} [stroke]
   */
  disc(ctx, x, y, r, fill, stroke) {
    ctx.beginPath();
    ctx.arc(x, y, Math.max(1, r), 0, Math.PI * 2);
    ctx.fillStyle = fill;
    ctx.fill();
    if (stroke) {
      ctx.lineWidth = Math.max(1, r * 0.15);
      ctx.strokeStyle = stroke;
      ctx.stroke();
    }
  }

  /**
   * @param {CanvasRenderingContext2D} ctx
   * @param {number} x
   * @param {number} y
   * @param {number} w
   * @param {number} h
   * @param {number} r
   */
  roundRect(ctx, x, y, w, h, r) {
    ctx.beginPath();
    ctx.moveTo(x + r, y);
    ctx.arcTo(x + w, y, x + w, y + h, r);
    ctx.arcTo(x + w, y + h, x, y + h, r);
    ctx.arcTo(x, y + h, x, y, r);
    ctx.arcTo(x, y, x + w, y, r);
    ctx.closePath();
  }

  /**
   * An item centred on (x, y), about `r` in radius; a plate with what is on it.
   * @param {CanvasRenderingContext2D} ctx
   * @param {KitchenItem} item
   * @param {number} x
   * @param {number} y
   * @param {number} r
   */
  item(ctx, item, x, y, r) {
    const { name, status } = item;
    if (item.contents.length && name !== "Plate") this.disc(ctx, x, y, r * 1.15, "#ffffff", "#9aa0a6");
    if (name === "Plate") {
      this.disc(ctx, x, y, r * 1.15, "#ffffff", "#9aa0a6");
      item.contents.forEach((inner, index) => {
        const shift = (index - (item.contents.length - 1) / 2) * r * 0.45;
        this.item(ctx, inner, x + shift, y + shift * 0.3, r * 0.62);
      });
    } else if (name === "Beef" || name === "Lettuce") {
      const colours = /** @type {Record<string, string>} */ (ITEM_COLOURS[name]);
      const fill = colours[status] || Object.values(colours)[0];
      if (name === "Lettuce" && status === "Chopped") {
        for (const dx of [-0.45, 0, 0.45]) {
          this.disc(ctx, x + dx * r, y + Math.abs(dx) * r * 0.4, r * 0.45, fill, "#3f7f2a");
        }
      } else {
        this.disc(ctx, x, y, r * 0.85, fill, "rgba(0,0,0,0.35)");
      }
    } else if (name === "Bread") {
      this.bun(ctx, x, y - r * 0.1, r, true);
      this.bun(ctx, x, y + r * 0.25, r, false);
    } else if (name.endsWith("Burger")) {
      this.bun(ctx, x, y - r * 0.35, r, true);
      if (name.includes("Lettuce")) {
        ctx.fillStyle = "#8fd45e";
        ctx.fillRect(x - r * 0.9, y - r * 0.2, r * 1.8, r * 0.22);
      }
      if (name.includes("Beef")) {
        ctx.fillStyle = "#7a4a2a";
        ctx.fillRect(x - r * 0.85, y + r * 0.02, r * 1.7, r * 0.3);
      }
      this.bun(ctx, x, y + r * 0.45, r, false);
    } else if (name === "BeefLettuce") {
      ctx.fillStyle = "#7a4a2a";
      ctx.fillRect(x - r * 0.8, y, r * 1.6, r * 0.35);
      ctx.fillStyle = "#8fd45e";
      ctx.fillRect(x - r * 0.85, y - r * 0.25, r * 1.7, r * 0.25);
    } else if (name === "FireExtinguisher") {
      ctx.fillStyle = "#d62828";
      this.roundRect(ctx, x - r * 0.4, y - r * 0.75, r * 0.8, r * 1.6, r * 0.3);
      ctx.fill();
      ctx.fillStyle = "#222";
      ctx.fillRect(x - r * 0.15, y - r * 1.0, r * 0.5, r * 0.25);
    } else {
      this.disc(ctx, x, y, r * 0.8, "#d0d0d0", "#777");
      this.label(ctx, (name || "?").slice(0, 2), x, y, r * 0.8, "#333");
    }
    const ring = STATUS_RINGS[/** @type {keyof typeof STATUS_RINGS} */ (status)];
    if (ring && name !== "Plate") {
      ctx.beginPath();
      ctx.arc(x, y, r * 1.1, 0, Math.PI * 2);
      ctx.lineWidth = Math.max(1.5, r * 0.16);
      ctx.strokeStyle = ring;
      ctx.stroke();
    }
  }

  /**
   * Half a bun: the top (a dome) or the bottom (a flat piece).
   * @param {CanvasRenderingContext2D} ctx
   * @param {number} x
   * @param {number} y
   * @param {number} r
   * @param {boolean} top
   */
  bun(ctx, x, y, r, top) {
    ctx.fillStyle = "#e3b35c";
    ctx.strokeStyle = "#a8782a";
    ctx.lineWidth = Math.max(1, r * 0.1);
    ctx.beginPath();
    if (top) ctx.ellipse(x, y, r * 0.9, r * 0.55, 0, Math.PI, 0);
    else ctx.rect(x - r * 0.85, y - r * 0.12, r * 1.7, r * 0.3);
    ctx.closePath();
    ctx.fill();
    ctx.stroke();
  }

  /**
   * A progress bar under an item that cooks in a pan, is chopped or puts out a fire (beef
   * elsewhere, on a plate say, is not cooking: no bar).
   * @param {CanvasRenderingContext2D} ctx
   * @param {KitchenItem} item
   * @param {string} kind  the kind of tile it lies on
   * @param {number} x
   * @param {number} y
   */
  progress(ctx, item, kind, x, y) {
    if (item.progress === null || item.progress <= 0 || item.progress >= 1) return;
    if (item.name === "Beef" && kind !== "pan") return;
    const t = this.tile;
    const colour = progressColour(item);
    ctx.fillStyle = "rgba(0,0,0,0.6)";
    ctx.fillRect(x - t * 0.42, y + t * 0.3, t * 0.84, Math.max(3, t * 0.12));
    ctx.fillStyle = colour;
    ctx.fillRect(x - t * 0.4, y + t * 0.31, t * 0.8 * item.progress, Math.max(2, t * 0.1));
  }

  /**
   * Flames on a tile.
   * @param {CanvasRenderingContext2D} ctx
   * @param {number} x
   * @param {number} y
   */
  fire(ctx, x, y) {
    const t = this.tile;
    const flame = (/** @type {number} */ scale, /** @type {string} */ colour) => {
      ctx.beginPath();
      ctx.moveTo(x, y - t * 0.45 * scale);
      ctx.quadraticCurveTo(x + t * 0.38 * scale, y, x, y + t * 0.35 * scale);
      ctx.quadraticCurveTo(x - t * 0.38 * scale, y, x, y - t * 0.45 * scale);
      ctx.fillStyle = colour;
      ctx.fill();
    };
    flame(1, "rgba(230, 57, 70, 0.9)");
    flame(0.7, "#f77f00");
    flame(0.4, "#fcbf49");
  }

  /**
   * A chef: a disc in the role's colour with a marker on the side it faces, and what it holds
   * held out on that side (its labels: see chefLabels).
   * @param {CanvasRenderingContext2D} ctx
   * @param {KitchenChef} chef
   * @param {number} index
   * @param {boolean} mine  the chef of the panel's seat: a white ring and "you"
   */
  chef(ctx, chef, index, mine) {
    const t = this.tile;
    const [x, y] = this.centre(chef.pos);
    const colour = CHEF_COLOURS[index % CHEF_COLOURS.length];
    const [dx, dy] = Object.hasOwn(FACING, chef.facing) ? FACING[/** @type {keyof typeof FACING} */ (chef.facing)]
      : FACING.down;
    if (mine) this.disc(ctx, x, y, t * 0.42, "#ffffff");
    this.disc(ctx, x, y, t * 0.36, colour, "rgba(0,0,0,0.45)");
    // the facing marker: a triangle on the disc's edge
    const tipX = x + dx * t * 0.48;
    const tipY = y + dy * t * 0.48;
    ctx.beginPath();
    ctx.moveTo(tipX, tipY);
    ctx.lineTo(x + dx * t * 0.3 - dy * t * 0.14, y + dy * t * 0.3 - dx * t * 0.14);
    ctx.lineTo(x + dx * t * 0.3 + dy * t * 0.14, y + dy * t * 0.3 + dx * t * 0.14);
    ctx.closePath();
    ctx.fillStyle = "#111";
    ctx.fill();
    if (chef.holding) this.item(ctx, chef.holding, x + dx * t * 0.28, y + dy * t * 0.28, t * 0.2);
  }

  /**
   * A chef's role above it and its running macro in a bubble below.
   * @param {CanvasRenderingContext2D} ctx
   * @param {KitchenChef} chef
   * @param {number} index
   * @param {boolean} mine
   */
  chefLabels(ctx, chef, index, mine) {
    const t = this.tile;
    const [x, y] = this.centre(chef.pos);
    const colour = CHEF_COLOURS[index % CHEF_COLOURS.length];
    const name = mine ? `${chef.role} (you)` : chef.role;
    this.label(ctx, shorten(name, 18), x, y - t * 0.62, Math.max(9, t * 0.2), "#ffffff", colour);
    if (chef.macro) {
      this.label(ctx, shorten(macroWords(chef.macro), 26), x, y + t * 0.66, Math.max(9, t * 0.19),
        "#1f2328", "rgba(255,255,255,0.9)");
    }
  }

  /**
   * The orders along the top, each with its dish, reward and a bar of the time it has left.
   * @param {CanvasRenderingContext2D} ctx
   * @param {KitchenContent} kitchen
   * @param {number} width
   */
  orders(ctx, kitchen, width) {
    const h = this.hud - 6;
    const cardWidth = Math.max(110, Math.min(220, h * 4.8));
    const fit = Math.max(1, Math.floor((width - 8) / (cardWidth + 6)));
    kitchen.orders.slice(0, fit).forEach((order, index) => {
      const x = 4 + index * (cardWidth + 6);
      ctx.fillStyle = "#fffaf0";
      ctx.strokeStyle = "#c8b89a";
      ctx.lineWidth = 1;
      this.roundRect(ctx, x, 3, cardWidth, h, 5);
      ctx.fill();
      ctx.stroke();
      this.item(ctx, { name: order.dish, status: "", progress: null, contents: [] }, x + h * 0.45, 3 + h * 0.45,
        h * 0.32);
      ctx.font = `600 ${Math.max(9, Math.round(h * 0.26))}px system-ui, sans-serif`;
      ctx.textAlign = "left";
      ctx.textBaseline = "middle";
      ctx.fillStyle = "#1f2328";
      ctx.fillText(`${shorten(dishWords(order.dish), 22)} +${order.reward}`, x + h * 0.9, 3 + h * 0.38,
        cardWidth - h);
      const share = order.total > 0 ? Math.max(0, Math.min(1, order.remaining / order.total)) : 0;
      ctx.fillStyle = "#e9ecef";
      ctx.fillRect(x + h * 0.9, 3 + h * 0.68, cardWidth - h - 4, Math.max(3, h * 0.16));
      ctx.fillStyle = share > 0.5 ? "#2fa84f" : share > 0.25 ? "#f0a020" : "#d62828";
      ctx.fillRect(x + h * 0.9, 3 + h * 0.68, (cardWidth - h - 4) * share, Math.max(3, h * 0.16));
    });
    const more = kitchen.orders.length - fit;
    if (more > 0) this.label(ctx, `+${more}`, width - 14, 3 + h / 2, h * 0.35, "#1f2328");
  }

  /**
   * A badge at the right of the orders' row: the replay, or the game over.
   * @param {CanvasRenderingContext2D} ctx
   * @param {string} text
   * @param {number} width
   * @returns {number} the width it takes
   */
  badge(ctx, text, width) {
    const size = Math.max(11, Math.min(20, this.hud * 0.4));
    ctx.font = `600 ${Math.round(size)}px system-ui, sans-serif`;
    const w = ctx.measureText(text).width + size * 0.6;
    this.label(ctx, text, width - w / 2 - 6, this.hud / 2, size, "#ffffff", "rgba(20, 20, 30, 0.8)");
    return w;
  }
}

/**
 * The last ~20 s of kitchen frames the panel received, and their playback on request.
 */
class KitchenReplay {
  constructor() {
    /** @type {KitchenContent[]} */
    this.frames = [];
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
    this.index = -1;
  }

  /** @param {KitchenContent} kitchen  a frame as it arrived (a later tick than the last) */
  keep(kitchen) {
    const last = this.frames[this.frames.length - 1];
    if (last && last.tick === kitchen.tick) this.frames[this.frames.length - 1] = kitchen;
    else if (!last || kitchen.tick > last.tick) this.frames.push(kitchen);
    else this.frames = [kitchen]; // a new game (or a whole state after a gap): start again
    const span = KITCHEN_REPLAY_SECONDS / Math.max(kitchen.tickSeconds, 0.01); // in ticks
    while (this.frames.length > 1 && this.frames[0].tick < kitchen.tick - span) this.frames.shift();
  }

  get playing() {
    return this.timer !== null;
  }

  /**
   * Show the kept frames one after another, at the game's pace (a frame for each tick kept).
   * @param {(kitchen: KitchenContent) => void} show
   * @param {() => void} ended
   */
  play(show, ended) {
    this.stop();
    const frames = [...this.frames];
    if (!frames.length) return ended();
    let index = 0;
    const next = () => {
      const frame = frames[index];
      show(frame);
      index += 1;
      if (index >= frames.length) {
        this.timer = null;
        ended();
        return;
      }
      const ticks = Math.max(1, frames[index].tick - frame.tick);
      this.timer = setTimeout(next, Math.min(1000, ticks * frame.tickSeconds * 1000));
    };
    this.timer = setTimeout(next, 0);
  }

  stop() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** How much of the game the replay keeps, in seconds. */
const KITCHEN_REPLAY_SECONDS = 20;

/** The keys that move the chef: arrows, and WASD for those used to it. */
const MOVE_KEYS = {
  ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right",
  w: "up", s: "down", a: "left", d: "right", W: "up", S: "down", A: "left", D: "right",
};

/** The keys that interact with the faced tile (one press, one interaction). */
const INTERACT_KEYS = new Set([" ", "e", "E"]);

/** The dishes of the cookbook: button labels, and the env's names for them. */
const KITCHEN_DISHES = [["Beef burger", "BeefBurger"], ["Lettuce burger", "LettuceBurger"],
  ["Beef-lettuce burger", "BeefLettuceBurger"]];

/**
 * The macro buttons: a label, the action, a data-macro name for tests, and the key that sends
 * it too (if any). PASS_ON is built from what the chef holds (see passOn).
 * @type {{group: string, label: string, macro: string, action: Action, key?: string}[]}
 */
const MACRO_BUTTONS = [
  ...[["Beef", "1"], ["Lettuce", "2"], ["Bread", "3"]].map(([food, key]) => ({ group: "Prepare",
    label: food, macro: `prepare-${food.toLowerCase()}`, action: { name: "PREPARE", args: { food } }, key })),
  ...KITCHEN_DISHES.map(([label, food]) => ({ group: "Assemble", label, macro: `assemble-${food}`,
    action: { name: "ASSEMBLE", args: { food } } })),
  ...KITCHEN_DISHES.map(([label, food]) => ({ group: "Serve", label, macro: `serve-${food}`,
    action: { name: "SERVE", args: { food } } })),
  { group: "Other", label: "Put out fire", macro: "put-out-fire", action: { name: "PUT_OUT_FIRE", args: {} },
    key: "f" },
  { group: "Other", label: "Clean a counter", macro: "clean-a-counter",
    action: { name: "CLEAN_A_COUNTER", args: {} } },
];

/**
 * `kitchen`: the real-time cooking game, drawn on a canvas from each tick's content. The seat
 * whose role has a chef plays: arrow keys move, Space or E interacts, buttons run macro
 * actions. The focusable kitchen keeps every key it gets from JupyterLab (Enter would edit
 * the cell, Shift+Enter run it, arrows select cells); Escape hands the focus back to the
 * notebook. A watcher, or a seat without a chef, sees the kitchen without controls. After the
 * game: the score, the failures, each role's contribution and a replay of the last ~20 s.
 * @implements {ComponentView}
 */
class KitchenView {
  /**
   * @param {Component} component
   * @param {ViewHost} host
   */
  constructor(component, host) {
    this.name = component.name;
    this.host = host;
    /** @type {KitchenContent | null} the latest content (what the game is at) */
    this.kitchen = null;
    /** @type {KitchenContent | null} what the canvas shows now (a replayed frame, or the latest) */
    this.shown = null;
    this.replay = new KitchenReplay();
    this.lastMove = 0; // when a held arrow last sent a move (repeats go at the game's pace)
    this.frame = 0; // a requestAnimationFrame pending
    this.width = 0;
    this.canvas = h("canvas", { class: "cogym-kitchen-canvas", testid: "kitchen-canvas" });
    this.painter = new KitchenPainter(this.canvas);
    this.stage = h("div", { class: "cogym-kitchen-stage", testid: "kitchen-stage", tabindex: "0",
      role: "application", "aria-roledescription": "kitchen",
      on: { keydown: (event) => this.onKey(event), keypress: (event) => this.keepKey(event),
        keyup: (event) => this.keepKey(event), focus: () => this.focused(true),
        blur: () => this.focused(false) } }, this.canvas);
    this.status = h("div", { class: "cogym-kitchen-status", testid: "kitchen-status" });
    this.hint = h("div", { class: "cogym-muted", testid: "kitchen-keys" });
    this.plate = h("input", { type: "checkbox", testid: "kitchen-plate" });
    this.passOnButton = h("button", { testid: "kitchen-macro", dataset: { macro: "pass-on" }, text: "Pass on",
      on: { click: () => this.passOn() } });
    this.controls = h("div", { class: "cogym-kitchen-controls", testid: "kitchen-controls", hidden: true },
      this.macroGroups());
    this.result = h("div", { class: "cogym-kitchen-result", testid: "kitchen-result", hidden: true });
    this.replayButton = h("button", { testid: "kitchen-replay", text: `▶ Replay the last ${KITCHEN_REPLAY_SECONDS} s`,
      on: { click: () => this.startReplay() } });
    this.replayStop = h("button", { testid: "kitchen-replay-stop", text: "■ Stop", hidden: true,
      on: { click: () => this.stopReplay() } });
    this.replayState = h("span", { class: "cogym-muted", testid: "kitchen-replay-state" });
    // A game with a person in it waits for them: the session's clock starts at their first
    // action, which Start sends (a wait) if no game key did first.
    this.startSent = false;
    this.startButton = h("button", { class: "cogym-primary", testid: "kitchen-start", text: "▶ Start the game",
      on: { click: () => this.start() } });
    this.starter = h("div", { class: "cogym-row cogym-kitchen-start", testid: "kitchen-starter", role: "status",
      hidden: true }, this.startButton, h("span", { class: "cogym-muted", testid: "kitchen-start-note",
      text: "The clock waits for you: it starts when you press Start (or Enter in the kitchen), or play a key." }));
    this.body = h("div", { class: "cogym-kitchen", testid: "kitchen" }, this.status, this.starter, this.stage,
      this.hint, this.controls, this.result);
    // The canvas follows the box's width (the panel's column, a resized window) and the
    // window's height: both redraw at the new size.
    this.resizes = new ResizeObserver(() => this.schedule());
    this.resizes.observe(this.stage);
    /** @type {() => void} */
    this.onWindowResize = () => (this.body.isConnected ? this.schedule()
      : window.removeEventListener("resize", this.onWindowResize));
    window.addEventListener("resize", this.onWindowResize);
    this.update(component);
  }

  /** @returns {HTMLElement[]} a row of buttons for each group of macro actions */
  macroGroups() {
    /** @type {Map<string, HTMLElement>} */
    const rows = new Map();
    for (const spec of MACRO_BUTTONS) {
      if (!rows.has(spec.group)) {
        rows.set(spec.group, h("div", { class: "cogym-kitchen-group", role: "group", "aria-label": spec.group },
          h("span", { class: "cogym-kitchen-group-name", text: spec.group }),
          spec.group === "Other" ? this.passOnButton : null));
      }
      const key = spec.key ? ` (key ${spec.key.toUpperCase()})` : "";
      /** @type {HTMLElement} */ (rows.get(spec.group)).append(h("button", { testid: "kitchen-macro",
        dataset: { macro: spec.macro }, text: spec.label, title: `${spec.group} ${spec.label}${key}`,
        on: { click: () => this.sendMacro(spec.action) } }));
    }
    rows.get("Prepare")?.append(h("label", { class: "cogym-kitchen-plate" }, this.plate, " on a plate"));
    return [...rows.values()];
  }

  /** @param {Component} component */
  update(component) {
    const kitchen = kitchenContent(component.content);
    if (!kitchen) {
      this.status.textContent = "The kitchen is not open yet.";
      return;
    }
    this.kitchen = kitchen;
    this.replay.keep(kitchen);
    if (!this.replay.playing) this.shown = kitchen;
    this.refresh();
    this.schedule();
  }

  /** The seat's chef, when it has one and may act now. */
  get mine() {
    const role = this.host.role;
    return this.kitchen?.chefs.find((chef) => chef.role === role) || null;
  }

  /** @returns {boolean} the seat has a chef, the game runs and the panel may act */
  canPlay() {
    const kitchen = this.kitchen;
    return Boolean(kitchen && this.mine && !this.host.readonly && !this.host.done()
      && !kitchen.done && !kitchen.result);
  }

  /** @returns {boolean} the seat's chef may run macro actions (people may not, unless the
   * kitchen was started with person_macros=true, as the paper's people had none) */
  macrosAllowed() {
    const role = this.host.role;
    return !role || !this.kitchen?.movesOnly.includes(role);
  }

  /** The text parts, the controls and the result: everything but the canvas. */
  refresh() {
    const kitchen = /** @type {KitchenContent} */ (this.kitchen);
    const left = Math.max(0, kitchen.ticks - kitchen.tick) * kitchen.tickSeconds;
    this.status.replaceChildren(
      h("span", { testid: "kitchen-score", text: `Score ${kitchen.score}` }),
      h("span", { testid: "kitchen-time", text: `${clockText(left)} left` }),
      h("span", { testid: "kitchen-tick", text: `tick ${kitchen.tick} of ${kitchen.ticks}` }),
      h("span", { testid: "kitchen-counts",
        text: `served ${kitchen.served} · missed ${kitchen.missed} · wrong ${kitchen.wrong}` }));
    Object.assign(this.body.dataset, { tick: String(kitchen.tick), score: String(kitchen.score) });
    const playing = this.canPlay();
    const ended = Boolean(kitchen.result || kitchen.done || this.host.done());
    this.body.dataset.playing = String(playing);
    this.starter.hidden = !this.waitsForStart();
    this.body.dataset.clock = kitchen.tick > 0 || !playing ? "running" : this.startSent ? "starting" : "waiting";
    const macros = this.macrosAllowed();
    this.controls.hidden = !playing || !macros;
    this.stage.setAttribute("aria-label", playing
      ? "Kitchen: arrow keys move your chef, Space interacts, Escape returns to the notebook"
      : "Kitchen (view only)");
    this.hint.textContent = playing
      ? "Click the kitchen to play: ← ↑ → ↓ move (or WASD), Space or E interacts with what you face, "
        + (macros ? "1 2 3 prepare beef, lettuce, bread, F puts out a fire, " : "")
        + "Esc gives the keys back to the notebook."
      : ended ? "" : this.host.readonly ? `Watching: ${this.host.role || "this member"} plays; nothing here acts.`
        : "No chef in this game is yours: you watch the kitchen.";
    this.hint.hidden = !this.hint.textContent;
    const held = this.mine?.holding;
    this.passOnButton.textContent = held ? `Pass on ${held.name}` : "Pass on";
    this.passOnButton.disabled = !held;
    if (ended) this.showResult(kitchen);
    this.result.hidden = !ended;
  }

  /** @returns {boolean} the seat plays and the game's clock has not been started yet */
  waitsForStart() {
    return this.canPlay() && this.kitchen?.tick === 0 && !this.startSent;
  }

  /** Start: the session's clock starts at the person's first action (here a wait). */
  start() {
    if (!this.waitsForStart()) return;
    this.host.send({ name: "WAIT_TEAMMATE_CONTINUE", args: {} });
    this.played();
    this.stage.focus({ preventScroll: true });
  }

  /** An action went out: the clock starts with it, so Start is no longer needed. */
  played() {
    if (this.startSent || this.kitchen?.tick !== 0) return;
    this.startSent = true;
    this.refresh();
  }

  /** @param {KitchenContent} kitchen  the last frame: the result, or the counts so far */
  showResult(kitchen) {
    const result = kitchen.result || { score: kitchen.score, served: kitchen.served, missed: kitchen.missed,
      wrong: kitchen.wrong, contribution: {} };
    const figure = (/** @type {string} */ label, /** @type {number} */ value, /** @type {string} */ id) =>
      h("div", { class: "cogym-kitchen-figure" }, h("span", { class: "cogym-muted", text: label }),
        h("strong", { testid: id, text: String(value) }));
    const shares = Object.entries(result.contribution);
    this.result.replaceChildren(...[
      h("h5", { text: "Game over" }),
      h("div", { class: "cogym-kitchen-figures" }, figure("Score", result.score, "kitchen-result-score"),
        figure("Served", result.served, "kitchen-result-served"),
        figure("Missed", result.missed, "kitchen-result-missed"),
        figure("Wrong dish", result.wrong, "kitchen-result-wrong")),
      shares.length ? h("div", { class: "cogym-kitchen-shares" }, h("span", { class: "cogym-muted",
        text: "Contribution (each role's share of the key steps of the dishes served)" }),
      shares.map(([role, share]) => {
        const percent = Math.round(Math.max(0, Math.min(1, share)) * 100);
        return h("div", { class: "cogym-kitchen-share", testid: "kitchen-contribution", dataset: { role } },
          h("span", { class: "cogym-kitchen-share-role", text: role === this.host.role && !this.host.readonly
            ? `${role} (you)` : role }),
          h("span", { class: "cogym-kitchen-share-bar" }, h("span", { style: `width: ${percent}%` })),
          h("span", { testid: "kitchen-contribution-value", text: `${percent}%` }));
      })) : null,
      h("div", { class: "cogym-row" }, this.replayButton, this.replayStop, this.replayState),
    ].filter((node) => node !== null));
    this.replayButton.disabled = this.replay.frames.length < 2;
    if (this.replayButton.disabled && !this.replay.playing) {
      this.replayState.textContent = "No replay: this panel saw too little of the game.";
    }
  }

  /** Draw on the next frame: several updates before it draw once. */
  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  draw() {
    if (!this.shown || !this.body.isConnected) return;
    const width = Math.floor(this.stage.clientWidth);
    if (width <= 0) return;
    this.width = width;
    const mine = this.host.readonly ? null : this.host.role || null;
    this.painter.paint(this.shown, { width, mine, replaying: this.replay.playing });
    this.canvas.dataset.shownTick = String(this.shown.tick);
  }

  /** @param {boolean} focused */
  focused(focused) {
    this.stage.dataset.focused = String(focused);
  }

  /**
   * Keys in the kitchen never reach JupyterLab: it reads keys at the document in the bubble
   * phase (since 4.1) and skips a region marked data-lm-suppress-shortcuts (the panel's root
   * is), and this stops each key here too, so Enter, Shift+Enter, arrows, A, B, X, D D (cell
   * commands) do nothing to the notebook. Game keys also preventDefault (no page scroll).
   * Tab moves on as usual, and keys with Ctrl, Alt or Cmd (but Enter) stay the browser's and
   * JupyterLab's. Escape hands the keys back to the notebook.
   * @param {KeyboardEvent} event
   */
  onKey(event) {
    if (event.isComposing) return;
    if (!this.keepKey(event)) return;
    if (event.key === "Escape") {
      event.preventDefault();
      this.releaseFocus();
      return;
    }
    const move = MOVE_KEYS[/** @type {keyof typeof MOVE_KEYS} */ (event.key)];
    const macro = this.macrosAllowed()
      ? MACRO_BUTTONS.find((spec) => spec.key && spec.key === event.key.toLowerCase()) : undefined;
    if (move || INTERACT_KEYS.has(event.key) || event.key === "Enter" || macro) event.preventDefault();
    if (!this.canPlay() || event.shiftKey) return;
    if (event.key === "Enter" && this.waitsForStart()) {
      this.start();
      return;
    }
    if (move) {
      // A held arrow repeats: one move a tick, so the chef's queue does not fill up.
      const now = performance.now();
      const pace = (this.kitchen?.tickSeconds || 0.25) * 1000;
      if (event.repeat && now - this.lastMove < pace) return;
      this.lastMove = now;
      this.host.send({ name: "MOVE", args: { direction: move } });
      this.played();
    } else if (INTERACT_KEYS.has(event.key)) {
      if (!event.repeat) this.host.send({ name: "INTERACT", args: {} });
      this.played();
    } else if (macro && !event.repeat) {
      this.sendMacro(macro.action, false);
    }
  }

  /**
   * Stop a key event here, unless it is Tab (focus moves on) or a shortcut with Ctrl, Alt or
   * Cmd other than Enter (the browser's and JupyterLab's). Also for keypress and keyup.
   * @param {KeyboardEvent} event
   * @returns {boolean} whether the key stays in the kitchen
   */
  keepKey(event) {
    if (event.key === "Tab" || ((event.ctrlKey || event.metaKey || event.altKey) && event.key !== "Enter")) {
      return false;
    }
    event.stopPropagation();
    return true;
  }

  /**
   * Escape: the notebook gets the keys back. The nearest focusable element around the panel
   * (in JupyterLab, the cell or the notebook: command mode, as after Escape in a cell) takes
   * the focus; elsewhere the focus just leaves the kitchen.
   */
  releaseFocus() {
    const host = this.body.closest("[data-testid=cogym-panel]")?.parentElement?.closest("[tabindex]");
    this.stage.blur();
    if (host instanceof HTMLElement) host.focus({ preventScroll: true });
  }

  /**
   * @param {Action} action  a macro action
   * @param {boolean} [refocus]  give the keys back to the kitchen (after a click on a button)
   */
  sendMacro(action, refocus = true) {
    if (!this.canPlay()) return;
    const args = action.name === "PREPARE" ? { ...action.args, plate: this.plate.checked } : action.args;
    this.host.send({ name: action.name, args });
    this.played();
    if (refocus) this.stage.focus({ preventScroll: true });
  }

  /** Pass on what the chef holds: the central counter, for the partner. */
  passOn() {
    const held = this.mine?.holding;
    if (!held) return;
    const args = held.status ? { thing: held.name, thing_status: held.status } : { thing: held.name };
    this.sendMacro({ name: "PASS_ON", args });
  }

  startReplay() {
    this.replayButton.hidden = true;
    this.replayStop.hidden = false;
    this.body.dataset.replaying = "true";
    this.replay.play((frame) => {
      this.shown = frame;
      this.replayState.textContent = `Replaying: tick ${frame.tick}`;
      this.canvas.dataset.replayTick = String(frame.tick);
      this.draw();
    }, () => this.stopReplay());
  }

  stopReplay() {
    this.replay.stop();
    this.shown = this.kitchen;
    this.replayButton.hidden = false;
    this.replayStop.hidden = true;
    this.body.dataset.replaying = "false";
    this.replayState.textContent = this.replay.frames.length > 1
      ? `Replay over (ticks ${this.replay.frames[0].tick}–${this.replay.frames[this.replay.frames.length - 1].tick}).`
      : "";
    this.draw();
  }
}

// -- panel views ----------------------------------------------------------------------------

/** @type {Record<string, string>} */
const CONNECTION_LABELS = { open: "connected", connecting: "connecting…", closed: "disconnected" };

/** The header: the task, the person's role, the connection, step counts and the last event. */
class HeaderView {
  /**
   * @param {string} role
   * @param {DescribeAction} describe  an action in plain words
   * @param {boolean} [readonly]  watch mode: the header says whose view it follows
   */
  constructor(role, describe, readonly = false) {
    this.describe = describe;
    this.title = h("span", { class: "cogym-title", text: "Co-Gym session" });
    this.connection = h("span", { class: "cogym-connection cogym-muted",
      testid: "connection-status", dataset: { state: "connecting" }, text: "connecting…" });
    this.steps = h("span", { class: "cogym-muted", testid: "step-counts" });
    this.lastEvent = h("span", { class: "cogym-muted", testid: "last-event" });
    // The task in its own words: its first line always shown, the rest one click away.
    this.briefSummary = h("summary", { class: "cogym-task-summary" });
    this.briefText = h("div", { class: "cogym-markdown" });
    this.brief = h("details", { class: "cogym-task", testid: "task-brief", hidden: true },
      this.briefSummary, this.briefText);
    this.root = h("div", { class: "cogym-header" }, this.title,
      readonly
        ? h("span", { class: "cogym-watching", testid: "your-role", dataset: { watching: role },
          text: `Watching ${role} (read-only)` })
        : h("span", { class: "cogym-muted", testid: "your-role", text: `you are ${role}` }),
      this.connection, this.steps, this.lastEvent, this.brief);
  }

  /**
   * @param {string | undefined} task  the task's name
   * @param {string} [description]  what the task asks, as it tells every member
   */
  setTask(task, description) {
    this.title.textContent = task ? `Co-Gym · ${task}` : "Co-Gym session";
    const text = asText(description).trim();
    this.brief.hidden = !text;
    if (!text) return;
    this.briefSummary.textContent = "Task: " + shorten(text.split("\n")[0], 160);
    this.briefText.innerHTML = renderMarkdown(text); // escaped first: see renderMarkdown
  }

  /** @param {ConnectionState} state */
  setConnection(state) {
    this.connection.dataset.state = state;
    this.connection.textContent = CONNECTION_LABELS[state] || state;
  }

  /** @param {Notification} notification */
  update(notification) {
    const counts = notification.step_counts || {};
    const limits = notification.step_limits || {};
    this.steps.textContent = stepCountWords(counts, limits).join(" · ");
    this.steps.title = Object.keys(counts).length
      ? "Steps: how many actions each member took so far (a message, an edit, a search). A "
        + "member with a limit stops when it has used them all." : "";
    const event = notification.event || {};
    const actor = event.actor ? event.actor + ": " : "";
    const prefix = `#${notification.seq} ${actor}`;
    if (event.type === "sync") {
      this.lastEvent.textContent = "";
    } else if (event.type === "edit") { // live typing: its action is a Yjs update, not words
      this.lastEvent.textContent = `${prefix}edited the text`;
    } else if (event.action) {
      showAction(this.lastEvent, event.action, shorten(this.describe(event.action), 120), prefix);
    } else {
      this.lastEvent.textContent = prefix + (event.type || "");
    }
  }
}

/** Text that is for developers: an exception's class, a traceback, an HTTP status. */
const TECHNICAL = /\b[A-Z][A-Za-z]*(?:Error|Exception)\b|\bTraceback\b|\bHTTP \d{3}\b/;

/**
 * An error for the person: plain words as they are; technical text (an exception, an HTTP
 * status) becomes a plain sentence, the original kept as the detail.
 * @param {unknown} text
 * @returns {{plain: string, detail: string}}
 */
function plainError(text) {
  const raw = asText(text);
  if (!TECHNICAL.test(raw)) return { plain: raw, detail: "" };
  const head = /^([^:.]{1,60}) failed\b/.exec(raw);
  const what = head ? `${head[1]} failed` : "That did not work";
  return { plain: `${what}: something went wrong behind the panel. Try again in a moment; if it `
    + "keeps happening, the details below help whoever runs the server.", detail: raw };
}

/**
 * The error banner: the last refusal or error for the person, in plain words. It stays until
 * the person dismisses it: a burst of actions must not hide its own refusal.
 */
class ErrorBanner {
  constructor() {
    this.refusedCount = 0; // actions refused since the person last dismissed the error
    this.text = h("span", { testid: "panel-error-text" });
    // Technical detail (an exception, an HTTP status) is kept one click away, never the text.
    this.detailText = h("pre", { class: "cogym-pre" });
    this.detail = h("details", { class: "cogym-error-detail", testid: "panel-error-detail",
      hidden: true }, h("summary", { text: "Details" }), this.detailText);
    const dismiss = h("button", { class: "cogym-dismiss", testid: "panel-error-dismiss",
      title: "Dismiss", "aria-label": "Dismiss", text: "×", on: { click: () => this.dismiss() } });
    this.root = h("div", { class: "cogym-error", testid: "panel-error", role: "alert",
      hidden: true }, h("span", {}, this.text, this.detail), dismiss);
  }

  /**
   * @param {unknown} text
   * @param {string} [code]  data-code, e.g. "rate_limited"
   */
  show(text, code = "error") {
    const { plain, detail } = plainError(text);
    this.text.textContent = plain;
    this.detailText.textContent = detail;
    this.detail.hidden = !detail;
    this.detail.open = false;
    this.root.dataset.code = code;
    this.root.hidden = false;
  }

  /** @param {ErrorFrame} frame  a refused action: shown with the count refused so far */
  refused(frame) {
    this.refusedCount += 1;
    const count = this.refusedCount > 1 ? ` (${this.refusedCount} actions refused so far)` : "";
    this.show(`${frame.error || "The server refused that action."}${count}`, frame.code || "error");
  }

  dismiss() {
    this.root.hidden = true;
    this.refusedCount = 0;
  }
}

/**
 * @param {string} name  an action's name, e.g. "FLIGHT_SEARCH"
 * @returns {string} it in words: "Flight search"
 */
function actionWords(name) {
  return capital(name.toLowerCase().replaceAll("_", " "));
}

/**
 * The search box over a component that search actions fill (`searches` in their specs): a
 * field per param of the chosen action (a picker when several fill the component) and Search.
 * Enter in a field searches (Shift+Enter does nothing: a search is one line); Escape clears the
 * fields, and on empty fields leaves them. The box is built once, so what is typed survives updates.
 */
class SearchBar {
  /**
   * @param {ActionSpec[]} specs  the actions that fill the component, at least one
   * @param {ViewHost} host  (an EditorHost is one)
   * @param {string} title  the component's title, for the fields' labels
   * @param {{send?: (action: Action) => void, testid?: string}} [options]  `send`: how the
   *   search goes out (a plan step's box wraps it in SEARCH_IN_STEP; default: the action
   *   itself); `testid`: a prefix for the box's test ids, so two boxes can be told apart
   */
  constructor(specs, host, title, options = {}) {
    this.specs = specs;
    this.host = host;
    this.title = title;
    this.sender = options.send || ((/** @type {Action} */ action) => this.host.send(action));
    const id = options.testid || "";
    this.testid = id;
    this.fields = h("div", { class: "cogym-search-fields" });
    this.tool = /** @type {HTMLSelectElement} */ (h("select", { testid: `${id}search-tool`,
      "aria-label": `What to search in ${title}`, hidden: specs.length < 2,
      on: { change: () => this.fill() } },
    specs.map((spec) => h("option", { value: spec.name, text: actionWords(spec.name) }))));
    this.submit = h("button", { class: "cogym-primary", testid: `${id}search-submit`, text: "Search",
      on: { click: () => this.search() } });
    this.hint = h("div", { class: "cogym-muted", testid: `${id}search-hint` });
    this.root = h("div", { class: "cogym-search", testid: `${id}search-box`, role: "search" },
      h("div", { class: "cogym-row" }, this.tool, this.fields, this.submit), this.hint);
    this.fill();
  }

  /** @returns {ActionSpec} the action the box runs now */
  spec() {
    return this.specs.find((spec) => spec.name === this.tool.value) || this.specs[0];
  }

  /** One field per param of the chosen action; words typed in a field of the same name stay. */
  fill() {
    const spec = this.spec();
    /** @type {Record<string, string>} */
    const typed = {};
    for (const input of this.inputs()) typed[input.dataset.param || ""] = input.value;
    this.fields.replaceChildren(...(spec.params || []).map((param) => {
      const words = param.description || param.name;
      const input = /** @type {HTMLInputElement} */ (h("input", { type: "search",
        testid: `${this.testid}search-field`, placeholder: words, "aria-label": `${actionWords(spec.name)}: `
          + `${words} (Enter searches, Escape clears)`,
        dataset: { param: param.name, type: param.type }, enterkeyhint: "search",
        on: { keydown: (event) => this.onKey(/** @type {KeyboardEvent} */ (event)) } }));
      input.value = typed[param.name] || "";
      return input;
    }));
    this.root.dataset.action = spec.name;
    this.hint.textContent = spec.description || "";
    this.setDone(this.host.done());
  }

  /** @returns {HTMLInputElement[]} */
  inputs() {
    return /** @type {HTMLInputElement[]} */ ([...this.fields.querySelectorAll("input")]);
  }

  /** @param {boolean} done  the session ended: nothing more to search */
  setDone(done) {
    this.submit.disabled = done;
    for (const input of this.inputs()) input.readOnly = done;
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    if (event.key === "Enter" && !event.isComposing) {
      event.preventDefault();
      if (!event.shiftKey) this.search();
    } else if (event.key === "Escape") {
      const inputs = this.inputs();
      if (!inputs.some((input) => input.value)) return; // the panel's key guard leaves the field
      event.preventDefault();
      event.stopPropagation(); // the first Escape clears, the focus stays for a new search
      for (const input of inputs) input.value = "";
    }
  }

  /** Sends the chosen action with what the fields hold; an empty required field is asked for. */
  search() {
    if (this.host.done() || this.host.readonly) return;
    const spec = this.spec();
    const missing = this.inputs().find((input) => !input.value.trim()
      && (spec.params || []).find((param) => param.name === input.dataset.param)?.required);
    if (missing) {
      missing.focus();
      this.hint.textContent = `Fill in “${missing.placeholder}” first.`;
      return;
    }
    this.hint.textContent = spec.description || "";
    this.sender({ name: spec.name, args: readArgs(this.fields) });
  }
}

/**
 * The workspace: one box per component of the seat's view, in the view's order, each with the
 * content view of its render type. A box whose content changed flashes.
 */
export class WorkspaceView {
  /** @param {EditorHost} editorHost */
  constructor(editorHost) {
    this.privateBadge = "only you"; // a watcher sees another member's: "only <role>"
    this.editorHost = editorHost;
    /** @type {Map<string, ComponentEntry>} */
    this.entries = new Map();
    this.root = h("div", { class: "cogym-workspace", testid: "workspace" });
    // "+ New plan" sits after the last plan, where the session offers NEW_PLAN.
    this.newPlan = new NewPlanForm(editorHost);
  }

  /**
   * @param {number} index
   * @returns {Element | null} the workspace's index-th box ("+ New plan" is not one)
   */
  boxAt(index) {
    return [...this.root.children].filter((node) => node !== this.newPlan.root)[index] || null;
  }

  /**
   * @param {Component[]} components
   * @param {boolean} flashChanges  false for the first notification: nothing changed yet
   * @param {number} seq  the notification's number, for data-changed-seq
   */
  update(components, flashChanges, seq) {
    /** @type {Set<string>} */
    const seen = new Set();
    // "+ New plan" moves after a new last plan: a move loses the focus, so it is noted first.
    const keyboardOnNewPlan = document.activeElement === this.newPlan.open;
    /** @type {PlanView | null} a plan that came with this update */
    let newPlan = null;
    components.forEach((component, index) => {
      seen.add(component.name);
      let entry = this.entries.get(component.name);
      if (entry && entry.renderType !== component.render_type) {
        entry.box.remove();
        entry = undefined;
      }
      // The seat's copy hands back the very object it showed for a component that did not
      // change: nothing to compare then.
      const json = entry && entry.component === component ? entry.json
        : JSON.stringify(component.content);
      if (!entry) {
        entry = this.create(component, json);
        this.entries.set(component.name, entry);
        if (entry.view instanceof PlanView && this.entries.size > 1) newPlan = entry.view;
      } else if (entry.json !== json) {
        entry.view.update(component);
        entry.json = json;
        // The kitchen changes every tick: a flash each time would only blink.
        if (flashChanges && !(entry.view instanceof KitchenView)) flash(entry.box, seq);
      } else if (entry.view instanceof EditorView || entry.view instanceof PlanView
          || entry.view instanceof KitchenView) {
        entry.view.update(component); // read-only state may change when the session ends
      }
      entry.component = component;
      entry.search?.setDone(this.editorHost.done());
      const here = this.boxAt(index);
      if (here !== entry.box) this.root.insertBefore(entry.box, here);
    });
    for (const [name, entry] of this.entries) {
      if (!seen.has(name)) {
        entry.box.remove();
        this.entries.delete(name);
      }
    }
    this.placeNewPlan();
    if (newPlan) this.newPlan.arrived(newPlan, keyboardOnNewPlan);
    else if (keyboardOnNewPlan && document.activeElement !== this.newPlan.open) this.newPlan.open.focus();
  }

  /** "+ New plan" after the last plan, when the session offers NEW_PLAN and the seat acts. */
  placeNewPlan() {
    const plans = [...this.entries.values()].filter((entry) => entry.view instanceof PlanView);
    const last = plans.at(-1);
    const offered = !this.editorHost.readonly && Boolean(this.editorHost.offers?.("NEW_PLAN"));
    if (!last || !offered) {
      this.newPlan.root.remove();
      return;
    }
    if (last.box.nextSibling !== this.newPlan.root) last.box.after(this.newPlan.root);
    this.newPlan.setDone(this.editorHost.done());
  }

  /**
   * @param {string} name  a component
   * @returns {EditorView | null}  the editor that shows it, if one does
   */
  editor(name) {
    const view = this.entries.get(name)?.view;
    return view instanceof EditorView ? view : null;
  }

  /**
   * @param {Component} component
   * @param {string} json  its content as JSON
   * @returns {ComponentEntry} a new box with the view of the component's render type
   */
  create(component, json) {
    const view = component.render_type === "editor" ? new EditorView(component, this.editorHost)
      : component.render_type === "plan" ? new PlanView(component, this.editorHost)
        : component.render_type === "kitchen" ? new KitchenView(component, this.editorHost)
          : new (contentViewFor(component.render_type))(component, this.editorHost);
    const badge = component.private ? this.privateBadge : "shared";
    const searches = this.editorHost.searching?.(component.name) || [];
    const search = searches.length
      ? new SearchBar(searches, this.editorHost, component.title || component.name) : null;
    const box = h("div", { class: "cogym-box", testid: `view-${component.render_type}`,
      dataset: { component: component.name, render: component.render_type } },
    h("h4", {}, h("span", { text: component.title || component.name }),
      h("span", { class: "cogym-badge", text: badge })),
    search?.root || null, view.body);
    return { box, view, component, json, renderType: component.render_type, search };
  }
}

/**
 * An agent's status in plain words.
 * @param {string} status  thinking / acting / waiting / paused / failed / finished
 * @param {string | null | undefined} waitingFor  "teammate" or "tick", when waiting
 * @param {string} action  its last action in plain words ("" when none)
 * @returns {string}
 */
function statusWords(status, waitingFor, action) {
  if (status === "thinking") return "thinking";
  if (status === "acting") return action ? `acting: ${shorten(action, 80)}` : "acting";
  if (status === "waiting" && waitingFor === "teammate") return "waiting for you";
  if (status === "waiting") return "waiting for news from you or the team";
  if (status === "failed") return "stuck: its language model keeps failing";
  return status;
}

/**
 * @param {number} seconds
 * @returns {string} "12 s", "3 min"
 */
function duration(seconds) {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`;
  return `${Math.round(seconds / 60)} min`;
}

/**
 * @param {number} seconds
 * @returns {string} "just now", "12 s ago", "3 min ago"
 */
function ago(seconds) {
  return seconds < 2 ? "just now" : `${duration(seconds)} ago`;
}

/** What each status means, for the words' hover text. */
const STATUS_MEANINGS = {
  thinking: "Its language model is working out what to do next.",
  acting: "It is doing what it decided; the workspace or the chat changes next.",
  waiting: "It acts again when something changes: a message or an edit from you or a teammate "
    + "(in a real-time task, also the clock's next tick).",
  waiting_for_you: "It asked you something, or needs your approval: it goes on once you answer.",
  paused: "You paused it: Resume agent lets it act again.",
  failed: "Its language model keeps failing: see the line below.",
  finished: "The session has ended.",
};

/**
 * @param {string} status
 * @param {string | null | undefined} waitingFor
 * @returns {string} what the status means, in a sentence
 */
function statusMeaning(status, waitingFor) {
  const key = status === "waiting" && waitingFor === "teammate" ? "waiting_for_you" : status;
  return STATUS_MEANINGS[/** @type {keyof typeof STATUS_MEANINGS} */ (key)] || "";
}

/**
 * The step counts in plain words, one member each: "agent: 9 of 30 steps used", "user: 1 step".
 * @param {Record<string, number>} counts
 * @param {Record<string, number>} limits
 * @returns {string[]}
 */
function stepCountWords(counts, limits) {
  return Object.entries(counts).map(([role, n]) => limits[role]
    ? `${role}: ${n} of ${limits[role]} steps used`
    : `${role}: ${n} ${n === 1 ? "step" : "steps"}`);
}

/** What a person can do about an agent whose language model keeps failing, in plain words. */
const AGENT_FAILED_ADVICE = "It tries again whenever something changes, and the chat says what went "
  + "wrong. If this keeps happening, check the model name and the server address it was given "
  + "(%cogym config in the notebook, or COGYM_MODEL and OPENAI_BASE_URL) and start a new session.";

/**
 * The session's set-up (building a search index, loading data), while it runs: a progress bar
 * with the phase and the time left. Hidden before and after.
 */
class SetupView {
  constructor() {
    this.ts = 0;
    this.bar = /** @type {HTMLProgressElement} */ (h("progress", { testid: "setup-progress",
      max: "1", value: "0" }));
    this.label = h("div", { testid: "setup-label" });
    this.root = h("div", { class: "cogym-box cogym-setup", testid: "view-setup" },
      this.label, this.bar);
    this.root.hidden = true;
  }

  /** @param {SetupStatus} status  the latest by its time wins (a reconnect replays them) */
  receive(status) {
    if (status.ts < this.ts) return;
    this.ts = status.ts;
    const progress = status.setup;
    this.root.hidden = !progress && !status.error;
    this.root.dataset.state = status.error ? "failed" : progress ? "running" : "over";
    this.bar.hidden = !progress;
    if (status.error) this.label.textContent = status.error;
    if (!progress) return;
    this.bar.value = progress.fraction;
    const percent = Math.floor(progress.fraction * 100);
    const left = progress.seconds_left == null ? "estimating the time left"
      : `about ${duration(progress.seconds_left)} left`;
    this.label.textContent = `${progress.task}: ${progress.phase || "starting"} · ${percent}% · `
      + `${left}. The agent starts when it is ready.`;
    this.root.dataset.fraction = String(progress.fraction);
  }
}

/** Why a part of an agent cell was put back, by where it was found missing. */
const RESTORED_BECAUSE = {
  save: "a save of the notebook would have dropped it",
  file: "the notebook file had lost it",
  live: "it was lost while the cell was moved",
};

/**
 * The notebook box, for a session in the person's own notebook: on a server without real-time
 * collaboration, that the agent's cells are written into the file (reload the notebook to see
 * them); and whatever of the agent's cells had to be put back after a save or a move dropped
 * it. Hidden while there is nothing to say.
 */
class NotebookNoticeView {
  constructor() {
    this.ts = 0;
    this.message = h("div", { testid: "notebook-mode" });
    this.summary = h("div", { testid: "notebook-summary" });
    this.list = h("ul", { testid: "notebook-restored" });
    this.details = h("details", { class: "cogym-fold" },
      h("summary", { class: "cogym-muted", text: "What was put back" }), this.list);
    this.root = h("div", { class: "cogym-box cogym-notebook-notice", testid: "notebook-notice",
      role: "status" }, this.message, this.summary, this.details);
    this.root.hidden = true;
  }

  /** @param {NotebookStatus} status  the latest by its time wins (a reconnect replays them) */
  receive(status) {
    if (typeof status.ts !== "number" || status.ts < this.ts) return;
    this.ts = status.ts;
    const notice = status.notebook && typeof status.notebook === "object" ? status.notebook : {};
    const restored = Array.isArray(notice.restored) ? notice.restored : [];
    this.message.textContent = notice.message || "";
    this.message.hidden = !notice.message;
    this.summary.textContent = notice.summary || "";
    this.summary.hidden = !notice.summary;
    this.list.replaceChildren(...restored.map((item) => {
      const part = item.what === "cell" ? String(item.label) : `the outputs of ${item.label}`;
      const because = RESTORED_BECAUSE[/** @type {keyof typeof RESTORED_BECAUSE} */ (
        item.found_in)] || "it was missing";
      return h("li", { testid: "notebook-restored-item",
        dataset: { what: String(item.what), cell: String(item.cell_id) },
        text: `${part}: put back (${because})` });
    }));
    this.details.hidden = !restored.length;
    this.root.dataset.state = restored.length ? "restored" : notice.live ? "live" : "file";
    this.root.hidden = !notice.message && !notice.summary && !restored.length;
  }
}

/**
 * The data box: that the session's task reads the small sample of its data that comes with
 * cogym_lab (numbers from it are not comparable with the papers'), and the command that fetches
 * the full data. The kernel says so once, in the `data_notice` trait; hidden without one.
 */
class DataNoticeView {
  constructor() {
    this.root = h("div", { class: "cogym-box cogym-data-notice", testid: "data-notice",
      role: "note" });
    this.root.hidden = true;
  }

  /** @param {string | undefined} words  the notice, or nothing */
  show(words) {
    const text = typeof words === "string" ? words.trim() : "";
    this.root.textContent = text;
    this.root.hidden = !text;
  }
}

/**
 * The agent box: each agent's status and last action, Pause/Resume for every agent, and Finish.
 * It keeps the latest status of each agent; the session's team, its paused agents and whether
 * it ended come with each notification.
 */
class AgentStatusView {
  /**
   * @param {SendAction} send
   * @param {DescribeAction} describe  an action in plain words
   */
  constructor(send, describe) {
    this.send = send;
    this.describe = describe;
    /** @type {Record<string, AgentStatus>} */
    this.statuses = {};
    /** @type {Member[]} */
    this.team = [];
    /** @type {Set<string>} */
    this.paused = new Set();
    this.done = false;
    this.list = h("div", { testid: "agent-statuses" });
    this.pauseButton = h("button", { testid: "pause-button", text: "Pause agent",
      on: { click: () => this.togglePause() } });
    this.finishButton = h("button", { class: "cogym-danger", testid: "finish-button",
      text: "Finish", title: "End the session and grade it (asks first)",
      on: { click: () => this.askFinish() } });
    // Finish ends the session for everyone and grades it: it asks first, in words.
    this.endAndGrade = h("button", { class: "cogym-danger", testid: "finish-confirm-yes",
      text: "End and grade", on: { click: () => this.finish() } });
    this.keepWorking = h("button", { testid: "finish-confirm-no", text: "Keep working",
      on: { click: () => this.cancelFinish() } });
    this.finishConfirm = h("div", { class: "cogym-finish-confirm", testid: "finish-confirm",
      role: "alertdialog", "aria-label": "End the session and grade it?", hidden: true,
      on: { keydown: (event) => this.onConfirmKey(/** @type {KeyboardEvent} */ (event)) } },
    h("span", { text: "End the session and grade it? " }), this.endAndGrade, this.keepWorking);
    this.root = h("div", { class: "cogym-box", testid: "view-agent-status" },
      h("h4", { text: "Agent" }), this.list,
      h("div", { class: "cogym-row" }, this.pauseButton, this.finishButton), this.finishConfirm);
  }

  /** Shows the inline question, its "End and grade" focused: Enter ends, Escape keeps working. */
  askFinish() {
    if (this.done) return;
    this.finishConfirm.hidden = false;
    this.finishButton.setAttribute("aria-expanded", "true");
    this.endAndGrade.focus();
  }

  finish() {
    this.finishConfirm.hidden = true;
    this.finishButton.setAttribute("aria-expanded", "false");
    if (!this.done) this.send({ name: "FINISH", args: {} });
  }

  cancelFinish() {
    const hadFocus = this.finishConfirm.contains(document.activeElement);
    this.finishConfirm.hidden = true;
    this.finishButton.setAttribute("aria-expanded", "false");
    if (hadFocus) this.finishButton.focus();
  }

  /** @param {KeyboardEvent} event  the question's keys stay in it (the notebook gets none) */
  onConfirmKey(event) {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      this.cancelFinish();
    } else if (event.key === "Enter" && !event.isComposing) {
      event.preventDefault(); // not the focused button's own click as well
      event.stopPropagation();
      if (event.target === this.keepWorking) this.cancelFinish();
      else this.finish();
    }
  }

  /** @param {AgentStatus} status  an agent's update; an older one replayed is ignored */
  receive(status) {
    if (!status.role) return;
    const known = this.statuses[status.role];
    if (known && known.ts > status.ts) return; // an older update replayed on reconnect
    this.statuses[status.role] = status;
    this.render();
  }

  /**
   * @param {Member[]} team
   * @param {string[]} paused  roles of the paused agents
   * @param {boolean} done
   */
  update(team, paused, done) {
    this.team = team;
    this.paused = new Set(paused);
    this.done = done;
    this.render();
  }

  /** @returns {string[]} the team's agents, then any other role that reported a status */
  roles() {
    const roles = this.team.filter((member) => member.kind === "agent")
      .map((member) => member.role);
    for (const role of Object.keys(this.statuses)) if (!roles.includes(role)) roles.push(role);
    return roles;
  }

  render() {
    const roles = this.roles();
    this.list.replaceChildren(...roles.map((role) => this.agent(role)));
    this.tick();
    const allPaused = roles.length > 0 && roles.every((role) => this.paused.has(role));
    this.pauseButton.textContent = allPaused ? "Resume agent" : "Pause agent";
    this.pauseButton.dataset.state = allPaused ? "paused" : "running";
    this.pauseButton.disabled = this.done || roles.length === 0;
    this.finishButton.disabled = this.done;
    if (this.done) this.finishConfirm.hidden = true;
  }

  /**
   * @param {string} role
   * @returns {HTMLDivElement} the agent's status (paused and finished override what it said)
   */
  agent(role) {
    const update = /** @type {Partial<AgentStatus>} */ (this.statuses[role] || {});
    let status = update.status || "waiting";
    if (this.paused.has(role)) status = "paused";
    if (this.done) status = "finished";
    const plain = update.last_action ? this.describe(update.last_action) : "";
    const words = statusWords(status, update.waiting_for, plain);
    const since = h("span", { class: "cogym-muted", testid: "agent-status-since",
      dataset: { since: String(update.ts || "") } });
    const last = h("div", { class: "cogym-muted", testid: "agent-last-action",
      text: "no action yet" });
    if (update.last_action) showAction(last, update.last_action, plain, "last action: ");
    return h("div", { class: "cogym-agent", testid: "agent-status", dataset: { role, status } },
      h("div", {}, h("strong", { text: role }), " is ",
        h("span", { class: "cogym-status", testid: "agent-status-words", dataset: { status },
          text: words, title: statusMeaning(status, update.waiting_for) }), " ", since),
      status === "failed" ? h("div", { class: "cogym-agent-problem", testid: "agent-problem",
        text: AGENT_FAILED_ADVICE }) : null,
      last);
  }

  /** Each status says how long ago it changed: refreshed every second while shown. */
  tick() {
    const now = Date.now() / 1000;
    for (const since of this.list.querySelectorAll("[data-testid=agent-status-since]")) {
      const ts = Number(/** @type {HTMLElement} */ (since).dataset.since);
      since.textContent = ts ? `· ${ago(Math.max(0, now - ts))}` : "";
    }
  }

  togglePause() {
    const paused = this.pauseButton.dataset.state === "paused";
    this.send({ name: paused ? "RESUME_AGENT" : "PAUSE_AGENT", args: {} });
  }
}

/**
 * What the previews of pending actions need to know of the session.
 * @typedef {object} PreviewContext
 * @property {ActionSpec[]} specs
 * @property {Component[]} components  the seat's view now
 */

/**
 * The approvals box: each pending confirmation with a preview of its action, and Accept/Reject
 * (a request of the person's own waits for a teammate). New requests flash.
 */
class ConfirmationsView {
  /**
   * @param {string} role
   * @param {SendAction} send
   * @param {string} [sessionId]  what "accept all" is remembered under
   */
  constructor(role, send, sessionId = "") {
    this.role = role;
    this.send = send;
    this.list = h("div", { testid: "confirmations" });
    // "Accept all" holds for the rest of the session in this browser tab, a reload included.
    this.storageKey = `cogym-accept-all:${sessionId}`;
    /** @type {Set<string>} */
    this.answered = new Set();
    this.acceptAll = /** @type {HTMLInputElement} */ (h("input", { type: "checkbox",
      testid: "confirm-accept-all", on: { change: () => this.setAcceptAll() } }));
    this.acceptAll.checked = readStored(this.storageKey) === "yes";
    this.root = h("div", { class: "cogym-box", testid: "view-confirmations", hidden: true },
      h("h4", { text: "Waiting for your approval" }), this.list,
      h("label", { class: "cogym-row cogym-muted" }, this.acceptAll,
        h("span", { text: "Accept everything the agent asks for the rest of this session" })));
    /** @type {ConfirmationRequest[]} */
    this.pending = [];
  }

  setAcceptAll() {
    writeStored(this.storageKey, this.acceptAll.checked ? "yes" : "");
    if (this.acceptAll.checked) this.acceptWaiting();
  }

  /** Accept each pending request of a teammate, once. */
  acceptWaiting() {
    for (const request of this.pending) {
      if (request.requester === this.role || this.answered.has(request.request_id)) continue;
      this.answered.add(request.request_id);
      this.send({ name: "ACCEPT_CONFIRMATION", args: { request_id: request.request_id } });
    }
  }

  /**
   * @param {ConfirmationRequest[]} pending
   * @param {ConfirmationRequest[] | null} before  the previous notification's; null for none
   * @param {{done: boolean, seq: number} & PreviewContext} session
   */
  update(pending, before, session) {
    this.pending = session.done ? [] : pending;
    if (this.acceptAll.checked) this.acceptWaiting();
    this.root.hidden = pending.length === 0;
    const known = new Set((before || []).map((c) => c.request_id));
    this.list.replaceChildren(...pending.map((request) => {
      const node = this.request(request, session);
      if (before && !known.has(request.request_id)) flash(node, session.seq);
      return node;
    }));
  }

  /**
   * @param {ConfirmationRequest} request
   * @param {{done: boolean} & PreviewContext} session
   * @returns {HTMLDivElement}
   */
  request(request, session) {
    const id = request.request_id;
    /** @type {(testid: string, kind: string, text: string, name: string) => HTMLElement} */
    const answer = (testid, kind, text, name) => h("button", { class: kind, testid,
      dataset: { requestId: id }, text, disabled: session.done,
      on: { click: () => {
        this.answered.add(id);
        this.send({ name, args: { request_id: id } });
      } } });
    const controls = request.requester === this.role
      ? muted("Waiting for a teammate.")
      : h("div", { class: "cogym-row" },
        answer("confirm-accept", "cogym-primary", "Accept", "ACCEPT_CONFIRMATION"),
        answer("confirm-reject", "cogym-danger", "Reject", "REJECT_CONFIRMATION"));
    return h("div", { class: "cogym-confirmation", testid: "confirmation",
      dataset: { requestId: id } },
    muted(`${request.requester} asks to run:`),
    actionPreview(request.pending_action, session),
    controls);
  }
}

/**
 * What a pending action would do: its name and params; a whole-text replacement as a diff.
 * @param {string} text  the action in its canonical form
 * @param {PreviewContext} session
 * @returns {HTMLElement}
 */
function actionPreview(text, session) {
  const parsed = parseAction(text);
  if (!parsed) return h("pre", { class: "cogym-pre", testid: "confirmation-preview", text });
  const spec = session.specs.find((s) => s.name === parsed.name);
  /** @type {HTMLElement[]} */
  const rows = [h("strong", { title: parsed.name,
    text: spec?.description ? spec.description.replace(/[.\s]+$/, "") : parsed.name })];
  for (const [key, value] of Object.entries(parsed.args)) {
    if (spec?.replaces && key === "text" && typeof value === "string") {
      const replaced = session.components.find((c) => c.name === spec.replaces);
      rows.push(diffBlock(asText(replaced?.content), value));
    } else {
      const shown = typeof value === "string" ? value : JSON.stringify(value, null, 2);
      rows.push(h("div", {}, h("span", { class: "cogym-field", text: key }),
        h("span", { class: "cogym-pre", text: shown })));
    }
  }
  return h("div", { testid: "confirmation-preview" }, rows);
}

/** @type {Record<DiffLine[0], string>} */
const DIFF_CLASSES = { add: "cogym-diff-add", del: "cogym-diff-del", same: "" };

/** Unchanged lines kept around each change; longer unchanged runs fold into one line. */
const DIFF_CONTEXT = 2;

/**
 * The line diff of a whole-text replacement, led by a count of what changes: unchanged runs
 * longer than the context fold into a "… N unchanged lines" line (a click unfolds it), so one
 * changed line in a long plan is not buried.
 * @param {string} before
 * @param {string} after
 * @returns {HTMLDivElement}
 */
function diffBlock(before, after) {
  const lines = lineDiff(before, after);
  const added = lines.filter(([kind]) => kind === "add").length;
  const deleted = lines.filter(([kind]) => kind === "del").length;
  const near = lines.map((_, index) => lines.slice(Math.max(0, index - DIFF_CONTEXT),
    index + DIFF_CONTEXT + 1).some(([kind]) => kind !== "same"));
  /** @type {HTMLElement[]} */
  const shown = [];
  /** @type {HTMLElement[]} */
  let folded = [];
  const fold = () => {
    if (!folded.length) return;
    const hidden = folded;
    const marker = h("div", { class: "cogym-diff-fold", testid: "diff-fold",
      text: `… ${hidden.length} unchanged line${hidden.length === 1 ? "" : "s"} (show)` });
    marker.addEventListener("click", () => marker.replaceWith(...hidden));
    shown.push(marker);
    folded = [];
  };
  lines.forEach(([kind, line], index) => {
    const row = h("div", { class: DIFF_CLASSES[kind], dataset: { diff: kind }, text: line || " " });
    if (kind === "same" && !near[index]) folded.push(row);
    else { fold(); shown.push(row); }
  });
  fold();
  const summary = added || deleted
    ? `${added} line${added === 1 ? "" : "s"} added, ${deleted} removed`
    : "no change to the text";
  return h("div", { testid: "diff" }, muted(summary),
    h("div", { class: "cogym-pre cogym-scroll" }, shown));
}

let outboxCounter = 0;
let actionCounter = 0;

/**
 * @returns {string} the id an action travels with; the server repeats it in any refusal of it
 */
function nextActionId() {
  actionCounter += 1;
  return `a${actionCounter}`;
}

/** @type {Record<OutboxItem["state"], string>} */
const OUTBOX_LABELS = { pending: "sending…", sent: "sent", failed: "not sent" };

/**
 * The messages at the end of a chat (in seq order) that are newer than `seq`.
 * @param {ChatMessage[]} chat
 * @param {number} seq
 * @returns {ChatMessage[]}
 */
function messagesAfter(chat, seq) {
  let start = chat.length;
  while (start > 0 && chat[start - 1].seq > seq) start -= 1;
  return chat.slice(start);
}

/**
 * The chat box: the log, the person's messages still in flight (the outbox: "sending…" until
 * the transport has them, "sent" until the chat shows them, "not sent" if refused) and the
 * message box (Enter sends, Shift+Enter is a new line). A chat that only grew gets rows for its
 * new messages; the log is drawn again only for a whole update.
 */
class ChatView {
  /**
   * @param {string} role
   * @param {SendAction} send
   */
  constructor(role, send) {
    this.role = role;
    this.send = send;
    /** @type {ChatMessage[]} */
    this.messages = [];
    /** @type {OutboxItem[]} */
    this.outbox = [];
    /** @type {HTMLElement[]} */
    this.pendingRows = []; // the outbox's rows, after the messages
    this.lastSeq = 0; // the newest message shown so far
    this.done = false;
    this.readonly = false; // watch mode: nothing typed here is ever sent
    this.log = h("div", { class: "cogym-chat-log", testid: "chat-log" });
    this.input = h("textarea", { class: "cogym-chat-input", testid: "chat-input",
      placeholder: "Message your teammates (Enter sends, Shift+Enter for a new line)",
      on: { keydown: (event) => this.onKey(event) } });
    this.sendButton = h("button", { class: "cogym-primary", testid: "chat-send", text: "Send",
      on: { click: () => this.sendMessage() } });
    this.root = h("div", { class: "cogym-box", testid: "view-chat" }, h("h4", { text: "Chat" }),
      this.log, h("div", { class: "cogym-row" }, this.input),
      h("div", { class: "cogym-row" }, this.sendButton));
  }

  /**
   * @param {ChatMessage[]} chat  the whole chat, as the seat's copy has it (in seq order)
   * @param {boolean} flashChanges  false for the first notification
   * @param {number} seq  the notification's number
   * @param {boolean} [whole]  the chat was replaced (a whole update): draw it all again;
   *   otherwise it only grew, and only its new messages get rows
   */
  update(chat, flashChanges, seq, whole = true) {
    const fresh = messagesAfter(chat, this.lastSeq);
    // A message of ours shows up in the chat: it is no longer only in the outbox.
    let outboxChanged = false;
    for (const message of fresh) {
      if (message.sender !== this.role) continue;
      const index = this.outbox.findIndex(
        (item) => item.text === message.text && item.state !== "failed");
      if (index >= 0) {
        this.outbox.splice(index, 1);
        outboxChanged = true;
      }
    }
    this.messages = chat;
    if (whole) {
      this.lastSeq = chat.length ? chat[chat.length - 1].seq : 0;
      this.draw();
    } else if (fresh.length || outboxChanged) {
      this.lastSeq = fresh.length ? fresh[fresh.length - 1].seq : this.lastSeq;
      this.keepAtBottom(() => {
        const before = this.pendingRows[0] || null;
        for (const message of fresh) this.log.insertBefore(this.message(message), before);
        if (outboxChanged) this.replaceOutboxRows();
      });
    }
    if (flashChanges && fresh.length) flash(this.root, seq);
  }

  /** @param {boolean} done  an ended session takes no more messages */
  setDone(done) {
    this.done = done;
    this.sendButton.disabled = done;
    this.input.disabled = done;
  }

  /**
   * Change the log; if it was scrolled to its end, it stays there.
   * @param {() => void} change
   */
  keepAtBottom(change) {
    const log = this.log;
    const nearBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    change();
    if (nearBottom) log.scrollTop = log.scrollHeight;
  }

  /** Every row again: each message, then the outbox. */
  draw() {
    this.keepAtBottom(() => {
      this.pendingRows = this.outbox.map((item) => this.pending(item));
      this.log.replaceChildren(...this.messages.map((message) => this.message(message)),
        ...this.pendingRows);
    });
  }

  /** The outbox's rows again (a few at most), after the messages. */
  drawOutbox() {
    this.keepAtBottom(() => this.replaceOutboxRows());
  }

  replaceOutboxRows() {
    for (const row of this.pendingRows) row.remove();
    this.pendingRows = this.outbox.map((item) => this.pending(item));
    this.log.append(...this.pendingRows);
  }

  /**
   * @param {ChatMessage} message
   * @returns {HTMLDivElement}
   */
  message(message) {
    const to = message.to ? " → " + message.to : "";
    const time = new Date(message.time * 1000).toLocaleTimeString();
    const dataset = { sender: message.sender, mine: String(message.sender === this.role),
      seq: String(message.seq) };
    const text = h("div", { class: "cogym-message-text" });
    text.innerHTML = renderMarkdown(message.text); // escaped first: no HTML of the sender's
    const selection = message.selection && typeof message.selection === "object" ? message.selection : null;
    const quote = selection ? h("blockquote", { class: "cogym-ask-quote", testid: "chat-selection",
      text: `On the selection in ${asText(selection.component)}: “${shorten(selection.text, 300)}”` }) : null;
    return h("div", { class: "cogym-message", testid: "chat-message", dataset },
      h("div", { class: "cogym-message-meta", text: `${message.sender}${to} · ${time}` }), quote, text);
  }

  /**
   * @param {OutboxItem} item
   * @returns {HTMLDivElement}
   */
  pending(item) {
    return h("div", { class: "cogym-message", testid: "chat-pending",
      dataset: { mine: "true", state: item.state } },
    h("div", { class: "cogym-message-meta",
      text: `${this.role} · ${OUTBOX_LABELS[item.state]}` }),
    h("div", { class: "cogym-message-text", text: item.text }));
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      this.sendMessage();
    }
  }

  sendMessage() {
    const text = this.input.value.trim();
    if (!text || this.done || this.readonly) return;
    /** @type {OutboxItem} */
    const item = { id: ++outboxCounter, actionId: nextActionId(), text, state: "pending" };
    this.outbox.push(item);
    this.input.value = "";
    const action = { name: "SEND_TEAMMATE_MESSAGE", args: { message: text } };
    const sent = this.send(action, {}, item.actionId);
    // A refusal may have come first.
    if (item.state === "pending") item.state = sent ? "sent" : "pending";
    this.drawOutbox();
  }

  /** The transport sends what it queued while offline as soon as it connects. */
  flushOutbox() {
    let changed = false;
    for (const item of this.outbox) {
      if (item.state === "pending") {
        item.state = "sent";
        changed = true;
      }
    }
    if (changed) this.drawOutbox();
  }

  /**
   * @param {string | undefined} actionId  a refused action's id
   * @returns {boolean} whether it carried one of the person's messages, now marked not sent
   */
  markFailed(actionId) {
    const item = actionId === undefined
      ? null
      : this.outbox.find((entry) => entry.actionId === actionId);
    if (!item) return false;
    item.state = "failed";
    this.drawOutbox();
    return true;
  }
}

/** The task-action form: every task action of the session's specs, with typed inputs. */
class ActionFormView {
  /** @param {SendAction} send */
  constructor(send) {
    this.send = send;
    this.form = h("div", { testid: "action-form" });
    this.root = h("details", { class: "cogym-box", testid: "view-actions" },
      h("summary", { text: "Task actions" }), this.form);
  }

  /** @param {ActionSpec[]} allSpecs  the session's specs; internal actions are left out */
  build(allSpecs) {
    const specs = allSpecs.filter((spec) => !spec.internal);
    if (!specs.length) {
      this.root.hidden = true;
      return;
    }
    const select = h("select", { testid: "action-select" },
      specs.map((spec) => h("option", { value: spec.name, text: spec.name })));
    const description = h("div", { class: "cogym-muted" });
    const params = h("div");
    const submit = h("button", { class: "cogym-primary", testid: "action-submit", text: "Run" });
    const fill = () => {
      const spec = specs.find((s) => s.name === select.value);
      description.textContent = spec?.description || "";
      params.replaceChildren(...(spec?.params || []).map((param) => this.paramRow(param)));
    };
    submit.addEventListener("click", () => {
      const spec = specs.find((s) => s.name === select.value);
      if (!spec) return;
      this.send({ name: spec.name, args: readArgs(params) });
    });
    select.addEventListener("change", fill);
    fill();
    this.form.replaceChildren(h("div", { class: "cogym-row" }, select, submit), description,
      params);
  }

  /**
   * @param {ParamSpec} param
   * @returns {HTMLLabelElement} its name and an input of its type
   */
  paramRow(param) {
    const attrs = { testid: "action-param", dataset: { param: param.name, type: param.type },
      placeholder: param.description || param.name };
    let input;
    if (param.type === "boolean") {
      input = h("input", { ...attrs, type: "checkbox" });
    } else if (param.type === "integer" || param.type === "number") {
      const step = param.type === "integer" ? "1" : "any";
      input = h("input", { ...attrs, type: "number", step });
    } else if (param.type === "string") {
      input = h("textarea", { ...attrs, rows: 1 });
    } else {
      input = h("textarea", { ...attrs, rows: 2,
        placeholder: `JSON: ${param.description || param.name}` });
    }
    const name = param.name + (param.required ? "" : " (optional)");
    return h("label", { class: "cogym-row" }, h("span", { class: "cogym-field", text: name }),
      input);
  }
}

/**
 * @param {HTMLElement} params  the form's inputs
 * @returns {Record<string, unknown>} the args they hold: empty inputs left out, JSON parsed
 */
function readArgs(params) {
  /** @type {Record<string, unknown>} */
  const args = {};
  for (const node of params.querySelectorAll("[data-param]")) {
    const input = /** @type {HTMLInputElement} */ (node);
    const { param = "", type } = input.dataset;
    if (type === "boolean") { args[param] = input.checked; continue; }
    if (input.value === "") continue;
    if (type === "integer" || type === "number") args[param] = Number(input.value);
    else if (type === "string") args[param] = input.value;
    else {
      try { args[param] = JSON.parse(input.value); } catch { args[param] = input.value; }
    }
  }
  return args;
}

/** Reasons shown at once under a score; more fold into "N more reasons". */
const REASONS_SHOWN = 3;
/** A reason longer than this shows its start, and the rest on a click. */
const REASON_FOLD = 240;

/**
 * @param {number} value
 * @returns {string} a score for people: whole numbers as they are, others to two decimals
 */
function scoreText(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return String(value);
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

/**
 * @param {string} reason
 * @returns {HTMLLIElement} one reason; a long one folded after its start
 */
function reasonItem(reason) {
  const text = asText(reason);
  if (text.length <= REASON_FOLD) return h("li", { testid: "score-reason", text });
  return h("li", { testid: "score-reason" }, h("details", { class: "cogym-fold" },
    h("summary", { text: shorten(text, REASON_FOLD) }), h("div", { text })));
}

/**
 * The scores card at the end: each score the task explained, with what it measures and the
 * grader's reasons (long lists and long reasons fold), then any other score by value; or, in
 * plain words, why there are none. Until the grader is done it says that grading is under way.
 */
class ScoresView {
  constructor() {
    this.graded = false;
    this.root = h("div", { class: "cogym-box cogym-scores", testid: "scores-card",
      dataset: { state: "waiting" }, hidden: true });
  }

  /** The session ended: say that the grader is at work, unless its scores came first. */
  ended() {
    if (this.graded || !this.root.hidden) return;
    this.root.dataset.state = "grading";
    this.root.replaceChildren(h("h4", { text: "Scores" }),
      h("div", { class: "cogym-muted", testid: "scores-note",
        text: "Grading the result… The scores appear here when the grader is done." }));
    this.root.hidden = false;
  }

  /** @param {Grading} grading  the graded end; a later one replaces an earlier one */
  receive(grading) {
    this.graded = true;
    const reports = Array.isArray(grading.score_reports) ? grading.score_reports : [];
    const scores = grading.scores && typeof grading.scores === "object" ? grading.scores : {};
    const explained = new Set(reports.map((report) => report.name));
    const others = Object.entries(scores).filter(([name]) => !explained.has(name));
    /** @type {HTMLElement[]} */
    const parts = [h("h4", { text: "Scores" })];
    if (grading.note) parts.push(h("p", { testid: "scores-note", text: grading.note }));
    if (grading.error) {
      parts.push(h("details", { class: "cogym-fold", testid: "scores-error" },
        h("summary", { class: "cogym-muted", text: "What the grader reported" }),
        h("pre", { class: "cogym-pre", text: grading.error })));
    }
    parts.push(...reports.map((report) => this.report(report)));
    if (others.length) {
      parts.push(h("details", { class: "cogym-fold", testid: "other-scores" },
        h("summary", { text: reports.length ? `${others.length} more scores` : "Scores" }),
        h("ul", {}, others.map(([name, value]) => h("li", { testid: "other-score",
          dataset: { name }, text: `${name}: ${scoreText(value)}` })))));
    }
    this.root.dataset.state = reports.length || others.length ? "graded" : "not-graded";
    this.root.replaceChildren(...parts);
    this.root.hidden = false;
  }

  /**
   * @param {ScoreReport} report
   * @returns {HTMLDivElement} the score: its meaning, its value and the reasons
   */
  report(report) {
    const reasons = Array.isArray(report.reasons) ? report.reasons : [];
    const shown = reasons.slice(0, REASONS_SHOWN).map(reasonItem);
    const rest = reasons.slice(REASONS_SHOWN);
    const list = h("ul", { class: "cogym-reasons", testid: "score-reasons" }, shown);
    if (rest.length) {
      list.append(h("li", { class: "cogym-more" }, h("details", { class: "cogym-fold",
        testid: "score-more-reasons" }, h("summary", { text: `${rest.length} more reasons` }),
      h("ul", {}, rest.map(reasonItem)))));
    }
    return h("div", { class: "cogym-score", testid: "score", dataset: { name: report.name } },
      h("div", { class: "cogym-score-head" },
        h("span", { class: "cogym-score-label", testid: "score-label", text: report.label }),
        h("span", { class: "cogym-score-value", testid: "score-value",
          text: scoreText(report.value) })),
      h("div", { class: "cogym-muted", text: report.name }),
      reasons.length ? list : null);
  }
}

/** Radio groups need names unique in the page (several panels may share one notebook). */
let pairwiseGroups = 0;

/**
 * The pairwise question of the rating form (Co-Gym C.4): this session's outcome and the fully
 * autonomous agent's, side by side as "A" and "B" in the order the host drew, and a choice of
 * A, B or a tie. Without an autonomous outcome it says so and asks nothing.
 */
class PairwiseQuestion {
  /** @param {() => void} submit  Enter on a choice submits the form, as in an HTML form */
  constructor(submit) {
    this.submit = submit;
    this.name = `cogym-pairwise-${++pairwiseGroups}`;
    /** @type {PairwiseOffer | null} */
    this.offer = null;
    this.note = h("p", { class: "cogym-muted", testid: "pairwise-note",
      text: "Looking for the autonomous agent's outcome on the same task…" });
    this.body = h("div", { class: "cogym-pairwise-body" });
    this.root = h("fieldset", { class: "cogym-pairwise", testid: "rating-pairwise",
      dataset: { state: "loading" } },
    h("legend", { text: "Compared with the agent working alone (optional)" }), this.note, this.body);
  }

  /** @param {unknown} answer  the transport's answer: a PairwiseOffer */
  show(answer) {
    const offer = /** @type {PairwiseOffer} */ (answer || { available: false });
    const outcomes = offer.available && Array.isArray(offer.outcomes) ? offer.outcomes : [];
    if (outcomes.length !== 2) {
      this.root.dataset.state = "none";
      this.note.textContent = String(offer.note || "There is no comparison with the autonomous "
        + "agent this time.");
      return;
    }
    this.offer = offer;
    this.root.dataset.state = "ready";
    this.note.textContent = "One of these is the outcome of this session, the other what the agent "
      + "produced working alone on the same task; they are shown in random order. Which is better?";
    const radios = PAIRWISE_ANSWERS.map(([value, words]) => h("label", { class: "cogym-pairwise-choice" },
      h("input", { type: "radio", name: this.name, value, testid: "pairwise-choice",
        dataset: { choice: value }, on: { keydown: (event) => this.onKey(event) } }), words));
    this.body.replaceChildren(
      h("div", { class: "cogym-pairwise-outcomes" }, outcomes.map((shown) => h("section", {
        class: "cogym-pairwise-outcome", testid: "pairwise-outcome", dataset: { label: shown.label } },
      h("h5", { text: `Outcome ${shown.label}` }),
      // Focusable, so the keyboard can scroll a long outcome.
      h("div", { class: "cogym-pairwise-text", tabindex: "0", role: "region",
        "aria-label": `Outcome ${shown.label}`, text: shown.text })))),
      h("div", { class: "cogym-pairwise-choices", role: "radiogroup", testid: "pairwise-choices",
        "aria-label": "Which outcome is better?" }, radios));
  }

  /** @param {unknown} error  the transport could not fetch the question */
  failed(error) {
    this.root.dataset.state = "error";
    this.note.textContent = `The comparison with the autonomous agent could not be loaded: ${
      /** @type {Error | undefined} */ (error)?.message || error}`;
  }

  /** @param {KeyboardEvent} event */
  onKey(event) {
    if (event.key !== "Enter") return;
    event.preventDefault();
    const target = /** @type {HTMLInputElement} */ (event.target);
    target.checked = true; // Enter on a choice picks it, then submits the form
    this.submit();
  }

  /** @returns {{pairwise: PairwiseChoice, pairwise_order: Side[]} | null} the answer, if any */
  answer() {
    const outcomes = this.offer?.outcomes;
    const picked = /** @type {HTMLInputElement | null} */ (
      this.body.querySelector(`input[name="${this.name}"]:checked`));
    if (!outcomes || !picked) return null;
    const order = outcomes.map((shown) => shown.side);
    if (picked.value === "tie") return { pairwise: "tie", pairwise_order: order };
    const shown = outcomes.find((outcome) => outcome.label === picked.value);
    return shown ? { pairwise: shown.side, pairwise_order: order } : null;
  }
}

/**
 * The rating form at the end: outcome and satisfaction (1 to 5), optional statements on a
 * 5-point agreement scale (Cocoa's nine in a session with a plan, else steerable, easy to use
 * and useful outputs; see ratingStatements), the optional comparison with the autonomous
 * agent's outcome, and a comment.
 */
class RatingView {
  /**
   * @param {string} role
   * @param {(rating: Rating) => Promise<unknown>} rate  saves a rating through the transport
   * @param {() => Promise<unknown>} pairwise  asks the transport for the pairwise question
   */
  constructor(role, rate, pairwise) {
    this.role = role;
    this.rate = rate;
    this.pairwise = pairwise;
    this.built = false;
    this.root = h("div", { class: "cogym-box cogym-rating", testid: "rating-form", hidden: true });
  }

  /**
   * @param {string | null | undefined} reason  why the session ended; the form is built once
   * @param {readonly {render_type: string}[]} components  the seat's view: a plan asks nine items
   */
  show(reason, components = []) {
    if (!this.root.hidden || this.built) return;
    this.built = true;
    /** @type {(testid: string, rubric: Record<number, string>) => HTMLSelectElement} */
    const scale = (testid, rubric) => h("select", { testid },
      h("option", { value: "", text: "Choose 1 to 5" }),
      Object.entries(rubric).map(([value, label]) => h("option", { value, text: label })));
    const outcome = scale("rating-outcome", OUTCOME_RUBRIC);
    const satisfaction = scale("rating-satisfaction", SATISFACTION_RUBRIC);
    // Optional: each statement answered on the agreement scale, or left out of the rating.
    const likert = ratingStatements(components).map(([field, statement]) => /** @type {const} */ ([field,
      h("select", { testid: `rating-${field.replace(/_/g, "-")}`, "aria-label": `${statement} (optional)` },
        h("option", { value: "", text: "No answer" }),
        Object.entries(AGREEMENT_SCALE).map(([value, label]) => h("option", { value, text: label }))),
      statement]));
    const comment = h("textarea", { testid: "rating-comment", rows: 3,
      placeholder: "Anything you want to tell us (optional)" });
    const result = h("div", { testid: "rating-result", class: "cogym-muted" });
    const submit = h("button", { class: "cogym-primary", testid: "rating-submit",
      text: "Submit rating" });
    const question = new PairwiseQuestion(() => submit.click());
    this.pairwise().then((offer) => question.show(offer), (error) => question.failed(error));
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
        /** @type {Rating} */
        const rating = { role: this.role, outcome_rating: Number(outcome.value),
          satisfaction: Number(satisfaction.value), comment: comment.value };
        for (const [field, select] of likert) {
          if (select.value) rating[field] = Number(select.value); // unanswered: left out
        }
        Object.assign(rating, question.answer() || {}); // unanswered: left out too
        await this.rate(rating);
        result.dataset.state = "saved";
        result.textContent = "Thank you: your rating is saved with the session's results.";
      } catch (error) {
        submit.disabled = false;
        result.dataset.state = "error";
        result.textContent = `Could not save the rating: ${
          /** @type {Error | undefined} */ (error)?.message || error}`;
      }
    });
    const why = reason ? " (" + reason + ")" : "";
    this.root.replaceChildren(
      h("h4", { text: `The session has ended${why}. How did it go?` }),
      h("label", {}, h("span", { text: "The outcome: how good is the result?" }), outcome),
      h("label", {},
        h("span", { text: "Overall satisfaction with the agent as a teammate" }), satisfaction),
      h("fieldset", { class: "cogym-likert", testid: "rating-likert" },
        h("legend", { text: "How much do you agree? (optional)" }),
        likert.map(([, select, statement]) => h("label", {}, h("span", { text: statement }), select))),
      question.root,
      h("label", {}, h("span", { text: "Comment" }), comment),
      h("div", { class: "cogym-row" }, submit), result);
    this.root.hidden = false;
  }
}

// -- the seat's copy ---------------------------------------------------------------------------

/**
 * What applying one update came to: the notification it made; an update older than the copy,
 * ignored; or one the copy cannot apply (`ask`: the first since the copy was last in sync, so
 * the panel asks for a sync now; later ones wait for that sync's answer).
 * @typedef {{kind: "applied", notification: Notification} | {kind: "old"}
 *   | {kind: "out_of_sync", ask: boolean, reason: string}} CopyResult
 */

/**
 * The seat's own copy of its view and chat, kept from the env's updates (the rules of
 * cogym_lab.core.member_copy.MemberCopy). A whole update replaces it. Any other applies only on
 * top of the update before it, and only if every component it does not carry is held at the
 * version it names; otherwise the copy is out of sync and takes nothing but a whole update.
 * Applying an update costs what the update carries plus a pass over the view's component names:
 * the chat is appended to, never copied.
 */
export class SeatCopy {
  constructor() {
    /** @type {number | null} the last update applied; null before the first whole one */
    this.seq = null;
    /** @type {Map<string, {version: number, component: Component}>} in display order */
    this.parts = new Map();
    /** @type {ChatMessage[]} in seq order */
    this.chat = [];
    // Whole, and no change applied since: a watcher's snapshot may be newer than the member's
    // last update, so the next change may follow an earlier one.
    this.fromWhole = false;
    // Out of sync: only a whole update is taken now. So at first, too: the transport asks for
    // the whole state when it connects, so a change that comes before it asks nothing more.
    this.waitingForSync = true;
  }

  /**
   * @param {Update} update
   * @returns {CopyResult}
   */
  apply(update) {
    if (update.whole) return this.replace(update);
    if (this.waitingForSync) return this.outOfSync("waiting for the whole state");
    if (this.seq === null) return this.outOfSync("a change came before any whole state");
    if (update.seq <= this.seq) return { kind: "old" };
    const prev = update.prev_seq;
    const follows = prev === this.seq || (this.fromWhole && prev !== null && prev <= this.seq);
    if (!follows) return this.outOfSync(`holds ${this.seq}, the update follows ${prev}`);
    /** @type {Map<string, Component>} */
    const changed = new Map((update.components || []).map((c) => [c.name, c]));
    /** @type {Map<string, {version: number, component: Component}>} */
    const parts = new Map();
    for (const [name, version] of Object.entries(update.versions || {})) {
      const component = changed.get(name);
      const held = this.parts.get(name);
      if (component) parts.set(name, { version, component });
      else if (held && held.version === version) parts.set(name, held);
      else return this.outOfSync(`holds ${name} at ${held?.version}, the update expects ${version}`);
    }
    this.parts = parts;
    let last = this.chat.length ? this.chat[this.chat.length - 1].seq : -Infinity;
    for (const message of update.messages || []) {
      if (message.seq <= last) continue; // seen already
      this.chat.push(message);
      last = message.seq;
    }
    this.seq = update.seq;
    this.fromWhole = false;
    return { kind: "applied", notification: this.notification(update) };
  }

  /**
   * A whole update: the copy becomes it, whatever its seq.
   * @param {Update} update
   * @returns {CopyResult}
   */
  replace(update) {
    const given = new Map((update.components || []).map((c) => [c.name, c]));
    /** @type {Map<string, {version: number, component: Component}>} */
    const parts = new Map();
    for (const [name, version] of Object.entries(update.versions || {})) {
      const component = given.get(name);
      // Its sender's bug, not a gap: not taken. The copy then waits for a sync, and a sync's
      // answer as broken asks for none again: no loop of syncs.
      if (!component) return this.outOfSync(`a whole update lacks ${name}`);
      parts.set(name, { version, component });
    }
    this.parts = parts;
    this.chat = [...(update.messages || [])];
    this.seq = update.seq;
    this.fromWhole = true;
    this.waitingForSync = false;
    return { kind: "applied", notification: this.notification(update) };
  }

  /**
   * @param {string} reason
   * @returns {CopyResult}  asks for a sync once, until a whole update arrives
   */
  outOfSync(reason) {
    const ask = !this.waitingForSync;
    this.waitingForSync = true;
    return { kind: "out_of_sync", ask, reason };
  }

  /**
   * @param {Update} update
   * @returns {Notification} the update's fields with the copy's whole view and chat
   */
  notification(update) {
    const components = [...this.parts.values()].map((part) => part.component);
    return { ...update, view: { components }, chat: this.chat };
  }
}

// -- the panel ------------------------------------------------------------------------------

/**
 * @param {"session" | "local"} kind  this tab's storage, or the browser's for the origin
 * @returns {Storage}
 */
function storage(kind) {
  return kind === "local" ? window.localStorage : window.sessionStorage;
}

/**
 * @param {string} key
 * @param {"session" | "local"} [kind]
 * @returns {string | null} what this tab stored under the key (null where storage is refused)
 */
function readStored(key, kind = "session") {
  try { return storage(kind).getItem(key); } catch (error) { return null; }
}

/**
 * @param {string} key
 * @param {string} value  "" removes the key
 * @param {"session" | "local"} [kind]
 */
function writeStored(key, value, kind = "session") {
  try {
    if (value) storage(kind).setItem(key, value);
    else storage(kind).removeItem(key);
  } catch (error) { /* storage refused (a sandboxed frame): the choice lasts until a reload */ }
}

/** The fields a person types in: their keys are theirs, never the notebook's. */
const TEXT_FIELDS = "input, textarea, select, [contenteditable]";

/**
 * Keys typed in the panel stay in the panel. JupyterLab reads keys at the document (after the
 * field, since 4.1) for its notebook shortcuts: without this, Shift+Enter in the chat box ran
 * the cell again and started a second session, and Enter in an editor did nothing. The
 * attribute is JupyterLab's documented way to keep its shortcuts out of a region; stopping the
 * key at the panel covers hosts that do not read it. Escape leaves the field (its text kept),
 * so the keyboard can always get back to the notebook (in a kitchen being played, to the chef).
 * @param {HTMLElement} root
 */
function keepKeysInPanel(root) {
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  root.addEventListener("keydown", (event) => {
    const target = event.target;
    if (!(target instanceof HTMLElement) || !target.matches(TEXT_FIELDS)) return;
    if (event.key === "Escape") {
      target.blur();
      // In a kitchen being played, the keys go back to the chef: a person chats and plays on
      // with the arrows (a second Escape, in the kitchen, gives them to the notebook).
      const stage = root.querySelector('[data-testid=kitchen][data-playing="true"] [data-testid=kitchen-stage]');
      if (stage instanceof HTMLElement) stage.focus({ preventScroll: true });
    }
    event.stopPropagation();
  });
}

/** Controls that only change what the panel shows: a watcher may use them. */
const VIEW_ONLY_CONTROLS = new Set(["editor-preview-toggle", "panel-error-dismiss", "plan-step-inspect",
  "plan-collapse"]);

/**
 * Watch mode: every control that would act is disabled. Text fields become read-only and
 * aria-disabled rather than `disabled`, so that a click still focuses them inside the panel:
 * keys typed there stay in the panel (see keepKeysInPanel) instead of reaching the notebook,
 * where Shift+Enter would run the cell again. Views rebuild their controls as notifications
 * and statuses arrive, so the panel calls this after each one.
 * @param {HTMLElement} root
 */
function lockControls(root) {
  for (const node of root.querySelectorAll("button, select, input, textarea")) {
    const control = /** @type {HTMLButtonElement | HTMLSelectElement | HTMLInputElement
      | HTMLTextAreaElement} */ (node);
    if (VIEW_ONLY_CONTROLS.has(control.dataset.testid || "")) continue;
    control.setAttribute("aria-disabled", "true");
    const typed = control instanceof HTMLTextAreaElement
      || (control instanceof HTMLInputElement && !["checkbox", "radio"].includes(control.type));
    if (typed) /** @type {HTMLInputElement | HTMLTextAreaElement} */ (control).readOnly = true;
    else control.disabled = true;
  }
}

// -- the chat beside the notebook ----------------------------------------------------------------

/**
 * Where a whole panel's chat is: in the panel, or beside the notebook. A chat-only view of the
 * same session and seat (the model's `part` is "chat", shown in JupyterLab's side area) takes
 * over the agents' status, the confirmations and the chat while it is shown somewhere outside
 * the notebook; the cell's panel then gives the workspace its whole width and says where the
 * chat went. When that view goes (its tab closed, the side area collapsed, a front end that
 * has no side area), the chat is back in the panel: it is never lost. Read from the page, so
 * it needs no message between the two views and holds after a reload.
 */
class ChatPlacement {
  /**
   * @param {HTMLElement} root  the whole panel's root
   * @param {HTMLTextAreaElement} input  its own chat box: never hidden while the person types
   */
  constructor(root, input) {
    this.root = root;
    this.input = input;
    this.note = h("div", { class: "cogym-chat-beside-note", testid: "chat-beside-note",
      hidden: true, text: "The chat and the agent's status are beside the notebook, on the right." });
  }

  /** @returns {HTMLElement | null} a chat-only view of this panel's seat shown outside it */
  besideView() {
    const { session, role } = this.root.dataset;
    for (const node of document.querySelectorAll('[data-testid="cogym-panel"][data-part="chat"]')) {
      const view = /** @type {HTMLElement} */ (node);
      if (view.dataset.session !== session || view.dataset.role !== role) continue;
      if (this.root.contains(view) || view.contains(this.root)) continue;
      if (view.getClientRects().length > 0) return view; // shown: not in a hidden or closed area
    }
    return null;
  }

  /** Look again (the panel's clock calls this every second). */
  check() {
    if (!this.root.isConnected) return;
    const typing = document.activeElement === this.input || this.input.value !== "";
    const beside = this.besideView() !== null && !typing;
    const now = this.root.dataset.chat === "beside";
    if (beside === now) return;
    this.root.dataset.chat = beside ? "beside" : "here";
    this.note.hidden = !beside;
  }
}

/**
 * A chat beside the notebook goes when its notebook is closed, as the cell's panel does, and
 * comes back when it is opened again. JupyterLab ends a notebook's widgets with the notebook's
 * document, but leaves in place what their manager put in the side area (sidecar's tab): left
 * alone, the side chat would stay there cut off from its kernel, its own connection to the
 * session still open, and the reopened notebook, whose new manager makes again every widget
 * the kernel holds, would put a second one beside it. So the chat-only view looks (the panel's
 * clock calls check every second) and, once its notebook's document (or its manager) is
 * disposed, closes its side tab's model in this page only: nothing goes to the kernel, which
 * keeps the side chat for the next opening.
 */
class SideChatOwner {
  /**
   * @param {NotebookWidgets | undefined} manager  the widget manager that made the view
   * @param {HTMLElement} el  the view's element, inside the side tab
   */
  constructor(manager, el) {
    this.manager = manager;
    this.el = el;
    this.closing = false;
  }

  /** Look again: closes the side tab once, when the notebook is gone. */
  check() {
    const manager = this.manager;
    if (this.closing || !manager || !(manager.isDisposed || manager.context?.isDisposed)) return;
    this.closing = true;
    this.closeSideTab().catch((error) => console.warn("cogym: the side chat stays", error));
  }

  /** Closes the side tab (sidecar's model) that holds this view, in this page only. */
  async closeSideTab() {
    const manager = /** @type {NotebookWidgets} */ (this.manager);
    const tab = this.el.closest(".jupyterlab-sidecar");
    if (!tab?.id) return; // not in a side tab: nothing of ours outlives the notebook there
    const { state } = await manager.get_state();
    for (const [id, entry] of Object.entries(state)) {
      if (entry.model_name !== "SidecarModel" || entry.state._widget_id !== tab.id) continue;
      // Closed as if its comm had closed: this page removes its views (the tab), and no
      // message is sent over the notebook's ended kernel connection.
      const sidecar = await manager.get_model(id);
      await sidecar.close(true);
    }
  }
}

// -- the agent's cells in the notebook around the panel ------------------------------------------

/** The first line the session writes at the top of every agent cell, with the agent's role. */
const AGENT_CELL_LINE = /^# written by (\S+) \(cogym agent\b/;

/**
 * Marks the agent's cells in the notebook that holds the panel, so that a person tells them
 * apart at a glance: such a cell gets the class `cogym-agent-cell` and `data-cogym-author`,
 * which the panel's stylesheet (anywidget puts it in the page) draws as a coloured edge and a
 * badge. JupyterLab shows cell tags only in its property inspector, so the marker reads each
 * cell's first line, which the session writes on every agent cell (the cells also carry the
 * tag `cogym-agent`). It follows the notebook's changes (new cells, edits, cells drawn as they
 * scroll into view) a moment later, and stops when the panel goes.
 */
class AgentCellMarker {
  /** @param {HTMLElement} root  the panel's root */
  constructor(root) {
    this.root = root;
    /** @type {HTMLElement | null} */
    this.notebook = null;
    /** @type {MutationObserver | null} */
    this.observer = null;
    /** @type {ReturnType<typeof setTimeout> | null} */
    this.timer = null;
  }

  /** Starts following the notebook, once the panel sits in one (anywhere else: nothing). */
  start() {
    if (this.observer || typeof MutationObserver === "undefined") return;
    const notebook = this.root.closest(".jp-Notebook");
    if (!(notebook instanceof HTMLElement)) return;
    this.notebook = notebook;
    // Attributes are not watched: the marks this makes do not wake it again.
    this.observer = new MutationObserver(() => this.schedule());
    this.observer.observe(notebook, { childList: true, subtree: true, characterData: true });
    this.mark();
  }

  schedule() {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.mark();
    }, 150);
  }

  mark() {
    if (!this.notebook) return;
    if (!this.root.isConnected) {
      this.stop();
      return;
    }
    for (const node of this.notebook.querySelectorAll(".jp-Cell")) {
      const cell = /** @type {HTMLElement} */ (node);
      const line = cell.querySelector(".jp-InputArea-editor .cm-line")?.textContent || "";
      const author = AGENT_CELL_LINE.exec(line)?.[1] || "";
      if ((cell.dataset.cogymAuthor || "") === author) continue;
      cell.classList.toggle("cogym-agent-cell", Boolean(author));
      if (author) cell.dataset.cogymAuthor = author;
      else delete cell.dataset.cogymAuthor;
    }
  }

  stop() {
    this.observer?.disconnect();
    this.observer = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/**
 * The panel: builds the layout from the views and routes what the transport delivers to them;
 * it keeps only what several views share (the seat's copy, the latest notification, the
 * session's context, whether it ended).
 */
export class Panel {
  /**
   * @param {HTMLElement} el  where anywidget renders the widget
   * @param {WidgetModel} model
   * @param {YModule | null} [Y]  Yjs, for live editing of shared texts (see loadYjs)
   */
  constructor(el, model, Y = null) {
    this.model = model;
    /** @type {string} */
    this.role = model.get("role");
    this.readonly = Boolean(model.get("readonly"));
    /** @type {Transport | null} */
    this.transport = null;
    /** @type {ConnectionState} */
    this.connection = "connecting";
    this.copy = new SeatCopy();
    /** @type {ReturnType<typeof setTimeout> | null} a sync asked again after a refusal */
    this.syncRetry = null;
    /** @type {Notification | null} */
    this.notification = null;
    /** @type {SessionContext | null} */
    this.context = null;
    this.done = false;
    /** @type {SendAction} */
    const send = (action, extra, id) => this.sendAction(action, extra, id);
    /** @type {DescribeAction} */
    const describe = (raw) => describeAction(raw, this.actionSpecs());
    // The replicas of the shared texts: a watcher edits nothing, so it keeps none. Once the
    // session has ended, nothing more is sent (it would only be refused).
    this.texts = Y && !this.readonly ? new SharedTexts(Y, { send,
      online: () => this.connection === "open" && !this.done, sync: () => this.resync() },
    this.role) : null;
    this.header = new HeaderView(this.role, describe, this.readonly);
    this.errors = new ErrorBanner();
    this.rating = new RatingView(this.role,
      (rating) => /** @type {Transport} */ (this.transport).rate(rating),
      () => /** @type {Transport} */ (this.transport).pairwise());
    this.scores = new ScoresView();
    this.workspace = new WorkspaceView({
      replacing: (name) => this.actionSpecs().find((spec) => spec.replaces === name) || null,
      picking: (name) => this.actionSpecs().find((spec) => spec.picks?.component === name)
        || null,
      searching: (name) => this.actionSpecs().filter((spec) => spec.searches === name
        && !spec.internal),
      searches: () => this.actionSpecs().filter((spec) => spec.searches && !spec.internal
        && (spec.params || []).length),
      done: () => this.done,
      send,
      role: this.role,
      readonly: this.readonly,
      sharedText: (name) => this.texts?.get(name) || null,
      liveText: Boolean(this.texts),
      offers: (name) => this.actionSpecs().some((spec) => spec.name === name),
      session: model.get("session_id") || "",
    });
    if (this.readonly) this.workspace.privateBadge = `only ${this.role}`;
    this.setup = new SetupView();
    this.notebookNotice = new NotebookNoticeView();
    this.dataNotice = new DataNoticeView();
    this.dataNotice.show(model.get("data_notice"));
    model.on("change:data_notice", () => this.dataNotice.show(model.get("data_notice")));
    this.agents = new AgentStatusView(send, describe);
    this.confirmations = new ConfirmationsView(this.role, send, model.get("session_id") || "");
    this.chat = new ChatView(this.role, send);
    this.chat.readonly = this.readonly;
    if (this.readonly) {
      this.chat.input.placeholder = `Read-only: you are watching ${this.role}`;
    }
    this.actions = new ActionFormView(send);
    /** @type {"all" | "chat"} */
    this.part = model.get("part") === "chat" ? "chat" : "all";
    const dataset = { role: this.role, session: model.get("session_id") || "",
      readonly: String(this.readonly), sync: "waiting", part: this.part, chat: "here" };
    const classes = this.readonly ? "cogym-panel cogym-readonly" : "cogym-panel";
    // A chat-only view (beside the notebook) keeps what a person reads and answers while the
    // agent works: who is doing what, what it asks, and the chat.
    this.root = this.part === "chat"
      ? h("div", { class: classes, testid: "cogym-panel", dataset },
        this.header.root,
        this.errors.root,
        h("div", { class: "cogym-side" }, this.agents.root, this.confirmations.root,
          this.chat.root))
      : h("div", { class: classes, testid: "cogym-panel", dataset },
        this.header.root,
        this.setup.root,
        this.dataNotice.root,
        this.notebookNotice.root,
        this.errors.root,
        this.scores.root,
        this.rating.root,
        h("div", { class: "cogym-body" }, this.workspace.root,
          h("div", { class: "cogym-side" }, this.agents.root, this.confirmations.root,
            this.chat.root, this.actions.root)));
    this.placement = new ChatPlacement(this.root, this.chat.input);
    if (this.part === "all") this.header.root.append(this.placement.note);
    keepKeysInPanel(this.root);
    if (this.readonly) lockControls(this.root);
    el.replaceChildren(this.root);
    this.agentCells = new AgentCellMarker(this.root);
  }

  /**
   * The transport delivers updates, status updates and errors here.
   * @param {unknown} message  what came off the wire: anything that is not an object is ignored
   */
  receive(message) {
    if (!message || typeof message !== "object") return;
    this.route(/** @type {IncomingMessage} */ (message));
    if (this.readonly) lockControls(this.root); // views rebuild their controls as they update
  }

  /** @param {IncomingMessage} message */
  route(message) {
    if (message.type === "status" && "grading" in message) {
      return this.scores.receive(/** @type {GradingStatus} */ (message).grading || {});
    }
    if (message.type === "status" && "setup" in message) {
      return this.setup.receive(/** @type {SetupStatus} */ (message));
    }
    if (message.type === "status" && "notebook" in message) {
      return this.notebookNotice.receive(/** @type {NotebookStatus} */ (message));
    }
    if (message.type === "status") return this.agents.receive(/** @type {AgentStatus} */ (message));
    if (message.type === "error" || (message.error && !message.event)) {
      return this.refused(/** @type {ErrorFrame} */ (message));
    }
    if (message.event && message.versions) return this.receiveUpdate(/** @type {Update} */ (message));
  }

  /**
   * Apply an update to the seat's copy and show what it made. One the copy cannot apply is
   * not shown: the panel keeps its last good state and asks the transport, once, for the whole
   * state again (data-sync="waiting" on the panel until it comes, as before the first one).
   * @param {Update} update
   */
  receiveUpdate(update) {
    // Shared texts first: their replicas take every update's part (Yjs merges whatever order
    // they come in), and the editor then shows the text the update brought.
    this.texts?.receive(update);
    const result = this.copy.apply(update);
    this.root.dataset.sync = this.copy.waitingForSync ? "waiting" : "ok";
    if (result.kind === "applied") {
      this.receiveNotification(result.notification);
    } else if (result.kind === "out_of_sync") {
      console.warn(`cogym: update ${update.seq} not applied (${result.reason})`);
      if (result.ask) this.transport?.sync();
    }
  }

  /**
   * Ask for the whole state, as a copy that missed an update does: the copy takes nothing else
   * until it comes (a refusal for the rate asks again, see refused).
   */
  resync() {
    if (!this.copy.waitingForSync) {
      this.copy.waitingForSync = true;
      this.root.dataset.sync = "waiting";
    }
    this.transport?.sync();
  }

  /** @param {ConnectionState} state */
  setConnection(state) {
    this.connection = state;
    this.texts?.connectionChanged();
    this.header.setConnection(state);
    if (state === "open") this.chat.flushOutbox();
    this.remember("connection", state);
  }

  /** @returns {ActionSpec[]} the session's action specs (none before its context arrives) */
  actionSpecs() {
    return this.context?.action_specs || [];
  }

  /** @param {Notification} notification  the seat's whole state after one event */
  receiveNotification(notification) {
    if (this.part === "all") this.agentCells.start(); // in the page by now (a no-op once started)
    const previous = this.notification;
    this.notification = notification;
    if (notification.context) {
      const firstContext = !this.context;
      this.context = notification.context;
      this.header.setTask(this.context.task, this.context.task_description);
      if (firstContext) this.actions.build(this.actionSpecs());
    }
    this.done = Boolean(notification.done);
    const seq = notification.seq;
    const components = notification.view?.components || [];
    const event = notification.event || {};
    const ownTyping = event.type === "edit" && event.actor === this.role; // no flash for it
    this.workspace.update(components, previous !== null && !ownTyping, seq);
    this.chat.update(notification.chat || [], previous !== null, seq, notification.whole !== false);
    this.confirmations.update(notification.pending_confirmations || [],
      previous ? previous.pending_confirmations || [] : null,
      { done: this.done, seq, specs: this.actionSpecs(), components });
    this.agents.update(this.context?.team || [], notification.paused || [], this.done);
    this.chat.setDone(this.done);
    this.header.update(notification);
    if (event.status === "error" && event.actor === this.role && event.error
        && !this.texts?.failed(event)) {
      this.errors.show(event.error);
    }
    const overlap = this.readonly ? null : overlapNotice(event.info?.overlap, event.actor || "",
      this.role);
    if (overlap) this.workspace.editor(overlap.component)?.showNotice(overlap.words);
    if (this.done) this.scores.ended();
    // A watcher rates nothing.
    if (this.done && !this.readonly) this.rating.show(notification.end_reason, components);
    this.remember("last_seq", notification.seq);
  }

  /**
   * Hand an action to the transport; true once it left the panel.
   * @param {Action} action
   * @param {ActionExtra} [extra]
   * @param {string} [id]
   * @returns {boolean}
   */
  sendAction(action, extra = {}, id = nextActionId()) {
    if (this.readonly) return false; // watch mode acts in nothing, whatever asks
    return Boolean(this.transport && this.transport.send({ action, ...extra, id }));
  }

  /**
   * The server (or the kernel) did not apply an action, or could not read a message: say so,
   * and mark the chat message it was, if it was one, as not sent.
   * @param {ErrorFrame} frame
   */
  refused(frame) {
    if (this.texts?.refused(frame)) return; // a live edit, sent again or cured by a sync
    this.chat.markFailed(frame.id);
    this.errors.refused(frame);
    // The refusal may have been of the copy's sync (rate limited): ask again, once, in a while.
    if (frame.code === "rate_limited" && this.copy.waitingForSync && this.copy.seq !== null
        && !this.syncRetry) {
      this.syncRetry = setTimeout(() => {
        this.syncRetry = null;
        if (this.copy.waitingForSync) this.transport?.sync();
      }, 1000);
    }
  }

  /**
   * Set a trait of the widget's model; a model without that trait (a test page) is fine.
   * @template {keyof WidgetTraits} K
   * @param {K} key
   * @param {WidgetTraits[K]} value
   */
  remember(key, value) {
    try {
      this.model.set(key, value);
      this.model.save_changes();
    } catch {
      // a model without that trait (a test page) is fine
    }
  }
}

// -- transports: the only part that differs between the modes -----------------------------------

/** @returns {string | null} the page's _xsrf cookie, which Jupyter wants back on a POST */
function xsrfToken() {
  const cookies = typeof document !== "undefined" ? document.cookie : "";
  const match = /(?:^|;\s*)_xsrf=([^;]*)/.exec(cookies);
  return match ? decodeURIComponent(match[1]) : null;
}

/**
 * server mode: the browser talks to the session's WebSocket and REST API on the Jupyter server.
 * @param {WidgetModel} model
 * @param {Receive} receive
 * @param {SetConnection} setConnection
 * @returns {Transport}
 */
export function serverTransport(model, receive, setConnection) {
  const token = model.get("token") || "";
  const wsUrl = new URL(model.get("ws_url"), window.location.href);
  wsUrl.protocol = wsUrl.protocol === "https:" ? "wss:" : "ws:";
  if (token) wsUrl.searchParams.set("token", token);
  const apiUrl = new URL(model.get("api_url"), window.location.href);
  /** @type {WebSocket | null} */
  let socket = null;
  let closed = false;
  let retry = 500;
  /** @type {string[]} */
  const queue = [];

  const connect = () => {
    setConnection("connecting");
    const ws = new WebSocket(wsUrl.toString());
    socket = ws;
    ws.onopen = () => {
      retry = 500;
      while (queue.length) ws.send(/** @type {string} */ (queue.shift()));
      setConnection("open");
    };
    ws.onmessage = (event) => {
      try {
        receive(JSON.parse(event.data));
      } catch (error) {
        console.warn("cogym: could not read a message", error);
      }
    };
    ws.onclose = () => {
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
      /** @type {Record<string, string>} */
      const headers = { "Content-Type": "application/json" };
      if (token) headers.Authorization = `token ${token}`;
      const xsrf = xsrfToken();
      if (xsrf) headers["X-XSRFToken"] = xsrf;
      const url = new URL(apiUrl.pathname.replace(/\/?$/, "/rating"), apiUrl).toString();
      const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(rating),
        credentials: "same-origin" });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(body.message || body.error || `HTTP ${response.status}`);
      return body;
    },
    async pairwise() {
      /** @type {Record<string, string>} */
      const headers = {};
      if (token) headers.Authorization = `token ${token}`;
      const url = new URL(apiUrl.pathname.replace(/\/?$/, "/pairwise"), apiUrl);
      url.searchParams.set("role", model.get("role") || "");
      const response = await fetch(url.toString(), { headers, credentials: "same-origin" });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) throw new Error(body.message || body.error || `HTTP ${response.status}`);
      return body;
    },
    sync() {
      // Closed: no need to queue it, the server sends the whole state when the socket opens.
      if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "sync" }));
    },
    close() {
      closed = true;
      if (socket) socket.close();
    },
  };
}

/**
 * A custom message from the kernel to the panel (cogym_lab.widgets.local_bridge).
 * @typedef {object} KernelMessage
 * @property {string} [type]  notification, status, error, rated, rating_error, pairwise_offer or
 *   pairwise_error
 * @property {Record<string, unknown>} [data]  the update (type notification), or the status
 * @property {string} [error]
 * @property {string | number} [id]  the refused action's id (error), or the request's number
 * @property {PairwiseOffer} [offer]  the pairwise question (pairwise_offer)
 */

/**
 * local mode: the kernel hosts the session; messages travel through the widget's comm.
 * @param {WidgetModel} model
 * @param {Receive} receive
 * @param {SetConnection} setConnection
 * @returns {Transport}
 */
export function localTransport(model, receive, setConnection) {
  /** @type {Map<number, {resolve: (value: unknown) => void, reject: (error: Error) => void}>} */
  const waiting = new Map();
  let counter = 0;
  /** @param {unknown} content  a custom message from the kernel */
  const onMessage = (content) => {
    if (!content || typeof content !== "object") return;
    const { type, data, error, id, offer } = /** @type {KernelMessage} */ (content);
    if (type === "notification") receive(data);
    else if (type === "status") receive({ type: "status", ...data });
    else if (type === "error") receive({ type: "error", error, id });
    else if (type === "rated" || type === "rating_error" || type === "pairwise_offer"
      || type === "pairwise_error") {
      if (typeof id !== "number") return; // not a request this panel made
      const pending = waiting.get(id);
      waiting.delete(id);
      if (!pending) return;
      if (type === "rated") pending.resolve(content);
      else if (type === "pairwise_offer") pending.resolve(offer);
      else pending.reject(new Error(error));
    }
  };
  /**
   * Send a request the kernel answers by its number.
   * @param {Record<string, unknown>} message
   * @returns {Promise<unknown>}
   */
  const ask = (message) => {
    const id = ++counter;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      model.send({ ...message, id });
    });
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
      return ask({ type: "rating", ...rating });
    },
    pairwise() {
      return ask({ type: "pairwise" });
    },
    sync() {
      model.send({ type: "hello" }); // the kernel answers a hello with the whole state
    },
    close() {
      model.off("msg:custom", onMessage);
    },
  };
}

export const TRANSPORTS = { server: serverTransport, local: localTransport };

/** The flag Yjs sets on the page when it loads (it warns when it finds it set already). */
const YJS_FLAG = "__ $YJS$ __";

/** @type {Map<string, Promise<YModule | null>>} Yjs as imported, by its source: once a page */
const YJS_LOADED = new Map();

/**
 * Yjs, imported from its source text (the model's `yjs_module`: anywidget sends the panel as
 * one module, so Yjs comes as text and is imported from a blob URL, as the trajectory viewer
 * imports the panel). Null without a source, or when it cannot be imported: the editor is then
 * read-only. The panel's copy never meets another copy of Yjs on the page (JupyterLab's own):
 * their documents are apart, so the flag Yjs keeps on the page is left as it was.
 * @param {string} source
 * @returns {Promise<YModule | null>}
 */
export function loadYjs(source) {
  if (!source) return Promise.resolve(null);
  let loaded = YJS_LOADED.get(source);
  if (!loaded) {
    loaded = importYjs(source);
    YJS_LOADED.set(source, loaded);
  }
  return loaded;
}

/**
 * @param {string} source
 * @returns {Promise<YModule | null>}
 */
async function importYjs(source) {
  const page = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (globalThis));
  const had = Object.hasOwn(page, YJS_FLAG);
  const flag = page[YJS_FLAG];
  delete page[YJS_FLAG];
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  try {
    const Y = /** @type {YModule} */ (await import(url));
    return typeof Y.Doc === "function" && typeof Y.applyUpdate === "function" ? Y : null;
  } catch (error) {
    console.warn("cogym: live editing is off, Yjs could not be loaded", error);
    return null;
  } finally {
    URL.revokeObjectURL(url);
    if (had) page[YJS_FLAG] = flag;
    else delete page[YJS_FLAG];
  }
}

/**
 * anywidget's entry point: a panel in `el`, with the transport of the model's mode.
 * @param {{model: WidgetModel, el: HTMLElement}} widget
 * @returns {Promise<() => void>} what anywidget calls to tear the panel down
 */
async function render({ model, el }) {
  const Y = model.get("readonly") ? null : await loadYjs(model.get("yjs_module") || "");
  const panel = new Panel(el, model, Y);
  const mode = model.get("mode");
  const open = Object.hasOwn(TRANSPORTS, mode) ? TRANSPORTS[mode] : serverTransport;
  panel.transport = open(model, (message) => panel.receive(message),
    (state) => panel.setConnection(state));
  // The agents' "changed 12 s ago" counts on while the panel is shown; a whole panel looks
  // whether its chat is shown beside the notebook, a chat beside it whether its notebook went.
  const owner = new SideChatOwner(model.widget_manager, el);
  const clock = setInterval(() => {
    panel.agents.tick();
    if (panel.part === "all") panel.placement.check();
    else owner.check();
  }, 1000);
  // Typing not sent yet leaves when the page is hidden or left.
  const leaving = () => panel.texts?.flush();
  const hidden = () => {
    if (document.visibilityState === "hidden") leaving();
  };
  window.addEventListener("pagehide", leaving);
  document.addEventListener("visibilitychange", hidden);
  return () => {
    clearInterval(clock);
    leaving();
    panel.texts?.close();
    panel.agentCells.stop();
    window.removeEventListener("pagehide", leaving);
    document.removeEventListener("visibilitychange", hidden);
    /** @type {Transport} */ (panel.transport).close();
  };
}

export default { render };
