"""The Related Work task's data, drafting and grading: the 100 tasks of the Co-Gym release with
their hidden requirements in plain words, citation reading, counted facts, the judge's score parser,
and drafting and judging through our real LM client (over aiohttp) against a loopback
OpenAI-compatible server."""

from __future__ import annotations

import json
import re

import pytest

from cogym_lab.datasets import DataMissing
from cogym_lab.envs.related_work.drafting import (
    DraftError,
    citations_in,
    draft_from_library,
    format_library,
    unresolved_citations,
)
from cogym_lab.envs.related_work.grader import (
    RelatedWorkGrade,
    ScoreParseError,
    grade_section,
    load_rubric,
    parse_score,
    parse_score_details,
    performance_of,
    release_score,
    section_facts,
)
from cogym_lab.envs.related_work.instances import (
    REQUIREMENT_CODES,
    UNFINDABLE_NOTE,
    RelatedWorkTask,
    load_tasks,
    parse_task,
    requirement_sentence,
)
from cogym_lab.lm import LMConfig, LMError, make_lm
from cogym_lab.testing import Reply, ScriptedOpenAIServer

# --- tasks -----------------------------------------------------------------------------------

RAW_CODE = re.compile(r"\b(?:PS|NS|NC|RP|RH)\b\s*[=:]|^\s*[A-Z]{2}\s*[=:]")


def test_all_100_tasks_load_with_their_fields(use_shared_data):
    tasks = load_tasks()
    assert len(tasks) == 100
    assert [t.index for t in tasks] == list(range(100))
    for task in tasks:
        assert isinstance(task, RelatedWorkTask)
        assert task.title and task.topic and task.domain and task.conference
        assert task.paper_link.startswith("http")
        assert task.title == task.title.strip() and "\n" not in task.title
        assert 3 <= len(task.requirements) <= 9  # "3-9 hints" (Co-Gym, Appendix C.2)
        assert len(task.requirements) == len(task.raw_requirements)


def test_every_requirement_code_becomes_plain_text(use_shared_data):
    tasks = load_tasks()
    codes = {code for task in tasks for code, _ in task.raw_requirements}
    assert codes == {"PS", "NS", "NC", "RP", "RH"}  # every code the release uses
    assert codes <= set(REQUIREMENT_CODES)
    for task in tasks:
        for sentence in task.requirements:
            assert not RAW_CODE.search(sentence), sentence
            assert "(code " not in sentence  # no code fell through to the fallback
            assert "\n" not in sentence and sentence == sentence.strip()
        # NS and NC are in every task
        assert sum(s.startswith("The section should have") for s in task.requirements) == 1
        assert sum(s.startswith("It should cite about") for s in task.requirements) == 1


def test_requirement_sentences_of_a_known_task(use_shared_data):
    task = load_tasks()[0]  # Warm-starting Push-Relabel: PS, NS=0, NC=9
    assert task.raw_requirements[1:] == (("NS", 0), ("NC", 9))
    assert task.requirements[0].startswith("It should cover: Two notable heuristics")
    assert task.requirements[1] == ("The section should have no subsections: one continuous "
                                    "piece of prose without subheadings.")
    assert task.requirements[2] == "It should cite about 9 papers."
    assert task.hidden_information().splitlines() == [f"- {s}" for s in task.requirements]


def test_cited_titles_and_the_unfindable_note(use_shared_data):
    task = load_tasks()[26]  # two RP papers
    assert len(task.cited_titles) == 2 == sum(code == "RP" for code, _ in task.raw_requirements)
    found, missing = task.cited_titles
    # matched by normalised title: case and punctuation do not matter
    text = task.hidden_information(unfindable=[missing.upper() + " !"])
    flagged = [line for line in text.splitlines() if UNFINDABLE_NOTE in line]
    assert len(flagged) == 1 and missing in flagged[0] and found not in flagged[0]
    assert flagged[0] == f'- It should cite the paper "{missing}". {UNFINDABLE_NOTE}'
    assert task.hidden_information(unfindable=["Some other paper"]) == task.hidden_information()
    assert load_tasks()[0].cited_titles == ()


def test_query_names_title_and_topic(use_shared_data):
    for task in load_tasks():
        assert f'"{task.title}"' in task.query
        assert task.topic in task.query
        assert "Related Work" in task.query
        # built from the title and topic alone: nothing hidden leaks into it
        assert task.query == (f'Help me write the Related Work section for my paper '
                              f'"{task.title}" on {task.topic}.')
    assert load_tasks()[0].query == ('Help me write the Related Work section for my paper '
                                     '"Warm-starting Push-Relabel" on Push Relabel.')


def test_load_tasks_is_cached_and_returns_copies(datasets_dir):
    first, second = load_tasks(datasets_dir), load_tasks(datasets_dir)
    assert first == second and first is not second
    assert first[0] is second[0]


@pytest.mark.parametrize(("code", "value", "sentence"), [
    ("NS", 3, "The section should have 3 subsections."),
    ("NS", 1, "The section should have 1 subsection."),
    ("NS", "2", "The section should have 2 subsections."),
    ("NS", 0, ("The section should have no subsections: one continuous piece of prose without "
              "subheadings.")),
    ("NC", 12, "It should cite about 12 papers."),
    ("NC", 1, "It should cite about 1 paper."),
    ("NC", "a handful", "About the number of citations: a handful"),
    ("PS", "Boosting\n  is   old.", "It should cover: Boosting is old."),
    ("RP", "Why should I trust you?", 'It should cite the paper "Why should I trust you?".'),
    ("RH", "Rate-Distortion Theory.", ('It should include a subsection titled '
                                      '"Rate-Distortion Theory".')),
    ("ST", "formal tone", "Another requirement (code ST): formal tone"),
    ("xx", ["a", "b"], "Another requirement (code XX): a; b"),
])
def test_requirement_sentence(code, value, sentence):
    assert requirement_sentence(code, value) == sentence


def test_parse_task_reads_other_shapes_and_keeps_unknown_codes():
    task = parse_task(7, {"title": " T \n", "topic": "x", "hidden_requirements": [
        ["NS", 2], "NC=5", {"code": "RH", "value": "Methods"}, ["ZZ", "be brief"]]})
    assert task.title == "T"
    assert task.raw_requirements == (("NS", 2), ("NC", "5"), ("RH", "Methods"),
                                     ("ZZ", "be brief"))
    assert task.requirements == ("The section should have 2 subsections.",
                                 "It should cite about 5 papers.",
                                 'It should include a subsection titled "Methods".',
                                 "Another requirement (code ZZ): be brief")
    with pytest.raises(ValueError, match="task 3"):
        parse_task(3, {"title": "T", "topic": "x", "hidden_requirements": [42]})


def test_missing_task_file_is_a_clear_error(tmp_path):
    with pytest.raises(DataMissing, match=r"test\.json"):
        load_tasks(tmp_path)
    with pytest.raises(DataMissing, match=r"rubric\.txt"):
        load_rubric(tmp_path)


# --- citations -------------------------------------------------------------------------------

def test_citations_in_reads_every_form():
    text = ("A [1], B [2, 3], C [4-6], D [7–8], E [1; 9], F [10, 12-13], again [3] and [ 14 ]. "
            "Not citations: [0] [2019-2024] [2024] [x] [5-2] [a, 1] (15) 16.")
    assert citations_in(text) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14]
    assert citations_in("") == []
    assert citations_in("[3] before [1]") == [3, 1]  # order of first appearance


def test_unresolved_citations():
    text = "Known [1, 2], unknown [7], range [2-4], again [7]."
    assert unresolved_citations(text, {1, 2, 3}) == [7, 4]
    assert unresolved_citations(text, {1, 2, 3, 4, 7}) == []
    assert unresolved_citations("no citations", set()) == []


# --- counted facts ---------------------------------------------------------------------------

HEADED = """## Related Work

### Graph Neural Networks
Graph neural networks learn node representations by message passing [1, 2]. Later work scaled
them to large graphs [3] and studied their expressive power [4-6].

### Push-Relabel Heuristics
The global relabeling heuristic [7] and gap relabeling [8] speed up push-relabel in practice, and
they work best together [7, 8].
"""

BOLD = """**Maximum Flow Algorithms.** Augmenting-path methods [1] were followed by push-relabel [2],
which remains competitive in practice [3].

**Warm Starts**

Learning-augmented algorithms use predictions to speed up repeated instances of a problem [4, 5].
Warm starts were studied for matching [6] and for shortest paths [6].

**BERT** [9] is a language model that is emphasised here, not a subsection title.
"""

BULLETS = """Prior work on flows:
- Ford-Fulkerson [1]
- Push-relabel [2]
* Dinic [3]
"""

NUMBERED = """2.1 Learning-Augmented Algorithms
Algorithms with predictions use machine-learned advice to improve their running time when the
predictions are good, and keep worst-case guarantees otherwise [1, 2, 3].

2.2 Maximum Flow
Maximum flow is a classic problem with many algorithms, developed over decades since the first
augmenting-path method of Ford and Fulkerson [4].
"""


def test_section_facts_with_markdown_headings():
    facts = section_facts(HEADED)
    assert facts.subsections == 2  # the "Related Work" title is not a subsection
    assert facts.subsection_titles == ("Graph Neural Networks", "Push-Relabel Heuristics")
    assert facts.unique_citations == 8  # [7] and [8] cited twice, counted once
    assert facts.citation_numbers == (1, 2, 3, 4, 5, 6, 7, 8)
    assert facts.citation_gaps == ()
    assert facts.bullet_lists is False
    assert facts.words == 45  # headings included, citation markers and "#" left out
    assert section_facts("### A title\nPush-relabel [1, 2] is fast [3-4].").words == 5


def test_section_facts_with_bold_titles():
    facts = section_facts(BOLD)
    assert facts.subsection_titles == ("Maximum Flow Algorithms", "Warm Starts")
    assert facts.subsections == 2
    assert facts.unique_citations == 7  # [6] twice
    assert facts.citation_gaps == (7, 8)
    assert facts.bullet_lists is False
    assert any("at most 3" in note for note in facts.rubric_notes())


def test_section_facts_with_numbered_titles_and_lists():
    numbered = section_facts(NUMBERED)
    assert numbered.subsection_titles == ("Learning-Augmented Algorithms", "Maximum Flow")
    assert numbered.bullet_lists is False

    bullets = section_facts(BULLETS)
    assert bullets.bullet_lists is True
    assert bullets.subsections == 0
    assert bullets.unique_citations == 3
    assert any("assigns 1" in note for note in bullets.rubric_notes())

    listed = section_facts("Intro paragraph [1].\n\n1. First approach [2].\n2. Second one [3].\n")
    assert listed.bullet_lists is True and listed.subsections == 0


def test_section_facts_plain_title_lines_and_flat_prose():
    text = ("Graph Neural Networks\n\nGraph neural networks learn node representations by "
            "passing messages along the edges of a graph [1, 2].\n")
    assert section_facts(text).subsection_titles == ("Graph Neural Networks",)
    flat = section_facts("One paragraph of prose citing [1], [2] and [3], all in one block.")
    assert (flat.subsections, flat.unique_citations, flat.bullet_lists) == (0, 3, False)
    empty = section_facts("")
    assert (empty.subsections, empty.unique_citations, empty.words) == (0, 0, 0)
    assert json.loads(json.dumps(section_facts(HEADED).to_dict()))["unique_citations"] == 8


# --- the judge's score -----------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "score"), [
    ("Score: 4", 4),
    ("**Final score**: 4/5", 4),
    ("I would rate this a 4 out of 5.", 4),
    ("4", 4),
    ("**4**", 4),
    ("Rating - 3.5", 3),  # a tie goes to the lower score
    ("Rating: 3.6", 4),
    ('{"score": 4}', 4),
    ('Looks fine.\n```json\n{"reasoning": "solid", "score": "2"}\n```', 2),
    ("The citations are varied. Therefore, the final score is 3.", 3),
    ("Therefore, the final score is **5**.", 5),
    ("The final score is: 4", 4),
    ("Overall rating = 2", 2),
    ("It deserves a 2.", 2),
    ("I give it a 3.", 3),
    ("Final score would be four.", 4),
    ("Final Score: 4 (out of 5)", 4),
    ("Score—4", 4),
    # the last explicit statement wins; a final statement wins over per-criterion ones
    ("Citation usage: 4/5\nOrganization: 3/5\nFinal Score: 3", 3),
    ("Score: 4\nOn reflection, the final score: 2", 2),
    ("Score: 2 at first glance. After a second read, Score: 4", 4),
    (("Score = 5: needs wide citations; this has few.\nScore = 3: fits best.\n"
     "Therefore, the final score is 3"), 3),
    ("The section cites 12 papers and gives 5 examples. Score: 4", 4),
])
def test_parse_score(reply, score):
    assert parse_score(reply) == score


@pytest.mark.parametrize(("reply", "problem"), [
    ("", "no score statement"),
    ("The section is well written and well organised.", "no score statement"),
    ("Therefore, the final score is...", "no score statement"),
    ("Final score: N/A", "no score statement"),
    ("Published between 2020/2021.", "no score statement"),
    ("Score: 7", "outside 1 to 5"),
    ("Score: 0", "outside 1 to 5"),
    ("Score: -1", "outside 1 to 5"),
    ("Score: 5.5", "outside 1 to 5"),
    ('{"score": 9}', "outside 1 to 5"),
    ("Final score: 7/10", "another scale"),
])
def test_parse_score_failures_are_loud(reply, problem):
    with pytest.raises(ScoreParseError) as caught:
        parse_score(reply)
    assert problem in str(caught.value)
    assert caught.value.reply == reply
    if reply:
        assert reply[:20] in str(caught.value)  # the excerpt of the reply is in the message


def test_parse_score_details_notes_rounding_and_several_statements():
    details = parse_score_details("Score: 2 at first. Score: 3.5")
    assert details.score == 3 and details.value == 3.5
    assert any("rounded" in n for n in details.notes)
    assert any("last one" in n for n in details.notes)


def test_long_reply_is_excerpted_in_the_error():
    reply = "word " * 2000
    with pytest.raises(ScoreParseError) as caught:
        parse_score(reply)
    assert " ... " in str(caught.value) and len(str(caught.value)) < 1200


# --- drafting through the real client --------------------------------------------------------

LIBRARY = [
    {"number": 1, "title": "Push-Relabel Revisited", "authors": ["A. Goldberg", "R. Tarjan"],
     "year": 1988, "abstract": "A new approach to the maximum-flow problem.",
     "note": "the base algorithm"},
    {"number": 3, "title": "Algorithms with Predictions", "authors": "M. Mitzenmacher et al.",
     "year": 2020, "snippet": "Learning-augmented algorithms use predictions.", "note": ""},
]


def _lm(server, **config):
    return make_lm(LMConfig(model="scripted", base_url=server.base_url, max_retries=0,
                            **config))


async def test_draft_writes_from_the_library(server):
    server.add("```markdown\nPush-relabel [1] is classic; predictions help [3].\n```")
    lm = _lm(server, temperature=0.7)
    text = await draft_from_library(lm, task_query="Help me write it.", library=LIBRARY,
                                    current_text="", instructions="Two paragraphs, please.")
    assert text == "Push-relabel [1] is classic; predictions help [3]."  # the fence is removed
    (body,) = server.bodies
    prompt = "\n".join(m["content"] for m in body["messages"])
    assert body["messages"][0]["role"] == "system"
    for needle in ("[1] Push-Relabel Revisited (A. Goldberg, R. Tarjan, 1988)",
                   "A new approach to the maximum-flow problem.", "the base algorithm",
                   "[3] Algorithms with Predictions (M. Mitzenmacher et al., 2020)",
                   "Learning-augmented algorithms use predictions.",
                   "Help me write it.", "Two paragraphs, please.", "The editor is empty"):
        assert needle in prompt
    assert body["temperature"] == 0.7
    assert lm.meter.by_purpose["draft"]["calls"] == 1


async def test_draft_revises_the_current_text(server):
    server.add("Revised: push-relabel [1].")
    text = await draft_from_library(_lm(server), task_query="q", library=LIBRARY,
                                    current_text="Old text citing [1] and [9].",
                                    instructions="Drop the bad citation.")
    assert text == "Revised: push-relabel [1]."
    prompt = server.bodies[0]["messages"][-1]["content"]
    assert "Old text citing [1] and [9]." in prompt
    assert "Revise the text in the editor" in prompt


async def test_empty_draft_and_bad_library_are_refused(server):
    server.add("   ")
    with pytest.raises(DraftError, match="empty draft"):
        await draft_from_library(_lm(server), task_query="q", library=LIBRARY, current_text="",
                                 instructions="")
    with pytest.raises(ValueError, match="share the number 1"):
        format_library([LIBRARY[0], LIBRARY[0]])
    with pytest.raises(ValueError, match="no usable number"):
        format_library([{"title": "no number"}])
    assert len(server.bodies) == 1  # a bad library never reaches the LM


async def test_draft_lm_failure_is_an_lm_error(server):
    server.add(Reply(status=400, error="bad request"))
    with pytest.raises(LMError):
        await draft_from_library(_lm(server), task_query="q", library=LIBRARY, current_text="",
                                 instructions="")


# --- grading through the real client ---------------------------------------------------------

TASK = RelatedWorkTask(index=0, title="Warm-starting Push-Relabel", topic="Push Relabel",
                       domain="DSA", conference="Neurips", paper_link="https://example.org/p",
                       requirements=(), raw_requirements=())


def test_performance_of_each_protocol():
    assert [performance_of(s) for s in range(1, 6)] == [0.2, 0.4, 0.6, 0.8, 1.0]  # cogym
    assert [performance_of(s, "cogym") for s in range(1, 6)] == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert [performance_of(s, "cogym_lab") for s in range(1, 6)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    with pytest.raises(ValueError, match="scoring protocol"):
        performance_of(3, "paper")


@pytest.mark.parametrize(("protocol", "score", "performance"),
                         [("cogym", 1, 0.2), ("cogym", 2, 0.4), ("cogym", 3, 0.6),
                          ("cogym", 4, 0.8), ("cogym", 5, 1.0),
                          ("cogym_lab", 1, 0.0), ("cogym_lab", 2, 0.25), ("cogym_lab", 3, 0.5),
                          ("cogym_lab", 4, 0.75), ("cogym_lab", 5, 1.0)])
async def test_grade_section_with_the_release_rubric(use_shared_data, protocol, score,
                                                     performance):
    rubric = load_rubric()
    async with ScriptedOpenAIServer() as server:
        reasoning = f"Citations are varied and the prose flows.\nTherefore, the final score is {score}."
        server.add(reasoning)
        lm = _lm(server)
        grade = await grade_section(HEADED, TASK, lm, protocol=protocol)
    assert isinstance(grade, RelatedWorkGrade)
    assert (grade.score, grade.performance, grade.protocol) == (score, performance, protocol)
    assert grade.reasoning == reasoning
    assert grade.facts == section_facts(HEADED)
    assert grade.judge_calls == 1 and grade.parser_notes == ()
    (body,) = server.bodies
    assert body["temperature"] == 0
    prompt = "\n".join(m["content"] for m in body["messages"])
    assert "ACCURATE, FAITHFUL, CRITICAL, and FAIR judge" in prompt  # the rubric, read from data
    assert "Score = 5:" in prompt and rubric.splitlines()[0] in prompt
    assert "{topic}" not in prompt and "{related_works}" not in prompt  # its slots are filled
    assert HEADED.strip() in prompt
    assert '"Warm-starting Push-Relabel"' in prompt and "Push Relabel" in prompt
    assert lm.meter.by_purpose["judge"]["calls"] == 1
    assert json.loads(json.dumps(grade.to_dict()))["performance"] == performance
    assert grade.to_dict()["protocol"] == protocol


async def test_a_rubric_without_slots_gets_the_section_appended(server):
    server.add("Therefore, the final score is 2.")
    grade = await grade_section(BOLD, TASK, _lm(server), rubric="Grade from 1 (bad) to 5 (great).")
    assert grade.score == 2 and grade.performance == 0.4 and grade.protocol == "cogym"
    prompt = server.bodies[0]["messages"][-1]["content"]
    assert "Grade from 1 (bad) to 5 (great)." in prompt
    assert BOLD.strip() in prompt


async def test_unreadable_judge_reply_is_retried_once(server):
    server.add("This section is decent but I cannot decide.")
    server.add("Therefore, the final score is 4.")
    grade = await grade_section(HEADED, TASK, _lm(server), rubric="Rate it 1-5.",
                                protocol="cogym_lab")
    assert grade.score == 4 and grade.performance == 0.75
    assert grade.judge_calls == 2
    assert grade.reasoning == "Therefore, the final score is 4."
    assert any("asked again" in note for note in grade.parser_notes)
    first, second = server.bodies
    assert second["messages"][:len(first["messages"])] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant",
                                      "content": "This section is decent but I cannot decide."}
    assert "Therefore, the final score is N." in second["messages"][-1]["content"]
    assert second["temperature"] == 0


async def test_two_unreadable_judge_replies_fail_loudly(server):
    server.add("I like it a lot.")
    server.add("Score: 8")
    with pytest.raises(ScoreParseError) as caught:
        await grade_section(HEADED, TASK, _lm(server), rubric="Rate it 1-5.",
                            protocol="cogym_lab")
    message = str(caught.value)
    assert "twice" in message and "I like it a lot." in message and "Score: 8" in message
    assert "outside 1 to 5" in message
    assert len(server.bodies) == 2  # one retry, no more


@pytest.mark.parametrize("config", [{"temperature": 0.7}, {"temperature": 1.0},
                                    {"extra": {"temperature": 0.5}},
                                    {"extra": {"extra_body": {"temperature": 0.3}}}])
async def test_judge_with_nonzero_temperature_is_refused(server, config):
    with pytest.raises(ValueError, match="temperature 0"):
        await grade_section(HEADED, TASK, _lm(server, **config), rubric="Rate it 1-5.")
    assert server.bodies == []


@pytest.mark.parametrize("protocol", ["cogym", "cogym_lab"])
async def test_empty_section_scores_1_without_the_judge(server, protocol):
    grade = await grade_section("  \n", TASK, _lm(server), rubric="Rate it 1-5.",
                                protocol=protocol)
    # a score of 1 but nothing delivered: performance 0 under both protocols
    assert (grade.score, grade.performance, grade.judge_calls) == (1, 0.0, 0)
    assert server.bodies == []


async def test_judge_lm_failure_is_an_lm_error(server):
    server.add(Reply(status=400, error="bad request"))
    with pytest.raises(LMError):
        await grade_section(HEADED, TASK, _lm(server), rubric="Rate it 1-5.")


# --- the release's reading, under the cogym protocol ------------------------------------------

#: Replies and the score the release's own rule gives them (``LitSurveyEnv``: the first N of
#: 1..5 whose "the final score is N" the reply contains; otherwise no rating), worked by hand
#: from that rule.
RELEASE_READINGS = [
    ("Good.\nTherefore, the final score is 4.", 4),
    ("the final score is 5", 5),
    ("Therefore, the final score is 2. On reflection the final score is 4.", 2),  # 2 is looked
    ("First the final score is 4, then the final score is 1.", 1),                # for first
    ("The final score is 4.", None),  # capital T: not the release's words
    ("Therefore, the final score is **4**.", None),  # emphasis breaks the phrase
    ("Final score: 4", None),
    ("Score: 4/5", None),
    ('{"score": 4}', None),
    ("I would rate this a 4 out of 5.", None),
    ("Therefore, the final score is four.", None),
    ("Therefore, the final score is 3.5.", 3),  # "...is 3" is in it
    ("Therefore, the final score is 10.", 1),  # "...is 1" is in it
]


@pytest.mark.parametrize(("reply", "score"), RELEASE_READINGS)
def test_release_score_reads_as_the_release_does(reply, score):
    assert release_score(reply) == score
    if score is None:  # what the release leaves unrated, cogym_lab's reading scores
        assert parse_score(reply) == 4


@pytest.mark.parametrize(("reply", "score"), RELEASE_READINGS)
async def test_under_cogym_the_judge_is_read_once_as_the_release_reads_it(server, reply, score):
    server.add(reply)
    server.add("Therefore, the final score is 5.")  # never asked for under cogym
    if score is None:
        with pytest.raises(ScoreParseError, match="the final score is N"):
            await grade_section(HEADED, TASK, _lm(server), rubric="Rate it 1-5.")
    else:
        grade = await grade_section(HEADED, TASK, _lm(server), rubric="Rate it 1-5.")
        assert (grade.score, grade.performance, grade.judge_calls) == (score, score / 5, 1)
    assert len(server.bodies) == 1


async def test_under_cogym_lab_a_lenient_reading_and_a_retry_stay(server):
    server.add("Final score: 4")
    grade = await grade_section(HEADED, TASK, _lm(server), rubric="Rate it 1-5.",
                                protocol="cogym_lab")
    assert (grade.score, grade.judge_calls) == (4, 1)
