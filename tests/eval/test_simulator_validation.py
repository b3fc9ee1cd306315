"""The simulator validation sheet (Co-Gym Appendix D): one row per act of a simulated user,
written as CSV, filled in by people or by an LM (through our real LM client, over aiohttp, against
the loopback server), read back with clear errors, and its measures worked out by hand."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main as cli
from cogym_lab.eval import load_session, report
from cogym_lab.eval.judging.judges import Judge
from cogym_lab.eval.users.simulator_validation import (
    COLUMNS,
    SheetError,
    SheetRow,
    lm_rows,
    measures,
    read_sheet,
    read_sheets,
    sheet_rows,
    write_sheet,
)
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.trajectories import add, confirm, say, write_session

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

#: Events: 1 start, 2 the agent asks for approval, 3 the user accepts (the item is added),
#: 4 the agent's question, 5 the user's answer (a formula-like text), 6 the user's item,
#: 7 a refused item (already listed), 8 a wait (left out), 9 the user's finish, 10 end.
STEPS = [
    ("agent", confirm(add("tent"))),
    ("user", 'ACCEPT_CONFIRMATION(request_id="c1")'),
    ("agent", say("Do you want a stove?")),
    ("user", say("=SUM(A1) no stove, thanks")),
    ("user", add("headlamp")),
    ("user", add("headlamp")),
    ("user", "WAIT_TEAMMATE_CONTINUE()"),
    ("user", "FINISH()"),
]


def test_the_sheet_has_a_row_per_act_of_the_simulated_user(tmp_path: Path) -> None:
    record = load_session(write_session(tmp_path / "s", STEPS))
    rows = sheet_rows(record)
    assert [(r.seq, r.act) for r in rows] == [(3, "confirm_accept"), (5, "message"),
                                              (6, "action"), (7, "error"), (9, "finish")]
    answer = rows[1]
    # A cell that a spreadsheet would run as a formula is quoted.
    assert answer.text == "'=SUM(A1) no stove, thanks"
    assert answer.agent_before == "Do you want a stove?"
    assert rows[0].agent_before == ""  # the agent had said nothing yet
    assert "refused" in rows[3].text and "already" in rows[3].text
    assert {r.role for r in rows} == {"user"} and rows[0].task == "todo"
    assert all(r.accuracy is None and r.rater == "" for r in rows)


def test_a_written_sheet_reads_back_hostile_text_included(tmp_path: Path) -> None:
    hostile = 'Fine\u2028"quoted", <b>bold</b>\nnext line \x00 \ud83d end'
    record = load_session(write_session(tmp_path / "s", [("agent", say("Well?")),
                                                         ("user", say(hostile)),
                                                         ("user", "FINISH()")]))
    path = write_sheet(sheet_rows(record), tmp_path / "sheet.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        assert next(csv.reader(handle)) == COLUMNS
    back = read_sheet(path)
    assert [(r.seq, r.act, r.accuracy) for r in back] == [(3, "message", None),
                                                          (4, "finish", None)]
    # U+2028, quotes, markup and the line break survive; NUL and the lone surrogate become
    # U+FFFD (a CSV cell and a UTF-8 file cannot hold them).
    assert back[0].text == 'Fine\u2028"quoted", <b>bold</b>\nnext line \ufffd \ufffd end'
    assert back[0].agent_before == "Well?"


def fill(path: Path, rater: str, ratings: dict[tuple[str, int], tuple[str, str, str]],
         out: Path) -> Path:
    """A copy of the sheet at ``path`` as ``rater`` filled it in: (accuracy, consistency,
    plausibility) by (session folder name, event number); other rows left blank."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["rater"] = rater
        key = (Path(row["session_dir"]).name, int(row["seq"]))
        row["accuracy"], row["consistency"], row["plausibility"] = ratings.get(key, ("", "", ""))
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return out


@pytest.fixture
def sheet(tmp_path: Path) -> Path:
    """A blank sheet of two sessions: S1's user acts at events 3, 4, 5; S2's at 2 and 3."""
    s1 = write_session(tmp_path / "S1", [("agent", say("Tent?")), ("user", say("Yes.")),
                                         ("user", add("tent")), ("user", "FINISH()")])
    s2 = write_session(tmp_path / "S2", [("user", say("Add a map.")), ("user", "FINISH()")])
    rows = sheet_rows(load_session(s1)) + sheet_rows(load_session(s2))
    assert [(Path(r.session_dir).name, r.seq) for r in rows] == [
        ("S1", 3), ("S1", 4), ("S1", 5), ("S2", 2), ("S2", 3)]
    return write_sheet(rows, tmp_path / "blank.csv")


def test_the_measures_by_majority_vote(sheet: Path, tmp_path: Path) -> None:
    # Three people and an LM; each rating is (accuracy, consistency, plausibility), and nobody
    # answers plausibility.
    def votes(accuracy: dict[tuple[str, int], str]) -> dict[tuple[str, int],
                                                           tuple[str, str, str]]:
        return {key: (value, "1", "") for key, value in accuracy.items()}

    files = [
        fill(sheet, "h1", votes({("S1", 3): "y", ("S1", 4): "yes", ("S1", 5): "0",
                                 ("S2", 2): "1", ("S2", 3): "TRUE"}), tmp_path / "h1.csv"),
        fill(sheet, "h2", votes({("S1", 3): "1", ("S1", 4): "n", ("S1", 5): "no"}),
             tmp_path / "h2.csv"),
        fill(sheet, "h3", votes({("S1", 3): "0", ("S1", 5): "1"}), tmp_path / "h3.csv"),
        fill(sheet, "lm:judge", votes({("S1", 3): "1", ("S1", 4): "1", ("S1", 5): "1",
                                       ("S2", 2): "1", ("S2", 3): "0"}), tmp_path / "lm.csv"),
    ]
    table = {(r["task"], r["raters"]): r for r in measures(read_sheets(files))}
    assert list(table) == [("todo", "human"), ("todo", "lm"), ("all", "human"), ("all", "lm")]
    human = table[("todo", "human")]
    # Accuracy by majority: S1/3 y,y,n -> yes; S1/4 y,n -> a tie, undecided; S1/5 n,n,y -> no;
    # S2/2 y -> yes; S2/3 y -> yes. Decided 4, positive 3: 0.75. Sessions: S1 has a "no", S2
    # does not: 1 of 2.
    assert (human["accuracy"], human["accuracy_undecided"]) == (0.75, 1)
    assert human["accuracy_sessions"] == 0.5
    assert (human["consistency"], human["consistency_sessions"]) == (1.0, 1.0)
    assert math.isnan(human["plausibility"]) and human["plausibility_undecided"] == 0
    assert (human["rater_names"], human["sessions"], human["turns"]) == (3, 2, 5)
    lm = table[("todo", "lm")]
    # The LM: yes on 4 of 5 turns (no on S2/3); sessions: S1 yes, S2 no -> 0.5. It agrees with
    # the people on S1/3 and S2/2, not on S1/5 and S2/3 (S1/4 the people did not decide): 2/4.
    assert (lm["accuracy"], lm["accuracy_sessions"], lm["accuracy_agreement"]) == (0.8, 0.5,
                                                                                   0.5)
    assert lm["consistency_agreement"] == 1.0 and "accuracy_agreement" not in human
    assert table[("all", "human")]["accuracy"] == 0.75


@pytest.mark.parametrize(("edit", "message"), [
    (lambda rows: rows[1].__setitem__("accuracy", "maybe"),
     "line 3, column accuracy: 'maybe' is not a rating"),
    (lambda rows: rows[0].__setitem__("seq", "three"),
     "line 2, column seq: 'three' is not an event number"),
    (lambda rows: rows[0].__setitem__("session_dir", " "), "line 2, column session_dir: empty"),
])
def test_a_bad_row_is_refused_with_its_line_and_column(sheet: Path, tmp_path: Path, edit: Any,
                                                        message: str) -> None:
    with sheet.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    edit(rows)
    bad = tmp_path / "bad.csv"
    with bad.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(SheetError, match=message.replace("(", r"\(")) as caught:
        read_sheet(bad)
    assert str(bad) in str(caught.value)


def test_malformed_sheets_are_refused_plainly(sheet: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    missing.write_text("session_dir,seq,accuracy\nS1,3,1\n", encoding="utf-8")
    with pytest.raises(SheetError, match="no column consistency, plausibility"):
        read_sheet(missing)
    extra = tmp_path / "extra.csv"
    extra.write_text(sheet.read_text(encoding="utf-8").replace(",,,,\n", ",,,,,surplus\n", 1),
                     encoding="utf-8")
    with pytest.raises(SheetError, match="line 2: more cells than columns"):
        read_sheet(extra)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("session_dir,seq\ncaf\xe9,1\n".encode("latin-1"))
    with pytest.raises(SheetError, match="not UTF-8"):
        read_sheet(latin)
    nul = tmp_path / "nul.csv"  # a NUL byte in a cell is read, as U+FFFD
    nul.write_text(sheet.read_text(encoding="utf-8").replace("Yes.", "Ye\x00s."),
                   encoding="utf-8")
    assert any("Ye\ufffds." in row.text for row in read_sheet(nul))
    # One rater may rate a turn once, across files too.
    filled = fill(sheet, "ann", {("S1", 3): ("1", "1", "1")}, tmp_path / "ann.csv")
    with pytest.raises(SheetError, match=r"rater ann rated event 3 .* twice"):
        read_sheets([filled, filled])
    assert read_sheets([sheet]) == read_sheet(sheet)  # a blank sheet: no ratings, no error
    assert next(r for r in read_sheet(filled) if r.accuracy is not None).seq == 3


# -- the LM rater -------------------------------------------------------------------------------


def judge_for(server: ScriptedOpenAIServer) -> Judge:
    return Judge(make_lm(LMConfig(model="validator-lm", base_url=server.base_url,
                                  max_retries=0, timeout=30)))


async def test_an_lm_fills_the_sheet(tmp_path: Path, server: ScriptedOpenAIServer) -> None:
    record = load_session(write_session(tmp_path / "s", STEPS))
    # First reply rates 4 of the 5 turns (and one entry is not usable): asked again.
    server.add(json.dumps({"ratings": [
        {"turn": 1, "accuracy": True, "consistency": True, "plausibility": True},
        {"turn": 2, "accuracy": "yes", "consistency": 1, "plausibility": "no", "note": "odd"},
        {"turn": 3, "accuracy": False, "consistency": True, "plausibility": True},
        {"turn": 4, "accuracy": "perhaps", "consistency": True, "plausibility": True},
        {"turn": 99, "accuracy": True, "consistency": True, "plausibility": True},
        "turn 5 is fine"]}))
    server.add(json.dumps({"ratings": [
        {"turn": n, "accuracy": n != 3, "consistency": True, "plausibility": n != 2,
         "note": "\ud83d" if n == 5 else ""} for n in range(1, 6)]}))
    rows = await lm_rows(judge_for(server), record, "Pack for camping.")
    assert rows is not None and {r.rater for r in rows} == {"lm:validator-lm"}
    assert [(r.seq, r.accuracy, r.plausibility) for r in rows] == [
        (3, True, True), (5, True, False), (6, False, True), (7, True, True), (9, True, True)]
    assert rows[-1].note == "\ufffd"
    assert "no yes/no ratings for turns [4, 5]" in server.bodies[1]["messages"][-1]["content"]
    prompt = server.bodies[0]["messages"][-1]["content"]
    assert "You will not go without: rain jacket, headlamp." in prompt  # the task's hidden info
    assert "[T2] event 5, user message: '=SUM(A1) no stove, thanks" in prompt
    assert "Pack for camping." in prompt
    # Written and read back as any sheet, its measures under "lm".
    table = measures(read_sheet(write_sheet(rows, tmp_path / "lm.csv")))
    assert table[0]["raters"] == "lm" and table[0]["accuracy"] == 0.8  # 4 of 5


@pytest.mark.parametrize("replies", [
    [Reply(garbage=True)], [Reply(status=429)],
    ["prose", '{"ratings": [{"turn": 1, "accuracy": tr'],
    ['{"ratings": "all good"}', '{"ratings": [{"turn": "1"}, 5]}'],
], ids=["not-json", "http-error", "prose-then-truncated", "wrong-types"])
async def test_an_unusable_lm_rating_is_none(tmp_path: Path, server: ScriptedOpenAIServer,
                                            replies: list[str | Reply]) -> None:
    record = load_session(write_session(tmp_path / "s", STEPS))
    server.extend(replies)
    assert await lm_rows(judge_for(server), record) is None


# -- the commands ------------------------------------------------------------------------------


def test_the_sheet_command_and_the_report(tmp_path: Path) -> None:
    write_session(tmp_path / "runs" / "s", STEPS)
    runner = CliRunner()
    blank = tmp_path / "blank.csv"
    result = runner.invoke(cli, ["eval", "validation-sheet", str(tmp_path / "runs"),
                                 "--out", str(blank)])
    assert result.exit_code == 0, result.output
    assert f"5 turns of simulated users in 1 sessions -> {blank}" in result.output
    assert len(read_sheet(blank)) == 5

    def rate(body: dict[str, Any]) -> str:
        return json.dumps({"ratings": [{"turn": n, "accuracy": True, "consistency": n != 1,
                                        "plausibility": True} for n in range(1, 6)]})

    rated = tmp_path / "lm.csv"
    with ScriptedOpenAIServer(responder=rate) as server:
        result = runner.invoke(cli, ["eval", "validation-sheet", str(tmp_path / "runs"),
                                     "--out", str(rated), "--judge", "validator-lm",
                                     "--judge-base-url", server.base_url])
    assert result.exit_code == 0, result.output
    people = fill(blank, "ann", {("s", 3): ("1", "1", "1"), ("s", 5): ("1", "0", "1")},
                  tmp_path / "ann.csv")
    result = runner.invoke(cli, ["eval", "report", str(tmp_path / "runs"), "--validation",
                                 str(rated), "--validation", str(people)])
    assert result.exit_code == 0, result.output
    assert "Simulator validation" in result.output
    table = {r["raters"]: r for r in report([tmp_path / "runs"], effort=False,
                                            validation=[rated, people])
             .tables["simulator_validation"].to_dict("records") if r["task"] == "todo"}
    # ann rated events 3 and 5: accuracy yes on both, consistency yes then no (1/2; the one
    # session has a "no": 0). The LM: consistency no on turn 1 (event 3) only, 4/5; it
    # disagrees with ann on both turns she rated for consistency, agrees on accuracy.
    human, lm = table["human"], table["lm"]
    assert (human["turns"], human["accuracy"], human["consistency"],
            human["consistency_sessions"]) == (2, 1.0, 0.5, 0.0)
    assert (lm["turns"], lm["consistency"], lm["consistency_agreement"],
            lm["accuracy_agreement"]) == (5, 0.8, 0.0, 1.0)
    bad = tmp_path / "bad.csv"
    bad.write_text(people.read_text(encoding="utf-8").replace(",1,0,1,", ",1,x,1,"),
                   encoding="utf-8")
    result = runner.invoke(cli, ["eval", "report", str(tmp_path / "runs"), "--validation",
                                 str(bad)])
    assert result.exit_code != 0 and "column consistency: 'x' is not a rating" in result.output


def test_sheet_rows_are_one_model_per_concept() -> None:
    row = SheetRow(session_dir="d", session_id="s", task="t", instance="0", role="user", seq=1,
                   act="message", text="x", rater="lm:m")
    assert row.source == "lm" and row.model_copy(update={"rater": "ann"}).source == "human"
