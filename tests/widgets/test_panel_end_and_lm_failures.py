"""What a person reads in the panel at the end of a session and when the agent's LM fails, from
real sessions: their notifications and statuses, taken off the bus, are delivered to the
panel's real ES module in headless Chromium (the page of tests/widgets/test_widgets.py), and the page's
visible text is checked. Screenshots go to ``test-artifacts/panel/<test>/``.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from cogym_lab.agents.collaborative import CollaborativeAgent
from cogym_lab.bus import MemoryBus
from cogym_lab.core.messages import StepRequest, obs_channel, status_channel, step_channel
from cogym_lab.envs.todo.env import TodoEnv
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.nodes.session import Session, SessionConfig
from cogym_lab.testing import Reply, ScriptedOpenAIServer
from tests.support.frames import last_seen
from tests.support.paths import REPO_ROOT
from tests.widgets.test_widgets import LOCAL_STATE, _by, _open_page, browser  # noqa: F401 (fixture)

ARTIFACTS = REPO_ROOT / "test-artifacts" / "panel"
#: Internal grammar a person must not read: action calls, exception classes, HTTP statuses.
INTERNAL = [re.compile(r"\b[A-Z][A-Z0-9_]{2,}\("),
            re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception)\b"),
            re.compile(r"\bHTTP \d{3}\b"), re.compile(r"127\.0\.0\.1")]


def _shots(name: str) -> Path:
    folder = ARTIFACTS / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def _person_session(env: Any, agent: Any, person_steps: list[tuple[str, Any]],
                          *, timeout: float = 60) -> tuple[list[dict], list[dict]]:
    """Run a session of ``agent`` and a person seat ``user`` on an in-process bus.

    ``person_steps``: (text the person waits for in the chat, action the person then sends).
    Returns every notification the person got and everything on the status channel."""
    bus = MemoryBus()
    await bus.connect()
    session = Session(env, {"agent": agent, "user": None},
                      kinds={"agent": "agent", "user": "person"}, bus=bus,
                      config=SessionConfig(idle_seconds=2, timeout=timeout))
    sid = session.session_id
    seat = await bus.subscribe(obs_channel(sid, "user"))
    await bus.publish(step_channel(sid), StepRequest(role="user", kind="join"))
    notes: list[dict] = []

    async def person() -> None:
        steps = list(person_steps)
        async for note in seat:
            notes.append(note)
            chat = " ".join(message["text"] for message in note.get("chat") or [])
            if steps and steps[0][0] in chat:
                await bus.publish(step_channel(sid), StepRequest(role="user",
                                                                 action=steps.pop(0)[1]))
            if note.get("done"):
                return

    acting = asyncio.create_task(person())
    await session.run()
    await asyncio.wait_for(acting, 10)
    statuses = await bus.subscribe(status_channel(sid), from_beginning=True)
    seen = []
    while (message := await statuses.get(timeout=0)) is not None:
        seen.append(message)
    await bus.close()
    return notes, seen


async def _show(page: Any, notes: list[dict], statuses: list[dict]) -> str:
    """Deliver a session's messages to the panel in order; the panel's visible text."""
    deliver = "(message) => window.deliver(message)"
    for note in notes:
        await page.evaluate(deliver, {"type": "notification", "data": note})
    for status in statuses:
        await page.evaluate(deliver, {"type": "status", "data": status})
    return await page.inner_text(_by("cogym-panel"))


def _internal(text: str) -> list[str]:
    return [match.group(0) for pattern in INTERNAL for match in pattern.finditer(text)]


@pytest.mark.parametrize("failure", ["server_errors", "timeout", "garbage"])
async def test_an_lm_failure_reads_in_plain_words_in_the_panel(browser, failure):  # noqa: F811
    replies = {"server_errors": Reply(status=500, error="upstream exploded"),
               "timeout": Reply("late", delay=30),
               "garbage": Reply(garbage=b"<html>502 Bad Gateway</html>")}
    with ScriptedOpenAIServer() as server:
        server.add(replies[failure], repeat=True)
        lm = make_lm(LMConfig(model="agent-lm", base_url=server.base_url, max_retries=0,
                              timeout=1.0, deadline=1.5, backoff=0.01))
        notes, statuses = await _person_session(
            TodoEnv(), CollaborativeAgent(lm, use_scratchpad=False),
            [("My language model is not working", "FINISH()")])
    said = [m["text"] for m in last_seen(notes)["chat"] if m["sender"] == "agent"]
    assert len(said) == 1 and said[0].startswith("My language model is not working right now (")
    assert "check the model name and the server address" in said[0]
    assert ("agent", "failed") in [(s.get("role"), s.get("status")) for s in statuses]

    page, errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    # the failed status as it was, before the end marks every agent finished
    failed = next(s for s in statuses if s.get("status") == "failed")
    deliver = "(message) => window.deliver(message)"
    for note in notes[:-1]:
        await page.evaluate(deliver, {"type": "notification", "data": note})
    await page.evaluate(deliver, {"type": "status", "data": failed})
    await page.wait_for_selector(_by("agent-status", role="agent", status="failed"))
    while_failing = await page.inner_text(_by("cogym-panel"))
    problem = await page.inner_text(_by("agent-problem"))
    assert "check the model name and the server address" in problem
    last = await page.inner_text(_by("agent-last-action"))
    assert last.startswith("last action: said: “My language model is not working"), last
    folder = _shots(f"lm-failure-{failure}")
    await page.screenshot(path=str(folder / "01-agent-failed.png"), full_page=True)
    assert _internal(while_failing) == [], while_failing
    await page.click(_by("agent-last-action"))  # the action as written stays one click away
    assert "SEND_TEAMMATE_MESSAGE(" in await page.inner_text(_by("agent-last-action"))
    assert errors == []


async def test_a_technical_error_is_replaced_by_plain_words_with_the_detail_folded(
        browser):  # noqa: F811
    page, errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    raw = "Drafting failed: LMError: scripted gave no usable answer; last error: HTTP 500: boom"
    await page.evaluate("(message) => window.deliver(message)", {"type": "error", "error": raw})
    await page.wait_for_selector(_by("panel-error"), state="visible")
    text = await page.inner_text(_by("panel-error-text"))
    assert text.startswith("Drafting failed: something went wrong behind the panel.")
    assert _internal(text) == []
    assert await page.is_visible(_by("panel-error-detail"))
    await page.click(f'{_by("panel-error-detail")} summary')
    assert raw in await page.inner_text(_by("panel-error-detail"))
    plain = "Too many actions at once: this one was not applied."
    await page.evaluate("(message) => window.deliver(message)", {"type": "error", "error": plain})
    assert plain in await page.inner_text(_by("panel-error-text"))
    assert await page.is_hidden(_by("panel-error-detail"))
    assert errors == []


class _Packer:
    """The agent side of a todo session: adds the items it is given, then finishes."""

    kind = "agent"

    def __init__(self, items: list[str]) -> None:
        self.items = list(items)

    def start(self, context: Any) -> None:
        pass

    async def act(self, notification: Any) -> Any:
        if self.items:
            return {"name": "ADD_ITEM", "args": {"text": self.items.pop(0)}}
        return "FINISH()"

    def end(self, final: Any) -> None:
        pass


async def test_the_scores_card_shows_each_score_with_the_graders_reasons(browser):  # noqa: F811
    notes, statuses = await _person_session(TodoEnv(), _Packer(["tent", "rain jacket", "map"]),
                                            [])
    assert notes[-1]["done"] and any("grading" in status for status in statuses)
    page, errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    deliver = "(message) => window.deliver(message)"
    for note in notes:
        await page.evaluate(deliver, {"type": "notification", "data": note})
    # the end came first: the card says the grader is at work until the scores arrive
    await page.wait_for_selector(_by("scores-card", state="grading"), state="visible")
    assert "Grading the result" in await page.inner_text(_by("scores-note"))
    folder = _shots("scores-card")
    await page.screenshot(path=str(folder / "01-grading.png"), full_page=True)
    for status in statuses:
        await page.evaluate(deliver, {"type": "status", "data": status})
    await page.wait_for_selector(_by("scores-card", state="graded"), state="visible")
    assert await page.is_visible(_by("rating-form"))
    names = [await score.get_attribute("data-name")
             for score in await page.query_selector_all(_by("score"))]
    assert names == ["performance", "must_have_coverage", "size"]
    coverage = _by("score", name="must_have_coverage")
    assert await page.inner_text(f"{coverage} [data-testid=score-label]") == \
        "Share of the items the person insisted on that made the list"
    assert await page.inner_text(f"{coverage} [data-testid=score-value]") == "0.50"
    reasons = [await reason.inner_text() for reason in
               await page.query_selector_all(f"{coverage} [data-testid=score-reason]")]
    assert reasons == ["On the list: rain jacket.", "Missing: headlamp."]
    size = await page.inner_text(_by("score", name="size"))
    assert "The list has 3 items; the brief asks for at least 6." in size
    await page.locator(_by("scores-card")).screenshot(path=str(folder / "02-scores-card.png"))
    await page.screenshot(path=str(folder / "03-panel-at-the-end.png"), full_page=True)
    assert _internal(await page.inner_text(_by("scores-card"))) == []
    assert errors == []


async def test_the_scores_card_folds_long_reasons_and_says_why_there_are_no_scores(
        browser):  # noqa: F811
    page, errors = await _open_page(browser, "http://panel.test", LOCAL_STATE)
    deliver = "(message) => window.deliver(message)"
    reasons = [f"Passed: check {n}." for n in range(1, 9)] + ["x" * 600]
    await page.evaluate(deliver, {"type": "status", "data": {"ts": 1, "grading": {
        "delivered": True, "scores": {"rate": 0.875, "rate_detail": 1.0},
        "score_reports": [{"name": "rate", "value": 0.875, "label": "Share of checks passed",
                           "reasons": reasons}]}}})
    await page.wait_for_selector(_by("scores-card", state="graded"), state="visible")
    shown = await page.query_selector_all(f'{_by("score-reasons")} > [data-testid=score-reason]')
    assert len(shown) == 3
    more = _by("score-more-reasons")
    assert await page.inner_text(f"{more} summary") == "6 more reasons"
    assert not await page.is_visible(f'{more} [data-testid=score-reason] >> nth=0')
    await page.click(f"{more} summary")
    assert await page.is_visible(f'{more} [data-testid=score-reason] >> nth=0')
    assert await page.text_content(_by("other-score", name="rate_detail")) == "rate_detail: 1"
    folder = _shots("scores-card-folds")
    await page.screenshot(path=str(folder / "01-long-reasons-unfolded.png"), full_page=True)
    await page.evaluate(deliver, {"type": "status", "data": {"ts": 2, "grading": {
        "delivered": True, "scores": {}, "score_reports": [],
        "note": "Not graded: the grader's language model failed (it did not answer within 60 "
                "seconds), so this session has no scores. The result itself is saved.",
        "error": "LMError: judge-lm gave no usable answer within its 60 s deadline"}}})
    await page.wait_for_selector(_by("scores-card", state="not-graded"))
    note = await page.inner_text(_by("scores-note"))
    assert note.startswith("Not graded: the grader's language model failed")
    assert not await page.is_visible(f'{_by("scores-error")} pre')  # folded
    await page.screenshot(path=str(folder / "02-not-graded.png"), full_page=True)
    assert errors == []
