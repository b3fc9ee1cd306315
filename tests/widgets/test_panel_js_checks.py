"""Cheap structural checks of the session panel's ES module (``js/session_panel.js``).

The browser tests (tests/widgets/test_widgets.py, tests/browser/) prove how the panel behaves; these
checks keep its shape: lines of at most 120 characters, one small view class per part of the
panel, JSDoc types with no ``any``, and, where ``node`` is installed, a module that parses and
exports what the widget and the tests import. Where ``tsc`` is installed, the module also
type-checks with ``js/jsconfig.json`` (strict).
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
MODULE = REPO / "js" / "session_panel.js"
YJS = REPO / "js" / "vendor" / "yjs.mjs"  # made by scripts/vendor_yjs.sh; tsc never reads it
JSCONFIG = REPO / "js" / "jsconfig.json"
#: TypeScript, installed by scripts/test.sh into a folder of the project (never committed).
TSC = REPO / ".cache" / "typescript" / "node_modules" / ".bin" / "tsc"
MAX_LINE = 120

# One class per part of the panel; each owns its part of the DOM and its own state.
PANEL_VIEWS = [
    "HeaderView",  # the status line: task, role, connection, step counts, last event
    "ErrorBanner",  # refusals (e.g. rate limits) and errors, until dismissed
    "WorkspaceView",  # one box per component of the seat's view
    "EditorView",  # the shared editor
    "PlanView",  # the interactive plan: proposals, steps, a step's output, the plan output
    "KitchenView",  # the real-time kitchen: the canvas, the keys, the macro buttons, the result
    "NotebookNoticeView",  # how the agent's cells reach the person's notebook, what was put back
    "DataNoticeView",  # that the task reads the sample of its data that comes with cogym_lab
    "AgentStatusView",  # each agent's status, Pause/Resume, Finish
    "ConfirmationsView",  # pending confirmations with Accept/Reject
    "ChatView",  # the chat log, the outbox and the message box
    "ActionFormView",  # the task-action form
    "RatingView",  # the rating form at the end
]
# One class per read-only render type; JsonView for any other.
CONTENT_VIEWS = [
    "JsonView",
    "TextView",
    "TableView",
    "SearchResultsView",
    "LibraryView",
    "NotebookView",
    "ChecklistView",
]
EXPORTS = {
    "Panel": "function",
    "escapeHtml": "function",
    "renderMarkdown": "function",
    "parseAction": "function",
    "describeAction": "function",
    "lineDiff": "function",
    "serverTransport": "function",
    "localTransport": "function",
    "SeatCopy": "function",
    "WorkspaceView": "function",  # the trajectory viewer draws members' views with it
    "SharedTexts": "function",  # the replicas of the shared texts (live editing, with Yjs)
    "SharedTextReplica": "function",
    "textChange": "function",
    "overlapNotice": "function",
    "ratingStatements": "function",
    "planOffers": "function",  # the agent's replanning and completion offers, as buttons
    "planSummary": "function",  # how far a plan got, in the line a folded plan shows
    "outputCard": "function",  # a step's output item as a card by its kind
    "selectionOf": "function",  # the selected text a message to the agent carries
    "loadYjs": "function",
    "TRANSPORTS": "object",
    "OUTCOME_RUBRIC": "object",
    "SATISFACTION_RUBRIC": "object",
    "default": "object",
}


def _source() -> str:
    return MODULE.read_text(encoding="utf-8")


def _classes(source: str) -> dict[str, int]:
    """Each top-level class of the module, with the line it starts on."""
    found = {}
    for number, line in enumerate(source.splitlines(), start=1):
        match = re.match(r"(?:export )?class (\w+)\b", line)
        if match:
            found[match.group(1)] = number
    return found


def test_no_line_is_over_120_characters() -> None:
    long_lines = [(number, len(line)) for number, line in enumerate(_source().splitlines(), 1)
                  if len(line) > MAX_LINE]
    assert long_lines == [], f"lines over {MAX_LINE} characters (line, length): {long_lines}"


@pytest.mark.parametrize("name", PANEL_VIEWS + CONTENT_VIEWS + ["Panel"])
def test_each_view_is_a_class_with_a_jsdoc_comment(name: str) -> None:
    source = _source()
    classes = _classes(source)
    assert name in classes, f"no class {name} in {MODULE.name}"
    lines = source.splitlines()
    above = lines[classes[name] - 2].strip()
    assert above.endswith("*/"), f"class {name} has no JSDoc comment right above it"


def test_the_content_views_share_the_json_fallback() -> None:
    classes = set(re.findall(r"^class (\w+) extends JsonView\b", _source(), flags=re.M))
    assert classes == set(CONTENT_VIEWS) - {"JsonView"}


def test_the_panel_only_composes_the_views() -> None:
    source = _source()
    start = source.index("export class Panel")
    body = source[start:source.index("\n}\n", start)]
    for view in PANEL_VIEWS:
        if view in ("EditorView", "PlanView", "KitchenView"):  # the workspace makes one a component
            continue
        assert f"new {view}(" in body, f"Panel does not build a {view}"
    # The panel builds no controls of its own: only the layout's containers.
    tags = set(re.findall(r'\bh\("(\w+)"', body))
    assert tags <= {"div"}, f"Panel builds elements of its own: {sorted(tags)}"


def test_jsdoc_types_name_no_any() -> None:
    loose = []
    for number, line in enumerate(_source().splitlines(), 1):
        if not re.search(r"@(type|param|returns|property|typedef|template)\b", line):
            continue
        for braces in re.findall(r"\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", line):
            if re.search(r"\bany\b", braces):
                loose.append((number, line.strip()))
    assert loose == [], f"JSDoc types that turn checking off: {loose}"


def test_node_parses_the_module() -> None:
    checked = subprocess.run(["node", "--input-type=module", "--check"], input=_source(),
                             capture_output=True, text=True, timeout=60, check=False)
    assert checked.returncode == 0, checked.stderr


def _node_json(script: str) -> Any:
    """Run ``script`` as an ES module in node; what it printed, read as JSON."""
    ran = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True,
                         text=True, timeout=60, check=False)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_node_imports_the_module_and_finds_its_exports() -> None:
    # Importing needs no DOM: the module touches document and window only when it renders.
    script = (
        f"const module = await import({json.dumps(MODULE.as_uri())});\n"
        "const kinds = Object.fromEntries(Object.entries(module).map(([k, v]) => [k, typeof v]));\n"
        "console.log(JSON.stringify({ kinds, render: typeof module.default.render,\n"
        "  escaped: module.escapeHtml('<a href=\"x\">&'),\n"
        "  transports: Object.keys(module.TRANSPORTS) }));\n"
    )
    result = _node_json(script)
    assert result["kinds"] == EXPORTS
    assert result["render"] == "function"
    assert result["escaped"] == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert result["transports"] == ["server", "local"]


def test_tsc_finds_nothing() -> None:
    """The JSDoc types hold under ``strict`` (scripts/test.sh installs TypeScript)."""
    assert TSC.is_file(), f"{TSC} is missing: scripts/test.sh installs it with npm"
    checked = subprocess.run([str(TSC), "-p", str(JSCONFIG), "--pretty", "false"],
                             capture_output=True, text=True, timeout=300, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_actions_are_described_in_plain_words_on_one_line() -> None:
    script = (
        f"const {{ describeAction }} = await import({json.dumps(MODULE.as_uri())});\n"
        "const specs = [{ name: 'ADD_ITEM', description: 'Add an item to the list.' }];\n"
        "console.log(JSON.stringify([\n"
        "  describeAction('ADD_ITEM(text=\"snacks\\\\nand water\")', specs),\n"
        "  describeAction('EDITOR_UPDATE(text=\"' + 'x'.repeat(500) + '\")', specs),\n"
        "  describeAction('FINISH()', specs),\n"
        "  describeAction('not an action\\nat all', specs),\n"
        "]));\n"
    )
    added, long_edit, finish, prose = _node_json(script)
    assert added == "Add an item to the list: text “snacks ⏎ and water”"
    assert long_edit.startswith("editor update: text “xxx") and len(long_edit) < 100
    assert finish == "finish" and prose == "not an action ⏎ at all"


def test_the_seat_copy_applies_updates_and_asks_for_a_sync_once() -> None:
    """The panel's copy of the seat's view and chat follows the update rules of
    cogym_lab.core.member_copy: whole replaces, a change applies on top of the update before it,
    a gap or a component at another version puts it out of sync until a whole update."""
    script = (
        f"const {{ SeatCopy }} = await import({json.dumps(MODULE.as_uri())});\n"
        """
const part = (name, content) => ({ name, render_type: "text", content });
const msg = (seq, text) => ({ seq, time: 1000 + seq, sender: "agent", text, to: null });
const frame = (seq, prev_seq, extra) => ({ seq, prev_seq, event: { type: "action" },
  whole: false, components: [], versions: {}, messages: [], ...extra });
const copy = new SeatCopy();
const out = [];
const show = (result) => result.kind !== "applied" ? result.kind + (result.ask ? "+ask" : "")
  : { seq: result.notification.seq, view: result.notification.view.components.map(
      (c) => `${c.name}=${c.content}`), chat: result.notification.chat.map((m) => m.seq) };
const apply = (update) => out.push(show(copy.apply(update)));
apply(frame(3, 2, { versions: { a: 1 } }));  // before any whole: the transport asked already
apply(frame(4, 3, { versions: { a: 1 } }));                        // still waiting
apply(frame(5, null, { whole: true, components: [part("b", "B1"), part("a", "A1")],
  versions: { a: 1, b: 5 }, messages: [msg(1, "hi")] }));          // whole: in versions' order
apply(frame(6, 5, { components: [part("b", "B2")], versions: { a: 1, b: 6 },
  messages: [msg(1, "hi"), msg(6, "six")] }));                     // one changed, dedupe by seq
apply(frame(6, 5, { versions: { a: 1, b: 6 } }));                  // old: ignored
apply(frame(8, 7, { versions: { a: 1, b: 6 } }));                  // gap: sync
apply(frame(9, 8, { versions: { a: 1, b: 6 } }));                  // still waiting
apply(frame(7, 6, { versions: { a: 1, b: 6 } }));                  // even a good one waits
apply(frame(9, 8, { whole: true, components: [part("a", "A9")], versions: { a: 9 },
  messages: [msg(1, "hi"), msg(6, "six")] }));                     // whole: b dropped
apply(frame(10, 9, { versions: { a: 2 } }));                       // wrong version: sync
apply(frame(11, 4, { whole: true, components: [part("a", "A11"), part("c", "C")],
  versions: { a: 11, c: 11 } }));                                  // a watcher's snapshot
apply(frame(12, 10, { components: [part("c", "C12")], versions: { c: 12, a: 11 },
  messages: [msg(12, "<img src=x onerror=alert(1)>")] }));        // follows an earlier one
apply(frame(13, 11, { versions: { c: 12, a: 11 } }));              // only right after whole
apply(frame(14, null, { whole: true, components: [], versions: { a: 14 } }));  // lacks a: no
apply(frame(15, null, { whole: true, components: [], versions: { a: 15 } }));  // no more asks
console.log(JSON.stringify(out));
""")
    assert _node_json(script) == [
        "out_of_sync",
        "out_of_sync",
        {"seq": 5, "view": ["a=A1", "b=B1"], "chat": [1]},
        {"seq": 6, "view": ["a=A1", "b=B2"], "chat": [1, 6]},
        "old",
        "out_of_sync+ask",
        "out_of_sync",
        "out_of_sync",
        {"seq": 9, "view": ["a=A9"], "chat": [1, 6]},
        "out_of_sync+ask",
        {"seq": 11, "view": ["a=A11", "c=C"], "chat": []},
        {"seq": 12, "view": ["c=C12", "a=A11"], "chat": [12]},
        "out_of_sync+ask",
        "out_of_sync",
        "out_of_sync",
    ]


def test_a_change_is_one_span_that_never_splits_a_surrogate_pair() -> None:
    """The editor turns each input into one span replaced (UTF-16 indices, as Y.Text's)."""
    script = (
        f"const {{ textChange }} = await import({json.dumps(MODULE.as_uri())});\n"
        "console.log(JSON.stringify([\n"
        "  textChange('same', 'same'),\n"
        "  textChange('abc', 'abXc'),\n"
        "  textChange('aa', 'aaa'),\n"
        "  textChange('line one\\nline two', 'line one\\n'),\n"
        "  textChange('a\\ud83d\\ude00b', 'a\\ud83d\\ude01b'),\n"
        "  textChange('\\ud83d\\ude00', ''),\n"
        "]));\n"
    )
    assert _node_json(script) == [
        None,
        {"index": 2, "remove": 0, "insert": "X"},
        {"index": 2, "remove": 0, "insert": "a"},
        {"index": 9, "remove": 8, "insert": ""},
        {"index": 1, "remove": 2, "insert": "\U0001f601"},
        {"index": 0, "remove": 2, "insert": ""},
    ]


def test_an_overlap_is_told_to_whose_edit_it_was_and_to_whom_it_overlapped() -> None:
    script = (
        f"const {{ overlapNotice }} = await import({json.dumps(MODULE.as_uri())});\n"
        "const overlap = { component: 'editor', with: ['agent'], lines: [[3, 4]] };\n"
        "const theirs = { ...overlap, with: ['user'], lines: [[2, 2], [7, 9]] };\n"
        "console.log(JSON.stringify([\n"
        "  overlapNotice(overlap, 'user', 'user'),\n"
        "  overlapNotice(theirs, 'agent', 'user'),\n"
        "  overlapNotice(overlap, 'agent', 'user'),\n"  # not about this person
        "  overlapNotice({ component: 7 }, 'user', 'user'),\n"
        "  overlapNotice('nonsense', 'user', 'user'),\n"
        "]));\n"
    )
    mine, theirs, *nothing = _node_json(script)
    assert mine == {"component": "editor", "words": (
        "Your edit and the agent's changed the same lines; both versions are kept, one after "
        "the other — check lines 3–4.")}
    assert theirs["words"] == (
        "The agent's edit and yours changed the same lines; both versions are kept, one after "
        "the other — check line 2, lines 7–9.")
    assert nothing == [None, None, None]


def test_replicas_batch_the_typing_and_send_it_before_a_change_that_crosses_it() -> None:
    """The live-editing rules in node, with the vendored Yjs: typing leaves in one batch made on
    the update the replica had; an update that changes the text sends the typing first; one
    that brings nothing new (the person's own operations, back) does not; after a whole
    update the replica sends what the session lacks, and nothing when it lacks nothing."""
    script = (
        f"const panel = await import({json.dumps(MODULE.as_uri())});\n"
        f"const Y = await import({json.dumps(YJS.as_uri())});\n"
        r"""
const sent = [];
const host = { send: (action, extra) => { sent.push({ ...action.args, ...extra }); return true; },
  online: () => true, sync: () => sent.push("sync") };
const texts = new panel.SharedTexts(Y, host, "user");
const session = new Y.Doc();
session.getText("text").insert(0, "one\n");
const b64 = (update) => Buffer.from(update).toString("base64");
const frame = (seq, whole, update) => ({ seq, whole, event: { type: "action" },
  texts: { editor: b64(update) } });
const out = [];
texts.receive(frame(1, true, Y.encodeStateAsUpdate(session)));
const replica = texts.get("editor");
const type = (text) => replica.edit(panel.textChange(replica.text.toString(), text));
type("one\ntwo");
type("one\ntwo!");
out.push(sent.length);                                    // 0: waits for a pause
replica.flush();
out.push(sent.map((s) => [s.component, s.seen_seq]));     // one batch, made on update 1
Y.applyUpdate(session, Buffer.from(sent[0].update, "base64"));
texts.receive(frame(2, false, Y.encodeStateAsUpdate(session)));  // its own operations back
type("one\ntwo!?");                                       // made on update 2
texts.receive(frame(3, false, Y.encodeStateAsUpdate(session)));  // nothing new: no send
out.push(sent.length);
const vector = Y.encodeStateVector(session);
session.getText("text").insert(0, "zero\n");
texts.receive(frame(4, false, Y.encodeStateAsUpdate(session, vector)));  // new: typing first
out.push(sent.slice(1).map((s) => s.seen_seq), replica.text.toString());
Y.applyUpdate(session, Buffer.from(sent[1].update, "base64"));
replica.inFlight.clear();
texts.receive(frame(5, true, Y.encodeStateAsUpdate(session)));  // lacks nothing
out.push(sent.length);
type("zero\none\ntwo!?\nthree");
replica.flush();
replica.inFlight.clear();                                 // lost on the way
texts.receive(frame(6, true, Y.encodeStateAsUpdate(session)));  // lacks "three"
Y.applyUpdate(session, Buffer.from(sent.at(-1).update, "base64"));
out.push(sent.at(-1).seen_seq, session.getText("text").toString());
console.log(JSON.stringify(out));
""")
    assert _node_json(script) == [
        0, [["editor", 1]], 1, [2], "zero\none\ntwo!?", 2, 6, "zero\none\ntwo!?\nthree"]


def test_the_rating_form_asks_cocoas_nine_items_in_a_plan_session() -> None:
    """A session with an interactive plan gets Cocoa's nine statements, under the study kit's
    names and words; any other session the three core ones."""
    script = (
        f"const {{ ratingStatements }} = await import({json.dumps(MODULE.as_uri())});\n"
        "const plan = [{render_type: 'editor'}, {render_type: 'plan'}];\n"
        "console.log(JSON.stringify([ratingStatements(plan), ratingStatements([{render_type: "
        "'editor'}]), ratingStatements([])]));")
    nine, three, nothing_shown = _node_json(script)
    from cogym_lab.records.likert import COCOA_ITEMS, STATEMENTS
    assert [field for field, _ in nine] == list(COCOA_ITEMS)
    assert {field: text for field, text in nine} == STATEMENTS
    assert [field for field, _ in three] == ["useful_outputs", "easy_to_use", "steerable"]
    assert nothing_shown == three


def test_the_agents_offers_on_the_plan_become_buttons_that_send_the_answers() -> None:
    """Replanning (Cocoa §4.1.4): a button per choice that accepts it, one that keeps the plan;
    completions: a button per text that picks it for its step; no offer, no buttons."""
    content = {"proposals": [], "plan": {"steps": []},
               "replan": {"after": "s1", "reason": "No papers come now.", "choices": [
                   [{"description": "Find experts", "assignee": "agent"},
                    {"description": "Add their items", "assignee": "agent"}],
                   [{"description": "Ask the person", "assignee": "person"}]]},
               "completions": {"step": "s4", "choices": ["Check rain", "Check frost"]}}
    script = (
        f"const {{ planOffers }} = await import({json.dumps(MODULE.as_uri())});\n"
        f"const content = {json.dumps(content)};\n"
        "console.log(JSON.stringify([planOffers(content), planOffers({proposals: [], plan: null,"
        " replan: null, completions: null}), planOffers('a plan in words')]));")
    offers, none, plain = _node_json(script)
    assert offers["replan"]["after"] == "s1" and offers["replan"]["reason"] == "No papers come now."
    assert [(b["label"], b["action"]) for b in offers["replan"]["buttons"]] == [
        ("Find experts → Add their items", {"name": "ACCEPT_REPLAN", "args": {"choice": 0}}),
        ("Ask the person", {"name": "ACCEPT_REPLAN", "args": {"choice": 1}}),
        ("Keep the plan as it is", {"name": "DISMISS_REPLAN", "args": {}})]
    assert [(b["label"], b["action"]) for b in offers["completions"]["buttons"]] == [
        ("Check rain", {"name": "PICK_COMPLETION", "args": {"step": "s4", "choice": 0}}),
        ("Check frost", {"name": "PICK_COMPLETION", "args": {"step": "s4", "choice": 1}})]
    assert none == plain == {"replan": None, "completions": None}


def test_a_folded_plan_says_in_a_line_how_far_it_got() -> None:
    """What a collapsed plan shows under its title: proposals, or its steps with how many are
    done and which one is in progress."""
    cases = [
        {"proposals": [], "plan": None},
        {"proposals": [{}, {}], "plan": None},
        {"proposals": [{}], "plan": None},
        {"proposals": [], "plan": {"steps": []}},
        {"proposals": [], "plan": {"steps": [{"status": "not_run"}]}},
        {"proposals": [], "plan": {"steps": [{"status": "done"}, {"status": "running"},
                                             {"status": "not_run"}]}},
        {"proposals": [], "plan": {"steps": [{"status": "done"}, {"status": "needs_input"}]}},
        {"proposals": [], "plan": {"steps": [{"status": "done"}, {"status": "done"}]}},
    ]
    script = (
        f"const {{ planSummary }} = await import({json.dumps(MODULE.as_uri())});\n"
        f"console.log(JSON.stringify({json.dumps(cases)}.map(planSummary)));")
    assert _node_json(script) == [
        "No steps yet", "2 proposed plans to choose from", "1 proposed plan to choose from",
        "0 steps", "1 step", "3 steps: 1 done, step 2 running",
        "2 steps: 1 done, step 2 needs input", "2 steps: all done"]


def test_a_step_output_item_becomes_a_card_by_its_kind() -> None:
    """Cocoa §4.2.3: a paper card (title, authors, year), an author card (name, affiliation,
    papers), a topic, an entity, a cell; an item without a kind (an old log's) or with an
    unknown one is a generic card; markup stays text; a 1 MB field is cut for the card."""
    items = [
        {"kind": "paper", "id": "1706.03762", "title": "Attention", "authors": ["A", "B"],
         "year": 2017, "url": "https://example.org/p", "venue": "NeurIPS"},
        {"kind": "author", "name": "Ada", "affiliation": "Somewhere", "papers": 12},
        {"kind": "topic", "topic": "machine translation", "description": "MT"},
        {"kind": "entity", "text": "<b>which metric?</b>"},
        {"kind": "cell", "source": "df.describe()", "output": "count 3"},
        {"id": "x", "title": "old", "note": "n"},
        {"kind": "planet", "title": "Mars"},
        "a bare string",
        {"kind": "record", "Name": "Flat <i>2</i>", "Price": 500},
        {"kind": "paper", "title": "made in node: over 1 MB", "url": "javascript:alert(1)"},
    ]
    script = (
        f"const {{ outputCard }} = await import({json.dumps(MODULE.as_uri())});\n"
        f"const items = {json.dumps(items)};\n"
        "items[9].title = String.fromCharCode(0) + 'x'.repeat(1000000);\n"
        "console.log(JSON.stringify(items.map((item) => outputCard(item))));")
    paper, author, topic, entity, cell, old, unknown, bare, row, huge = _node_json(script)
    assert paper == {"kind": "paper", "title": "Attention", "subtitle": "A, B · 2017",
                     "fields": [["venue", "NeurIPS"], ["id", "1706.03762"]],
                     "url": "https://example.org/p"}
    assert (author["title"], author["subtitle"], author["fields"]) == (
        "Ada", "Somewhere", [["papers", "12"]])
    assert (topic["kind"], topic["title"], topic["subtitle"]) == (
        "topic", "machine translation", "MT")
    assert (entity["kind"], entity["title"]) == ("entity", "<b>which metric?</b>")  # as text
    assert (cell["title"], cell["subtitle"]) == ("df.describe()", "count 3")
    assert (old["kind"], old["title"], old["fields"]) == ("generic", "old", [["id", "x"],
                                                                              ["note", "n"]])
    assert (unknown["kind"], unknown["title"]) == ("generic", "Mars")
    assert (bare["kind"], bare["title"]) == ("generic", "a bare string")
    assert (row["kind"], row["title"], row["fields"]) == ("record", "Flat <i>2</i>",
                                                          [["Price", "500"]])
    assert len(huge["title"]) == 300 and huge["title"].endswith("…") and huge["url"] is None


def test_a_selection_is_counted_in_code_points_and_empty_ones_are_none() -> None:
    """The textarea counts UTF-16 units; the session counts code points: an emoji before the
    selection moves it by one, not two. Nothing but white space selected is no selection."""
    script = (
        f"const {{ selectionOf }} = await import({json.dumps(MODULE.as_uri())});\n"
        "const text = '🙂 ab <i>cd</i>\\u2028ef';\n"
        "console.log(JSON.stringify([selectionOf('editor', text, 3, 15),"
        " selectionOf('editor', text, 15, 3), selectionOf('editor', text, 2, 3),"
        " selectionOf('editor', text, 0, 999)]));")
    forward, backward, blank, everything = _node_json(script)
    assert forward == backward == {"component": "editor", "text": "ab <i>cd</i>", "start": 2,
                                   "end": 14}
    assert blank is None
    assert everything["start"] == 0 and everything["text"] == "🙂 ab <i>cd</i>\u2028ef"
