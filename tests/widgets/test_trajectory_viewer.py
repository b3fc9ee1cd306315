"""The trajectory viewer's data, widget, export, magic and command, on real sessions.

The states the viewer shows are checked against ``replay()`` at every event of sessions of
several tasks (the todo checklist with its rule-based team, hostile texts from scripted
members, interactive plans with the plan-aware agent's real LM client, the real-time kitchen),
both as Python rebuilds them and as the browser module does (run in node on the same payload).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import cogym_lab
from cogym_lab.cli.main import main
from cogym_lab.core.messages import Event, EventType
from cogym_lab.core.state_diff import differences, first_difference
from cogym_lab.nodes.replay import replay
from cogym_lab.nodes.results import read_events
from cogym_lab.records.viewer import Trajectory, TrajectoryPayload, build_trajectory, decode
from cogym_lab.records.viewer.calls import match_calls, parse_calls
from cogym_lab.records.viewer.frames import MAX_CHANGES
from cogym_lab.records.viewer.labels import read_labels
from cogym_lab.records.viewer.values import (
    MAX_CHAIN,
    ValueTable,
    apply_patch,
    decode_entries,
    make_patch,
)
from cogym_lab.widgets.trajectory_export import html_document
from cogym_lab.widgets.trajectory_viewer import TrajectoryViewer, view
from tests.support.paths import REPO_ROOT
from tests.support.viewer_sessions import (
    BIG,
    HOSTILE_ITEM,
    LINE_SEPARATOR,
    MARKUP,
    NUL,
    PRIVATE_NOTE,
    example_session,
    hostile_session,
    kitchen_session,
    plans_session,
)

pytestmark = [pytest.mark.usefixtures("no_ambient_lm"), pytest.mark.timeout(300)]

REPO = REPO_ROOT
VIEWER_MODULE = REPO / "js" / "trajectory_viewer.js"
SESSIONS = {"example": example_session, "hostile": hostile_session, "plans": plans_session,
            "kitchen": kitchen_session}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One results folder per kind of session, made once for the module."""
    root = tmp_path_factory.mktemp("viewer-sessions")
    return {name: make(root / name) for name, make in SESSIONS.items()}


def _every_state(folder: Path) -> tuple[Trajectory, Any]:
    trajectory = build_trajectory(folder)
    return trajectory, replay(folder, keep=trajectory.seqs)


# -- the states at each event are replay's ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_the_state_at_every_event_is_the_one_replay_gives(sessions, name) -> None:
    trajectory, replayed = _every_state(sessions[name])
    assert replayed.final_state_checked  # the log replays to what the session saved
    assert trajectory.seqs == [event.seq for event in replayed.events]
    assert trajectory.payload.replayed == len(replayed.events)
    assert trajectory.payload.session.replay_error is None
    for seq in trajectory.seqs:
        state = replayed.state_at(seq)
        assert trajectory.state(seq) == state, seq
        for role, view_ in state["views"].items():
            assert trajectory.view(seq, role) == view_
            # what each member could read: Coordinator.visible_chat's rule
            assert trajectory.visible_chat(seq, role) == [
                m for m in state["chat"] if m["to"] is None or role in (m["to"], m["sender"])]
    # The payload survives its wire form (gzipped JSON) and gives the same states.
    again = Trajectory(TrajectoryPayload.model_validate(decode(trajectory.encoded())))
    for seq in trajectory.seqs[:: max(1, len(trajectory.seqs) // 10)]:
        assert again.state(seq) == replayed.state_at(seq)


def test_each_task_shows_its_own_views(sessions) -> None:
    kinds = {name: {c["render_type"] for c in build_trajectory(folder).view(
        read_events(folder)[-1].seq, "agent")["components"]} for name, folder in sessions.items()}
    assert kinds["example"] == {"checklist", "search_results"}
    assert "plan" in kinds["plans"] and "checklist" in kinds["plans"]
    assert kinds["kitchen"] == {"kitchen"}


def _node_states(payload_path: Path, seqs: list[int], role: str) -> Any:
    """Decode the payload with the browser module (in node) and give, at each of ``seqs``, the
    member's components, what it could read of the chat, and the rest of the state."""
    script = f"""
import {{ readFileSync }} from "node:fs";
const viewer = await import({json.dumps(VIEWER_MODULE.as_uri())});
const bytes = new Uint8Array(readFileSync({json.dumps(str(payload_path))}));
const payload = JSON.parse(await viewer.gunzip(bytes));
const frames = new viewer.Frames(payload);
const out = {{}};
for (const seq of {json.dumps(seqs)}) {{
  const index = payload.events.findIndex((event) => event.seq === seq);
  out[seq] = {{ components: frames.components(index, {json.dumps(role)}),
    chat: frames.visibleChat(index, {json.dumps(role)}), rest: frames.rest(index) }};
}}
console.log(JSON.stringify(out));
"""
    ran = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True,
                         text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


@pytest.mark.parametrize(("name", "role"), [("kitchen", "user"), ("plans", "user"),
                                            ("hostile", "observer")])
def test_the_browser_module_rebuilds_the_same_states(sessions, tmp_path, name, role) -> None:
    trajectory, replayed = _every_state(sessions[name])
    payload = tmp_path / "payload.gz"
    payload.write_bytes(trajectory.encoded())
    seqs = trajectory.seqs
    shown = _node_states(payload, seqs, role)
    for seq in seqs:
        state = replayed.state_at(seq)
        got = shown[str(seq)]
        assert got["components"] == state["views"][role]["components"], seq
        assert got["chat"] == [m for m in state["chat"]
                               if m["to"] is None or role in (m["to"], m["sender"])], seq
        assert got["rest"] == {k: v for k, v in state.items() if k not in ("views", "chat")}


# -- hostile text --------------------------------------------------------------------------------


def test_hostile_texts_reach_the_payload_as_valid_text(sessions) -> None:
    folder = sessions["hostile"]
    trajectory = build_trajectory(folder)
    end = trajectory.seqs[-1]
    items = [item["text"] for item in trajectory.view(end, "agent")["components"][0]["content"]]
    # The coordinator turned the lone surrogate into U+FFFD; markup, U+2028 and NUL stay.
    assert items[0] == HOSTILE_ITEM.replace("\ud800", "\ufffd")
    assert MARKUP in items[0] and LINE_SEPARATOR in items[0] and NUL in items[0]
    texts = [m["text"] for m in trajectory.visible_chat(end, "user")]
    assert BIG in texts and PRIVATE_NOTE in texts
    # The private message is the user's and the agent's, not the observer's.
    assert PRIVATE_NOTE not in [m["text"] for m in trajectory.visible_chat(end, "observer")]
    data = decode(trajectory.encoded())  # valid UTF-8 JSON: no surrogate survived anywhere
    prompt = data["calls"]["agent"][0]["messages"][1]["content"]
    assert "\ufffd" in prompt and LINE_SEPARATOR in prompt and NUL in prompt
    assert "\ud800" not in json.dumps(data, ensure_ascii=False)


def test_the_export_holds_no_session_text_in_its_markup(sessions, tmp_path) -> None:
    trajectory = build_trajectory(sessions["hostile"])
    page = html_document(trajectory, sessions=["a", "b"], session="a")
    assert "onerror" not in page and "window.pwned" not in page and "big-start" not in page
    # Self-contained: nothing is fetched (no src, no link, no URL but the SVG-free page's own).
    assert not re.search(r"<(script|img|link|iframe)[^>]*\b(src|href)=", page)
    assert "http://" not in page and "https://" not in page
    packed = re.search(r'id="cogym-trajectory-data">([A-Za-z0-9+/=]+)<', page)
    assert packed is not None
    assert decode(base64.b64decode(packed.group(1))) == decode(trajectory.encoded())
    code = re.search(r'id="cogym-trajectory-code">([A-Za-z0-9+/=]+)<', page)
    assert code is not None
    bundle = json.loads(gzip.decompress(base64.b64decode(code.group(1))))
    assert bundle["state"] == {"sessions": ["a", "b"], "session": "a", "error": ""}
    assert "export class WorkspaceView" in bundle["panel_module"]
    assert "export async function standalone" in bundle["viewer_module"]
    assert ".cogym-trajectory" in bundle["css"] and ".cogym-panel" in bundle["css"]
    assert f"<title>Trajectory · {trajectory.payload.session.session_id} · todo</title>" in page


# -- what each event changed ---------------------------------------------------------------


def test_each_event_lists_what_it_changed(sessions) -> None:
    trajectory = build_trajectory(sessions["hostile"])
    events = {event.seq: event for event in read_events(sessions["hostile"])}
    hat = next(seq for seq, e in events.items() if e.action == 'ADD_ITEM(text="hat")')
    changes = trajectory.changes(hat)
    paths = [change.path for change in changes.changes]
    # Adding "hat": item 1 of the shared checklist, the agent's step count 3 -> 4 (it had
    # added an item and sent two messages: 1 + 2 = 3 steps), and the outcome's item 1.
    assert paths == ["workspace.checklist.content[1]", "step_counts.agent", "outcome[1]"]
    assert changes.count == 3
    counts = changes.changes[1]
    assert (counts.before, counts.after) == ("3", "4")
    refused = next(seq for seq, e in events.items() if e.status == "error")
    # A refused action changes nothing in the workspace; it still counts as the agent's step
    # (5 -> 6: the item, two messages, "hat", the big message, then this).
    assert [(c.path, c.before, c.after) for c in trajectory.changes(refused).changes] == [
        ("step_counts.agent", "5", "6")]
    private = next(seq for seq, e in events.items() if "Only you" in (e.action or ""))
    assert [c.path for c in trajectory.changes(private).changes] == [
        "chat[1]", "step_counts.agent"]
    # The first event: everything appears (each part of the state, once).
    first = trajectory.changes(trajectory.seqs[0])
    assert {c.before for c in first.changes} == {"(missing)"}


def test_a_long_list_of_changes_is_cut_and_counted(sessions) -> None:
    trajectory = build_trajectory(sessions["kitchen"])
    first = trajectory.changes(trajectory.seqs[0])
    assert first.count >= 1
    many = max(trajectory.payload.changes, key=lambda c: c.count)
    assert len(many.changes) == min(many.count, MAX_CHANGES)
    assert all(len(change.after) <= 120 for change in many.changes)


def test_differences_walks_every_difference_first_difference_the_first() -> None:
    before = {"a": [1, 2, {"x": True}], "b": "same", "c": {"k": 1}}
    after = {"a": [1, 3, {"x": 1}], "b": "same", "d": None}
    found = [(d.path, d.expected, d.actual) for d in differences(before, after)]
    # a[1]: 2 -> 3; a[2].x: true is not 1 in JSON; c gone; d new.
    assert [(path, str(left), str(right)) for path, left, right in found] == [
        ("a[1]", "2", "3"), ("a[2].x", "True", "1"), ("c", "{'k': 1}", "(missing)"),
        ("d", "(missing)", "None")]
    first = first_difference(before, after)
    assert first is not None and first.path == "a[1]"
    assert list(differences(before, before)) == [] and first_difference(after, after) is None


# -- the value table: patches ---------------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), [
    ({"a": 1, "b": [1, 2, 3]}, {"a": 1, "b": [1, 5]}),  # a list cut, an item changed
    ({"a": 1}, {"a": 1, "b": {"c": [1]}}),  # a key added at the end
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # reordered: the order is kept (a whole value)
    ([1, 2], [1, 2, 3, {"x": None}]),  # grown
    ({"t": True}, {"t": 1}),  # true is not 1
    ("text", {"now": "an object"}),
    ({"gone": 1, "kept": 2}, {"kept": 2}),
])
def test_a_patch_gives_back_exactly_the_new_value(old, new) -> None:
    table = ValueTable()
    base = table.add(old)
    number = table.add(new, base=base)
    values = decode_entries(table.entries)
    assert json.dumps(values[number]) == json.dumps(new)  # same keys in the same order
    assert apply_patch(old, make_patch(old, new)) == new


def test_values_are_stored_once_and_patch_chains_are_cut() -> None:
    table = ValueTable()
    state = {"tick": 0, "board": [[0] * 20 for _ in range(20)]}
    numbers = [table.add(state)]
    for tick in range(1, 3 * MAX_CHAIN):
        state = {**state, "tick": tick}
        numbers.append(table.add(state, base=numbers[-1]))
    assert table.add({"tick": 5, "board": state["board"]}) == numbers[5]  # seen: reused
    whole = [n for n, entry in enumerate(table.entries) if "v" in entry]
    # A whole value first, then one every MAX_CHAIN + 1 entries: 72 entries, 3 whole.
    assert whole == [0, MAX_CHAIN + 1, 2 * (MAX_CHAIN + 1)]
    assert len(table.entries) == 3 * MAX_CHAIN
    assert decode_entries(table.entries)[-1] == state


def test_a_long_kitchen_game_is_sent_as_patches(tmp_path) -> None:
    folder = kitchen_session(tmp_path / "game", ticks=300)
    trajectory = build_trajectory(folder)
    ticks = [e for e in trajectory.payload.events if e.type == "clock"]
    assert len(ticks) == 300
    entries = trajectory.payload.values
    whole = sum("v" in entry for entry in entries)
    # Per member the kitchen changes every tick: at most one whole value per MAX_CHAIN + 1
    # (and a few for the first views and states).
    assert whole <= len(entries) / (MAX_CHAIN + 1) + 10
    sent = len(trajectory.encoded())
    whole_views = len(json.dumps(trajectory.view(ticks[-1].seq, "agent"))) * len(ticks) * 2
    assert sent * 20 < whole_views  # at least 20 times smaller than a view per tick per member
    assert sent / len(ticks) < 400, sent  # bytes a tick, gzipped


# -- the LM call behind an event ------------------------------------------------------------------


def test_each_act_gets_the_last_call_that_returned_before_it(sessions) -> None:
    folder = sessions["hostile"]
    trajectory = build_trajectory(folder)
    acts = [e for e in read_events(folder) if e.actor == "agent"]
    matches = {m.seq: m for m in trajectory.payload.call_matches}
    # The log has two calls before the first act (200 ms and 50 ms before it), one before each
    # later act, and one 5 s after the last: 2 + 6 + 1 = 9 calls, the last matched to nothing.
    assert [(m.seq, m.call, m.earlier) for m in trajectory.payload.call_matches] == [
        (acts[0].seq, 1, [0])] + [(e.seq, n + 2, []) for n, e in enumerate(acts[1:])]
    assert all(m.role == "agent" for m in matches.values())
    assert trajectory.payload.unmatched_calls == {"agent": 1}
    refused = next(e for e in acts if e.status == "error")
    role, call, earlier = next(trajectory.calls_behind(refused.seq))
    assert (role, earlier) == ("agent", []) and call.completion == "Action: NOT_AN_ACTION("
    assert call.seed == 7 and call.usage == {"prompt_tokens": 45, "completion_tokens": 7}
    user_finish = next(e for e in read_events(folder) if e.type is EventType.FINISH)
    assert list(trajectory.calls_behind(user_finish.seq)) == []  # the user has no LM log


def test_the_plan_aware_agents_calls_are_its_real_client_log(sessions) -> None:
    folder = sessions["plans"]
    trajectory = build_trajectory(folder)
    calls = trajectory.payload.calls["agent"]
    assert calls and all(call.model == "agent-lm" and call.messages for call in calls)
    proposal = next(e for e in read_events(folder) if (e.action or "").startswith(
        "PROPOSE_PLANS"))
    role, call, _ = next(trajectory.calls_behind(proposal.seq))
    assert role == "agent" and "Plans:" in (call.completion or "")
    assert call.ended is not None and call.ended <= proposal.time


def _event(seq: int, time: float, actor: str | None, **info: Any) -> Event:
    return Event(seq=seq, time=time, type=EventType.ACTION if actor else EventType.CLOCK,
                 actor=actor, action="X()" if actor else None, info=info)


def test_calls_are_matched_by_time_member_by_member() -> None:
    # Calls of "a" returned at t=1.0, 1.5, 2.5, 9 and one with no time; of "b" at 2.0.
    stamp = "2030-01-01T00:00:{:06.3f}+00:00"
    base = 1893456000.0  # 2030-01-01 UTC, in seconds
    calls = {"a": parse_calls([{"time": stamp.format(s)} for s in (1.0, 1.5, 2.5, 9.0)]
                              + [{"time": None}, "not an object"]),
             "b": parse_calls([{"time": stamp.format(2.0)}])}
    events = [
        _event(1, base + 0.5, None),  # a clock tick: no member's
        _event(2, base + 2.0, "a"),  # calls 0 and 1 returned since a's start: 1, after 0
        _event(3, base + 2.2, "b"),  # b's call 0 (2.0 <= 2.2)
        _event(4, base + 2.6, "a", follow_up=True),  # deferred work's result: no call of a's
        _event(5, base + 3.0, "a"),  # call 2 (2.5), after the follow-up
        _event(6, base + 4.0, "a"),  # nothing returned since event 5
    ]
    matches, unmatched = match_calls(events, calls)
    assert [(m.seq, m.role, m.call, m.earlier) for m in matches] == [
        (2, "a", 1, [0]), (3, "b", 0, []), (5, "a", 2, [])]
    # a: call 3 returned after its last event, one has no time, one line is not an object.
    assert unmatched == {"a": 3}


# -- labels ---------------------------------------------------------------------------------


def test_labels_sit_at_their_events_and_the_rest_on_the_session(sessions) -> None:
    trajectory = build_trajectory(sessions["hostile"])
    events = read_events(sessions["hostile"])
    message = next(e for e in events if e.type is EventType.MESSAGE).seq
    finish = next(e for e in events if e.type is EventType.FINISH).seq
    assert [(label.source, label.code) for label in trajectory.labels(message)] == [
        ("failure", "C.1")]
    assert trajectory.labels(message)[0].attribution == "lm"
    at_finish = trajectory.labels(finish)
    assert [(label.source, label.code, label.critical) for label in at_finish] == [
        ("audit", "ended_before_agent_acted", True), ("check", "finished_after_agreeing", False)]
    assert [label.code for label in trajectory.labels(None)] == ["PL.2"]
    summary = trajectory.payload.session
    assert summary.flagged is True
    assert summary.files == {"failures.json": "read", "user_audit.json": "read"}


def test_label_files_may_be_absent_broken_or_partly_wrong(tmp_path) -> None:
    labels, files, flagged = read_labels(tmp_path, [1, 2])
    assert (labels, flagged) == ([], None)
    assert files == {"failures.json": "absent", "user_audit.json": "absent"}
    (tmp_path / "failures.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "user_audit.json").write_text(json.dumps({
        "errors": [{"type": "invented_preference", "seq": 2, "quote": "q"},
                   {"severity": "minor"},  # no type: skipped
                   "garbage",
                   {"type": "ignored_question", "seq": 99, "quote": "elsewhere"}],  # no event 99
        "checks": [{"check": "contradicted", "seq": "2"}],  # a seq that is not a number
    }), encoding="utf-8")
    labels, files, flagged = read_labels(tmp_path, [1, 2])
    assert files["failures.json"].startswith("unreadable: JSONDecodeError")
    assert files["user_audit.json"] == "read" and flagged is None
    assert [(label.code, label.seq) for label in labels] == [
        ("invented_preference", 2), ("ignored_question", None), ("contradicted", None)]


# -- a log that does not replay --------------------------------------------------------------------


def test_a_log_that_stops_replaying_still_shows_its_timeline(sessions, tmp_path) -> None:
    folder = tmp_path / "edited"
    folder.mkdir()
    for name in ("session.json", "events.jsonl"):
        (folder / name).write_bytes((sessions["example"] / name).read_bytes())
    lines = (folder / "events.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    event = json.loads(lines[4])
    event["status"] = "error"  # event 5 did not fail: replay refuses the log there
    lines[4] = json.dumps(event) + "\n"
    (folder / "events.jsonl").write_text("".join(lines), encoding="utf-8")
    trajectory = build_trajectory(folder)
    assert len(trajectory.payload.events) == len(lines)
    assert trajectory.payload.replayed == 4
    assert "ReplayMismatch" in (trajectory.payload.session.replay_error or "")
    assert trajectory.replayed(4) and not trajectory.replayed(5)
    with pytest.raises(KeyError, match="did not replay"):
        trajectory.state(5)
    assert trajectory.changes(6).count == 0


# -- the widget, the magic, the command ------------------------------------------------------------


def test_the_widget_lists_a_runs_sessions_and_shows_the_one_picked(sessions) -> None:
    run = sessions["example"].parent
    viewer = cogym_lab.view(run)
    assert isinstance(viewer, TrajectoryViewer) and cogym_lab.view is view
    assert viewer.sessions == sorted(SESSIONS) and viewer.session == "example"
    assert viewer.panel_module.startswith("// Co-Gym session panel")
    shown = decode(viewer.payload)
    assert shown["session"]["task"] == "todo" and not viewer.error
    replayed = replay(sessions["example"], keep=[3])
    assert viewer.frame(3) == replayed.state_at(3)
    viewer.seq, viewer.role = 5, "user"
    viewer.session = "kitchen"  # another session: replayed and sent, from its first event
    assert decode(viewer.payload)["session"]["task"] == "kitchen"
    assert (viewer.seq, viewer.role) == (0, "")
    assert viewer.frame(1) == replay(sessions["kitchen"], keep=[1]).state_at(1)
    with pytest.raises(ValueError, match="no session 'nope'"):
        view(run, session="nope")
    empty = run / "empty-folder"
    empty.mkdir(exist_ok=True)
    with pytest.raises(FileNotFoundError, match="holds no session"):
        view(empty)


def test_the_widget_exports_the_session_shown(sessions, tmp_path) -> None:
    viewer = view(sessions["example"].parent, session="plans")
    path = viewer.export_html(tmp_path / "out" / "plans.html")
    page = path.read_text(encoding="utf-8")
    packed = re.search(r'id="cogym-trajectory-data">([A-Za-z0-9+/=]+)<', page)
    assert packed is not None
    assert decode(base64.b64decode(packed.group(1)))["session"]["folder"] == "plans"


def test_the_magic_shows_the_viewer_and_keeps_it(sessions, capsys) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "cogym_lab")
    shell.run_line_magic("cogym", f"view {sessions['example'].parent} --session hostile")
    viewer = shell.user_ns["cogym_viewer"]
    assert isinstance(viewer, TrajectoryViewer) and viewer.session == "hostile"
    shell.run_line_magic("cogym", f"view {sessions['example'].parent / 'missing'}")
    assert "%cogym view:" in capsys.readouterr().out


def test_the_command_writes_the_html_file(sessions, tmp_path) -> None:
    out = tmp_path / "kitchen.html"
    ran = CliRunner().invoke(main, ["eval", "view", str(sessions["example"].parent),
                                    "--session", "kitchen", "--html", str(out)])
    assert ran.exit_code == 0, ran.output
    assert "kitchen: " in ran.output and "4 sessions in" in ran.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    missing = CliRunner().invoke(main, ["eval", "view", str(sessions["example"].parent),
                                        "--session", "nope", "--html", str(out)])
    assert missing.exit_code != 0 and "no session 'nope'" in missing.output


# -- the browser module's shape ------------------------------------------------------------------


def _node(script: str) -> Any:
    ran = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True,
                         text=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_the_viewer_module_parses_exports_its_entry_points_and_is_type_checked() -> None:
    source = VIEWER_MODULE.read_text(encoding="utf-8")
    assert [n for n, line in enumerate(source.splitlines(), 1) if len(line) > 120] == []
    assert "innerHTML" not in source and "insertAdjacentHTML" not in source  # text only
    kinds = _node(f"const m = await import({json.dumps(VIEWER_MODULE.as_uri())});\n"
                  "console.log(JSON.stringify(Object.fromEntries(Object.entries(m).map("
                  "([k, v]) => [k, typeof v]))));")
    assert kinds == {"default": "object", "gunzip": "function", "applyPatch": "function",
                     "Frames": "function", "TrajectoryViewer": "function",
                     "standalone": "function"}
    # tests/widgets/test_panel_js_checks.py type-checks every file jsconfig lists, strictly.
    config = json.loads((REPO / "js" / "jsconfig.json").read_text(encoding="utf-8"))
    assert "trajectory_viewer.js" in config["files"]


def test_the_browser_applies_patches_as_python_does() -> None:
    cases = [({"a": 1, "b": [1, 2, 3]}, {"a": 2, "b": [1, 5]}),
             ({"a": 1, "gone": 0}, {"a": 1, "b": {"c": [1]}}),
             ([1, 2], [1, 2, 3, {"x": None}]), ([{"t": {"u": [0, 1]}}], [{"t": {"u": [2]}}]),
             ({"k": "x"}, "now a text")]
    patches = [[old, make_patch(old, new)] for old, new in cases]
    got = _node(f"const {{ applyPatch }} = await import({json.dumps(VIEWER_MODULE.as_uri())});\n"
                f"const cases = {json.dumps(patches)};\n"
                "console.log(JSON.stringify(cases.map(([old, patch]) => applyPatch(old, patch))));")
    assert [json.dumps(value) for value in got] == [json.dumps(new) for _, new in cases]
    assert [apply_patch(old, patch) for old, patch in patches] == [new for _, new in cases]
