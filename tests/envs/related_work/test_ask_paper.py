"""ASK_PAPER on the bundled sample corpus, with the loopback LM server: the paper's text and the
question reach the prompt, the answer lands in the asker's view only, an unknown id is refused
with the expected form, and hostile questions (NUL, U+2028, 1 MB, markup) are handled."""

from __future__ import annotations

import json

import pytest

from cogym_lab.core.coordinator import Coordinator
from cogym_lab.core.messages import TeamMember
from cogym_lab.datasets import DATA_ENV_VAR
from cogym_lab.envs.related_work import RelatedWorkEnv
from cogym_lab.envs.related_work.asking import QUESTION_LIMIT
from cogym_lab.envs.related_work.search import BM25PaperIndex
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.notified import notified

pytestmark = pytest.mark.usefixtures("no_ambient_lm")
TEAM = [TeamMember(role="agent"), TeamMember(role="user", kind="user")]
PAPER = "acl:2020.acl-main.527"  # "Relabel the Noise ..." in the sample


@pytest.fixture(scope="module")
def sample_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def sample_index(tmp_path, sample_cache, monkeypatch):
    """The bundled sample's index: no data folder, a fresh home, one cache for the module."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(sample_cache))
    monkeypatch.delenv(DATA_ENV_VAR, raising=False)
    return BM25PaperIndex.load_or_build(progress=False)


@pytest.fixture
def server():
    with ScriptedOpenAIServer() as running:
        running.responder = lambda body: "It studies shifted label distribution."
        yield running


def _session(index, server):
    reader = make_lm(LMConfig(model="reader-lm", base_url=server.base_url, max_retries=0))
    env = RelatedWorkEnv(instance=0, search=index, drafting_lm=reader)
    coordinator = Coordinator(env, TEAM, session_id="ask")
    notified(coordinator, coordinator.start(0.0))
    return env, coordinator


async def _ask(coordinator, role, action, when=1.0):
    asked = coordinator.handle(role, action, when)
    assert asked.events[0].status != "error", asked.events[0].error
    (who, deferred), = asked.deferred
    assert asked.events[0].info["deferred"] == "Reading the paper"
    return coordinator.apply_follow_up(who, await deferred.work(), when + 1)


async def test_the_question_and_the_paper_reach_the_prompt_and_the_answer_the_askers_view(
        sample_index, server):
    env, coordinator = _session(sample_index, server)
    landed = await _ask(coordinator, "user",
                        f'ASK_PAPER(id="{PAPER}", question="What problem does it study?")')
    prompt = json.dumps(server.bodies[-1]["messages"], ensure_ascii=False)
    paper = sample_index.get(PAPER)
    assert paper.title in prompt and paper.abstract[:200] in prompt
    assert "What problem does it study?" in prompt
    assert [n.recipient for n in notified(coordinator, landed)] == ["user"]  # private
    answers = env.view("user")["paper_answers"].content
    assert answers == [{"id": PAPER, "title": paper.title,
                        "question": "What problem does it study?",
                        "answer": "It studies shifted label distribution."}]
    assert env.view("agent")["paper_answers"].content == []


def test_an_unknown_paper_id_is_refused_with_the_expected_form(sample_index, server):
    env, coordinator = _session(sample_index, server)
    refused = coordinator.handle("agent", 'ASK_PAPER(id="no-such-paper", question="Why?")', 1.0)
    error = refused.events[0].error
    assert refused.events[0].status == "error" and not refused.deferred
    assert "No paper with id 'no-such-paper'" in error and 'ASK_PAPER(id="...", question=' in error
    assert server.bodies == []


def test_a_member_cannot_send_the_answer_itself(sample_index, server):
    env, coordinator = _session(sample_index, server)
    forged = coordinator.handle(
        "agent", f'PAPER_ANSWER(id="{PAPER}", question="q", answer="made up")', 1.0)
    assert forged.events[0].status == "error" and env.answers == {}


async def test_hostile_questions_are_cleaned_or_refused(sample_index, server):
    env, coordinator = _session(sample_index, server)
    question = "a\x00b\u2028<script>alert(1)</script> $paper ${question}"
    action = {"name": "ASK_PAPER", "args": {"id": PAPER, "question": question}}
    await _ask(coordinator, "agent", action)
    sent = server.bodies[-1]["messages"][1]["content"]
    assert "ab\n<script>alert(1)</script> $paper ${question}" in sent  # text, not template
    assert "\x00" not in sent and "\u2028" not in sent
    kept = env.answers["agent"][0]["question"]
    assert kept == "ab\n<script>alert(1)</script> $paper ${question}"
    huge = {"name": "ASK_PAPER", "args": {"id": PAPER, "question": "x" * 1_000_000}}
    refused = coordinator.handle("agent", huge, 5.0)
    assert refused.events[0].status == "error" and f"{QUESTION_LIMIT:,} characters" in \
        refused.events[0].error
    blank = coordinator.handle("agent", {"name": "ASK_PAPER",
                                         "args": {"id": PAPER, "question": "\x00 \u2029"}}, 6.0)
    assert blank.events[0].status == "error" and "needs a question" in blank.events[0].error
    assert len(server.bodies) == 1
