"""Grading a Related Work section: Co-Gym's rubric-based LM judge, plus facts counted in code.

:func:`grade_section` asks a judge LM (purpose ``"judge"``) to score the section from 1 to 5
with the rubric of the Collaborative Gym release (``<data dir>/related_work/rubric.txt``, read at
run time; the rubric is data, not code). Task performance, in [0, 1], depends on the scoring
protocol (:func:`performance_of`): ``score / 5`` under ``cogym`` (the release), ``(score - 1) / 4``
under ``cogym_lab``.

The judge must run at temperature 0, as in Co-Gym: make its LM with
``make_lm(LMConfig(..., temperature=0))``. :func:`grade_section` checks ``lm.config`` and raises
ValueError otherwise.

The rubric text holds two placeholders, ``{topic}`` and ``{related_works}``; they are filled with
the task's topic and the section. A rubric without ``{related_works}`` gets the section after it.
The prompt around the rubric is the template ``prompts/judge.md`` (with ``judge_system.md``,
``judge_section.md`` and ``judge_retry.md``).

How the judge's reply is read depends on the protocol. Under ``cogym`` it is read as the
release reads it (:func:`release_score`): the score is the first of 1 to 5 for which the reply
contains the exact words "the final score is N"; a reply without them has no score, and the
judge is not asked again (the release asks once). Under ``cogym_lab``, :func:`parse_score` reads
many more wordings (see its docstring, and its rounding rule), and a reply with no readable
score gets one more try with a reminder of the format; a second unreadable reply raises
:class:`ScoreParseError`.

:func:`section_facts` counts, without an LM, what the rubric looks at: unique citations,
subsections, bullet lists and words.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cogym_lab.core.env import ScoreReport
from cogym_lab.core.protocol import DEFAULT_PROTOCOL, get_protocol
from cogym_lab.datasets import DataMissing
from cogym_lab.envs.related_work.data_files import data_file, task_dir
from cogym_lab.envs.related_work.drafting import citations_in
from cogym_lab.errors import CogymError
from cogym_lab.lm import LM
from cogym_lab.prompts import render

__all__ = ["RUBRIC_FILE", "ParsedScore", "RelatedWorkGrade", "ScoreParseError", "SectionFacts",
           "check_judge_temperature", "explain_section", "fill_rubric", "grade_section",
           "judge_messages", "judge_reason", "load_rubric", "parse_release_score", "parse_score",
           "parse_score_details", "performance_of", "release_score", "section_facts"]

PACKAGE = "cogym_lab.envs.related_work"
RUBRIC_FILE = "rubric.txt"
MIN_SCORE, MAX_SCORE = 1, 5


# --- the rubric ------------------------------------------------------------------------------

def load_rubric(data_dir: str | Path | None = None) -> str:
    """The text of ``rubric.txt`` in :func:`~.data_files.task_dir` (the data directory's
    ``related_work/``, or the bundled sample); DataMissing when it is not there."""
    try:
        folder = task_dir(data_dir, (data_file(RUBRIC_FILE),))
    except DataMissing as error:
        raise DataMissing(f"{error} Or pass the rubric text to grade_section.") from None
    return (folder / RUBRIC_FILE).read_text(encoding="utf-8")


_SECTION_SLOTS = ("{related_works}", "{related_work}", "{section}")


def fill_rubric(rubric: str, *, topic: str, section: str) -> tuple[str, bool]:
    """The rubric with ``{topic}`` and ``{related_works}`` filled in (plain replacement: other
    braces are left alone), and whether it had a place for the section."""
    text = rubric.strip().replace("{topic}", topic)
    has_slot = any(slot in text for slot in _SECTION_SLOTS)
    for slot in _SECTION_SLOTS:
        text = text.replace(slot, section)
    return text, has_slot


# --- facts counted in code -------------------------------------------------------------------

@dataclass(frozen=True)
class SectionFacts:
    """What can be counted in a section without an LM.

    ``unique_citations`` counts distinct cited numbers (``citation_numbers``, sorted);
    ``citation_gaps`` are the numbers between the lowest and the highest cited that are never
    cited (the rubric caps such a section at 3). ``subsections`` counts subsection titles:
    markdown headings (not a leading "Related Work" title), lines that are a bold title
    (``**Title**``, ``**Title.** text``) and numbered titles (``2.1 Title``); ``bullet_lists`` is
    True when any line is a bullet or numbered list item. ``words`` counts words with citation
    markers and markdown symbols left out."""

    unique_citations: int
    citation_numbers: tuple[int, ...]
    subsections: int
    bullet_lists: bool
    words: int
    citation_gaps: tuple[int, ...] = ()
    subsection_titles: tuple[str, ...] = ()

    def rubric_notes(self) -> list[str]:
        """The rubric's hard rules these facts trigger (for reading a grade, not scoring)."""
        notes = []
        if self.unique_citations <= 4:
            notes.append(f"only {self.unique_citations} unique citations: the rubric assigns 1")
        if self.bullet_lists:
            notes.append("bullet or numbered lists: the rubric assigns 1")
        if self.citation_gaps:
            notes.append(f"numbers {list(self.citation_gaps)} between the lowest and highest "
                         "citation are never cited: the rubric allows at most 3")
        return notes

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["citation_numbers"] = list(self.citation_numbers)
        data["citation_gaps"] = list(self.citation_gaps)
        data["subsection_titles"] = list(self.subsection_titles)
        data["rubric_notes"] = self.rubric_notes()
        return data


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
_BOLD_LINE = re.compile(r"^\s*(\*\*|__)(?P<title>[^*_\n]{1,150}?)\1\s*(?P<rest>.*)$")
_DOTTED_TITLE = re.compile(r"^\s*\d+(?:\.\d+)+\.?\s+(?P<title>\S.*)$")
_NUMBERED_ITEM = re.compile(r"^\s*(?:\d+[.)]|\(\d+\)|\(?[a-z]\)|\([ivx]+\))\s+(?P<title>\S.*)$")
_BULLET_ITEM = re.compile(r"^\s*[-*+•●▪◦‣]\s+\S")
_SECTION_TITLE = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+)?(?:related\s+works?|background|"
                            r"literature\s+review|prior\s+work|previous\s+work)\b.{0,40}$",
                            re.IGNORECASE)
_PARAGRAPH_WORDS = 15  # a line this long after a short line makes the short line a title


def _plain(text: str) -> str:
    return " ".join(re.sub(r"[*_`#]", "", text).split()).strip()


def _short_title(text: str, limit: int = 12) -> bool:
    """A title: 1 to ``limit`` words, not ending like a sentence (a colon is fine), no
    citation in it."""
    core = text.strip()
    core = core[:-1].rstrip() if core.endswith(":") else core
    words = core.split()
    return 0 < len(words) <= limit and not re.search(r"[.;,!?]$", core) \
        and not citations_in(core)


def _next_line(lines: list[str], index: int) -> str | None:
    for line in lines[index + 1:]:
        if line.strip():
            return line
    return None


def _is_paragraph(line: str | None) -> bool:
    return line is not None and len(line.split()) >= _PARAGRAPH_WORDS \
        and not _NUMBERED_ITEM.match(line) and not _BULLET_ITEM.match(line) \
        and not _HEADING.match(line)


def _title_of(lines: list[str], number: int) -> str | None:
    """The subsection title on line ``number`` (not a markdown heading), or None."""
    line = lines[number]
    bold = _BOLD_LINE.match(line)
    if bold:
        title, rest = bold.group("title").strip(), bold.group("rest").strip()
        bare = title.rstrip(".:").strip()
        if not rest and _short_title(bare):
            return bare
        run_in = rest and (title.endswith((".", ":")) or rest[0] in ".:—–")
        if run_in and 0 < len(bare.split()) <= 12:
            return bare
        return None
    dotted = _DOTTED_TITLE.match(line)
    if dotted and _short_title(dotted.group("title")):
        return _plain(dotted.group("title")).rstrip(":")
    numbered = _NUMBERED_ITEM.match(line)
    if numbered:
        title = numbered.group("title").strip()
        if _short_title(title, 10) and _is_paragraph(_next_line(lines, number)):
            return _plain(title).rstrip(":")
        return None
    # A plain short line on its own, starting a paragraph: "Graph Neural Networks".
    before_blank = number == 0 or not lines[number - 1].strip()
    text = line.strip()
    if before_blank and _short_title(text, 10) and (text[0].isupper() or text[0].isdigit()) \
            and not _BULLET_ITEM.match(line) and _is_paragraph(_next_line(lines, number)):
        return _plain(text).rstrip(":")
    return None


def section_facts(text: str) -> SectionFacts:
    """Count citations, subsections, list items and words of ``text`` (see
    :class:`SectionFacts`)."""
    text = text or ""
    numbers = sorted(citations_in(text))
    cited = set(numbers)
    gaps = tuple(n for n in range(numbers[0], numbers[-1] + 1) if n not in cited) \
        if numbers else ()

    lines = text.splitlines()
    headings: list[tuple[int, int, str]] = []  # (line number, level, title)
    others: list[tuple[int, str]] = []  # bold, numbered and plain titles
    bullets = False
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        heading = _HEADING.match(line)
        if heading:
            headings.append((number, len(heading.group(1)), _plain(heading.group(2))))
            continue
        title = _title_of(lines, number)
        if title is not None:
            others.append((number, title))
        elif _BULLET_ITEM.match(line) or _NUMBERED_ITEM.match(line):
            bullets = True

    # A title that opens the text and names the section itself is not a subsection; nor is a
    # lone top heading above deeper ones.
    first_line = next((i for i, line in enumerate(lines) if line.strip()), None)
    if headings and headings[0][0] == first_line:
        opener = headings[0]
        deeper = [h for h in headings[1:] if h[1] > opener[1]]
        if _SECTION_TITLE.match(opener[2]) or (deeper and len(deeper) == len(headings) - 1
                                               and not others):
            headings = headings[1:]
    if others and others[0][0] == first_line and _SECTION_TITLE.match(others[0][1]):
        others = others[1:]
    titles = [t for _, t in sorted([(n, t) for n, _, t in headings] + others)]

    stripped = re.sub(r"\[[^\]]*\]", " ", text)
    words = len(re.findall(r"[A-Za-z0-9À-ÿ][\w'’\-]*", stripped))
    return SectionFacts(unique_citations=len(numbers), citation_numbers=tuple(numbers),
                        subsections=len(titles), bullet_lists=bullets, words=words,
                        citation_gaps=gaps, subsection_titles=tuple(titles))


# --- reading the judge's score ---------------------------------------------------------------

class ScoreParseError(CogymError, ValueError):
    """The judge's reply states no final score from 1 to 5. ``reply`` is the whole reply."""

    def __init__(self, problem: str, reply: str, label: str = "The judge's reply") -> None:
        self.problem = problem
        self.reply = reply
        super().__init__(f"{problem}. {label}: {_excerpt(reply)}")


def _excerpt(reply: str, limit: int = 400) -> str:
    text = " ".join((reply or "").split())
    if not text:
        return "(empty)"
    if len(text) <= 2 * limit:
        return repr(text)
    return repr(text[:limit]) + " ... " + repr(text[-limit:])


@dataclass(frozen=True)
class ParsedScore:
    """A score read from a reply: the integer, the value as written, the statement it came
    from, and notes (rounding, say)."""

    score: int
    value: float
    statement: str
    notes: tuple[str, ...] = ()


_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
          "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_NUM = r"(?P<num>-?\d+(?:\.\d+)?|zero|one|two|three|four|five|six|seven|eight|nine|ten)\b"
_OPEN = r"[\[(\"'“]?\s*"
_SCALE = r"(?:\s*(?:/|out\s+of|of)\s*(?P<scale>\d+(?:\.\d+)?))?"
_NOUN = r"(?:score|rating|grade)"
_SEP = (r"\s*(?:(?:would|will|should|must|could|can)\s+)?"  # "... would be 4"
        r"(?:(?:is|be|of|at|=|:|-(?!\d)|[–—→])\s*){0,2}"  # "-" directly before a digit: minus
        r"(?:(?:a|an)\s+)?(?:(?:score|rating|grade)\s+of\s+)?")
_OBJECT = r"(?:(?:it|this|this\s+section|this\s+draft|the\s+section|the\s+draft)\s+)?"

# Most explicit first: statements of a *final* or overall score (JSON score fields join them).
_FINAL = [
    re.compile(rf"\b(?:final|overall|total)\s+(?:{_NOUN}|evaluation|verdict)s?\b"
               rf"(?:\s*\(\s*1\s*-\s*5\s*\))?{_SEP}{_OPEN}{_NUM}{_SCALE}", re.IGNORECASE),
    re.compile(rf"\btherefore\b[^\n\d]{{0,40}}?\b{_NOUN}\b{_SEP}{_OPEN}{_NUM}{_SCALE}",
               re.IGNORECASE),
]
# Then any other statement of a score. A bare "4/5" counts only on a scale of 5.
_GENERAL = [
    re.compile(rf"\b{_NOUN}s?\b{_SEP}{_OPEN}{_NUM}{_SCALE}", re.IGNORECASE),
    re.compile(rf"\b(?:rate|rated|score|scored|grade|graded)\s+{_OBJECT}(?:(?:a|an|as|at)\s+)?"
               rf"{_OPEN}{_NUM}{_SCALE}", re.IGNORECASE),
    re.compile(rf"\b(?:give|gives|assign|assigns|award|awards|deserves?|merits?|earns?)\s+"
               rf"{_OBJECT}(?:a|an|(?:a\s+)?(?:score|rating|grade)\s+of)\s+{_OPEN}{_NUM}{_SCALE}",
               re.IGNORECASE),
]
_FRACTION = re.compile(r"(?<![\w./])(?P<num>\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*5(?:\.0)?(?![\w.])",
                       re.IGNORECASE)
_JSON_KEYS = ("final_score", "final score", "overall_score", "overall score", "score", "rating",
              "grade")
_BARE = re.compile(rf"^\s*{_OPEN}{_NUM}\s*[\])\"'”]?\s*(?:/\s*5|out\s+of\s+5)?\s*[.!]?\s*$",
                   re.IGNORECASE)

Candidate = tuple[int, float, str, "float | None"]  # (position, value, statement, scale)


def _value(token: str) -> float:
    token = token.lower()
    return float(_WORDS[token]) if token in _WORDS else float(token)


def _json_scores(text: str) -> list[Candidate]:
    """Score fields of the JSON objects in ``text``: ``{"score": 4}``, ``{"rating": "4/5"}``."""
    found: list[Candidate] = []
    for match in re.finditer(r"\{[^{}]*\}", text):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        lowered = {str(k).strip().lower(): v for k, v in data.items()}
        for key in _JSON_KEYS:
            value = lowered.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found.append((match.start(), float(value), match.group(0), None))
                break
            if isinstance(value, str):
                number = re.fullmatch(rf"\s*{_NUM}\s*(?:/\s*(?P<scale>\d+))?\s*", value,
                                      re.IGNORECASE)
                if number:
                    scale = float(number.group("scale")) if number.group("scale") else None
                    found.append((match.start(), _value(number.group("num")), match.group(0),
                                  scale))
                    break
    return found


def _matches(patterns: list[re.Pattern[str]], text: str) -> list[Candidate]:
    found: list[Candidate] = []
    for pattern in patterns:
        for match in pattern.finditer(text):
            if text[match.end():match.end() + 1] == ":" and "=" in match.group(0):
                continue  # "Score = 3:" quotes a heading of the rubric; it is no verdict
            scale = match.groupdict().get("scale")
            found.append((match.start("num"), _value(match.group("num")),
                          match.group(0).strip(), float(scale) if scale else None))
    return found


def _fractions(text: str) -> list[Candidate]:
    return [(m.start("num"), float(m.group("num")), m.group(0).strip(), 5.0)
            for m in _FRACTION.finditer(text)]


def _round(value: float) -> int:
    """Nearest integer, a tie going to the lower score (3.5 -> 3): the judge did not award the
    higher score outright."""
    return math.ceil(value - 0.5)


def parse_score_details(reply: str) -> ParsedScore:
    """Like :func:`parse_score`, with the statement the score came from and notes."""
    text = re.sub(r"[*`#]", "", reply or "")  # markdown emphasis: "**Final score**: 4"
    tiers = (lambda t: _matches(_FINAL, t) + _json_scores(t),
             lambda t: _matches(_GENERAL, t) + _fractions(t))
    candidates: list[Candidate] = []
    for tier in tiers:
        candidates = tier(text)
        if candidates:
            break
    if not candidates:
        bare = _BARE.match(text)
        if bare:
            candidates = [(bare.start("num"), _value(bare.group("num")), text.strip(), None)]
    if not candidates:
        raise ScoreParseError("no score statement found in the judge's reply", reply or "")
    by_position = {c[0]: c for c in candidates}  # one statement may match several patterns
    _, value, statement, scale = by_position[max(by_position)]
    if scale is not None and scale != MAX_SCORE:
        raise ScoreParseError(f"the judge scored on another scale ({statement!r}); the rubric's "
                              f"scale is {MIN_SCORE} to {MAX_SCORE}", reply or "")
    if not MIN_SCORE <= value <= MAX_SCORE:
        raise ScoreParseError(f"the judge's score {value:g} ({statement!r}) is outside "
                              f"{MIN_SCORE} to {MAX_SCORE}", reply or "")
    score = _round(value)
    notes: list[str] = []
    if value != score:
        notes.append(f"non-integer score {value:g} rounded to {score} (a tie goes to the lower "
                     "score)")
    if len({c[1] for c in by_position.values()}) > 1:
        notes.append(f"{len(by_position)} score statements with different values; the last "
                     f"one was used: {statement!r}")
    return ParsedScore(score=score, value=value, statement=statement, notes=tuple(notes))


#: The words the release looks for in the judge's reply, for N = 1 to 5 in that order.
RELEASE_PHRASE = "the final score is {score}"


def release_score(reply: str) -> int | None:
    """The score as the Co-Gym release reads the judge's reply (``LitSurveyEnv``'s evaluation,
    ``collaborative_gym/envs/literature_survey.py``): the first N of 1, 2, 3, 4, 5 for which the
    reply contains "the final score is N" (lower case, as written; part of a longer phrase
    counts too), else ``None``: the release then records no rating."""
    text = reply or ""
    for score in range(MIN_SCORE, MAX_SCORE + 1):
        if RELEASE_PHRASE.format(score=score) in text:
            return score
    return None


def parse_release_score(reply: str) -> ParsedScore:
    """:func:`release_score` as a :class:`ParsedScore`; :class:`ScoreParseError` when the reply
    has no score the release would read."""
    score = release_score(reply)
    if score is None:
        raise ScoreParseError('no "the final score is N" (N from 1 to 5) in the judge\'s reply, '
                              "which is all the Co-Gym release reads (protocol cogym)",
                              reply or "")
    statement = RELEASE_PHRASE.format(score=score)
    notes = () if sum(RELEASE_PHRASE.format(score=n) in reply
                      for n in range(MIN_SCORE, MAX_SCORE + 1)) == 1 else (
        f'several "the final score is N"; the lowest, {score}, was used, as the release does',)
    return ParsedScore(score=score, value=float(score), statement=statement, notes=notes)


def parse_score(reply: str) -> int:
    """The final 1-5 score stated in a judge's reply.

    Understood: "Therefore, the final score is 4.", "Score: 4", "**Final score**: 4/5",
    "Overall rating = 4", "I would rate this a 4 out of 5.", "It deserves a 4", "4/5", a reply
    that is just "4", JSON such as ``{"score": 4}``, and number words ("four"). Statements of a
    final or overall score (and JSON score fields) win over other score statements; among those
    of the same kind the last one in the reply wins. A non-integer score is rounded to the
    nearest integer, a tie going to the lower score ("Rating - 3.5" -> 3; 3.6 -> 4), since the
    rubric asks for an integer and the judge did not award the higher score outright.

    Raises :class:`ScoreParseError`, quoting the reply, when no score is stated, when the chosen
    score is outside 1-5 (it is never clamped) or when it is given on another scale ("7/10")."""
    return parse_score_details(reply).score


# --- the judge -------------------------------------------------------------------------------

def performance_of(score: int, protocol: str = DEFAULT_PROTOCOL) -> float:
    """A 1-5 rubric score on [0, 1] under ``protocol``: ``score / 5`` for ``cogym`` (the
    release's normalisation, so a 1 is worth 0.2) and ``(score - 1) / 4`` for ``cogym_lab``
    (the rubric's range stretched to [0, 1], so a 1 is worth 0)."""
    if get_protocol(protocol).name == "cogym":
        return score / MAX_SCORE
    return (score - MIN_SCORE) / (MAX_SCORE - MIN_SCORE)


@dataclass(frozen=True)
class RelatedWorkGrade:
    """The judge's verdict on a section: ``score`` 1-5, ``performance`` on [0, 1] as
    ``protocol`` computes it (:func:`performance_of`), the counted ``facts``, the judge's
    ``reasoning`` (the reply the score was read from) and ``parser_notes`` (retries, rounding,
    several score statements)."""

    score: int
    performance: float
    facts: SectionFacts
    reasoning: str
    parser_notes: tuple[str, ...] = ()
    judge_calls: int = 0
    judge_model: str = ""
    protocol: str = DEFAULT_PROTOCOL

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "performance": self.performance,
                "facts": self.facts.to_dict(), "reasoning": self.reasoning,
                "parser_notes": list(self.parser_notes), "judge_calls": self.judge_calls,
                "judge_model": self.judge_model, "protocol": self.protocol}


def check_judge_temperature(lm: LM) -> None:
    """Raise ValueError unless ``lm`` samples at temperature 0: ``lm.config.temperature``, and a
    temperature in ``config.extra`` (or its ``extra_body``) if one is set there."""
    config = getattr(lm, "config", None)
    if config is None:
        raise ValueError("grade_section needs a judge LM whose config says temperature 0; this "
                         f"{type(lm).__name__} has no config")
    extra = dict(getattr(config, "extra", None) or {})
    settings: list[tuple[str, Any]] = [("temperature", getattr(config, "temperature", None))]
    if "temperature" in extra:
        settings.append(("extra['temperature']", extra["temperature"]))
    body = extra.get("extra_body")
    if isinstance(body, dict) and "temperature" in body:
        settings.append(("extra['extra_body']['temperature']", body["temperature"]))
    for where, value in settings:
        try:
            zero = value is not None and float(value) == 0
        except (TypeError, ValueError):
            zero = False
        if not zero:
            describe = config.describe() if hasattr(config, "describe") else type(lm).__name__
            raise ValueError(
                f"The Related Work judge must run at temperature 0 (as in Co-Gym), but the LM "
                f"{describe} has {where} = {value!r}. Make the judge with "
                "make_lm(LMConfig(..., temperature=0)).")


def judge_messages(text: str, task: Any, rubric: str) -> list[dict[str, str]]:
    """The judge's prompt: the rubric (placeholders filled), the paper's title and topic, and
    the section."""
    topic, title = str(getattr(task, "topic", "")), str(getattr(task, "title", ""))
    filled, has_slot = fill_rubric(rubric, topic=topic, section=text.strip())
    section_block = "" if has_slot else \
        "\n" + render(PACKAGE, "judge_section", section=text.strip()) + "\n"
    return [{"role": "system", "content": render(PACKAGE, "judge_system")},
            {"role": "user", "content": render(PACKAGE, "judge", title=title, topic=topic,
                                               rubric=filled, section_block=section_block)}]


async def grade_section(text: str, task: Any, lm: LM, rubric: str | None = None, *,
                        data_dir: str | Path | None = None,
                        protocol: str = DEFAULT_PROTOCOL) -> RelatedWorkGrade:
    """Score ``text``, the Related Work section written for ``task`` (a RelatedWorkTask, or
    anything with ``title`` and ``topic``), with the rubric-based LM judge.

    ``lm`` must be configured with temperature 0 (ValueError otherwise). ``rubric`` is the rubric
    text; by default ``rubric.txt`` of the data directory (``data_dir``, else the usual rules).
    ``protocol`` says how the reply is read and how the score becomes ``performance``
    (:func:`performance_of`). An empty section scores 1 with performance 0 (nothing was
    delivered) without calling the judge. Under ``cogym`` a reply without the release's "the
    final score is N" raises :class:`ScoreParseError` at once (the release leaves such a section
    without a rating); under ``cogym_lab`` the judge is asked once more, and a second failure
    raises it. LM failures raise :class:`cogym_lab.lm.LMError`."""
    protocol = get_protocol(protocol).name
    check_judge_temperature(lm)
    facts = section_facts(text)
    model = str(getattr(getattr(lm, "config", None), "model", "") or "")
    if not (text or "").strip():
        return RelatedWorkGrade(score=MIN_SCORE, performance=0.0, facts=facts,
                                reasoning="The section is empty.",
                                parser_notes=("empty section: scored 1 without the judge",),
                                judge_calls=0, judge_model=model, protocol=protocol)
    if rubric is None:
        rubric = load_rubric(data_dir)
    messages = judge_messages(text, task, rubric)
    first = await lm.complete(messages, purpose="judge")
    calls = 1
    notes: list[str] = []
    if protocol == "cogym":  # read as the release reads it: once, its one phrase
        parsed = parse_release_score(first.text)
        return RelatedWorkGrade(score=parsed.score,
                                performance=performance_of(parsed.score, protocol), facts=facts,
                                reasoning=first.text.strip(), parser_notes=parsed.notes,
                                judge_calls=calls, judge_model=model, protocol=protocol)
    try:
        parsed, reasoning = parse_score_details(first.text), first.text
    except ScoreParseError as error:
        notes.append(f"first judge reply unreadable ({error.problem}); asked again")
        retry = [
            *messages,
            {"role": "assistant", "content": first.text or ""},
            {"role": "user", "content": render(PACKAGE, "judge_retry", problem=error.problem)},
        ]
        second = await lm.complete(retry, purpose="judge")
        calls = 2
        try:
            parsed, reasoning = parse_score_details(second.text), second.text
        except ScoreParseError as again:
            raise ScoreParseError(
                f"the judge gave no readable score twice (first: {error.problem}; after a "
                f"reminder of the format: {again.problem}). Its first reply: "
                f"{_excerpt(first.text)}", second.text or "",
                label="Its second reply") from again
    notes.extend(parsed.notes)
    return RelatedWorkGrade(score=parsed.score,
                            performance=performance_of(parsed.score, protocol), facts=facts,
                            reasoning=reasoning.strip(), parser_notes=tuple(notes),
                            judge_calls=calls, judge_model=model, protocol=protocol)


# --- the grade in plain words ----------------------------------------------------------------

#: Characters of the judge's reasoning a report quotes; a longer one is cut there.
REASON_LIMIT = 1200
_SCORE_LINE = re.compile(r"^\W*therefore\b.*\bscore\b.*$", re.IGNORECASE | re.MULTILINE)


def judge_reason(reasoning: str) -> str | None:
    """What the judge said in support of its score: its reply without the closing "Therefore,
    the final score is N." line, on one paragraph, cut at :data:`REASON_LIMIT` characters;
    ``None`` when it gave nothing beyond the score."""
    text = _SCORE_LINE.sub("", reasoning or "")
    text = " ".join(text.split())
    if not text or text.casefold() == "the section is empty.":
        return None
    return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT].rstrip() + "…"


def _numbers(values: tuple[int, ...]) -> str:
    return ", ".join(f"[{value}]" for value in values)


def explain_section(facts: SectionFacts, scores: dict[str, float], *,
                    grade: RelatedWorkGrade | None, delivered: bool) -> list[ScoreReport]:
    """The section's scores (those of them in ``scores``) in plain words: the judge's rubric
    score with its stated reason, and the citation and subsection facts counted in code.
    ``grade`` is the judge's verdict, or ``None`` when no judge graded the section."""
    citations = [f"The section cites {facts.unique_citations} different paper"
                 f"{'s' if facts.unique_citations != 1 else ''}"
                 + (f": {_numbers(facts.citation_numbers)}." if facts.citation_numbers else ".")]
    if facts.citation_gaps:
        citations.append(f"Never cited, though between the lowest and the highest number: "
                         f"{_numbers(facts.citation_gaps)}.")
    titles = list(facts.subsection_titles)
    subsections = [f"Subsections: {'; '.join(titles)}." if titles else
                   "The section has no subsection titles."]
    if facts.bullet_lists:
        subsections.append("It uses bullet or numbered lists, which the rubric marks down.")
    explained: dict[str, tuple[str, list[str]]] = {
        "unique_citations": ("Different papers the section cites, counted in the text",
                             citations),
        "subsections": ("Subsection titles in the section, counted in the text", subsections),
    }
    if grade is None:
        explained["unique_citations"][1].append(
            "The section is empty, so the judge did not grade it." if not facts.words else
            "No judge language model was set up, so the section got no rubric score.")
    else:
        judged = [f"The judge gave {grade.score} out of {MAX_SCORE} on the Related Work rubric."]
        reason = judge_reason(grade.reasoning)
        if reason:
            judged.append(f"The judge's reason: {reason}")
        judged += [f"A rubric rule applies: {note}." for note in facts.rubric_notes()]
        cogym = get_protocol(grade.protocol).name == "cogym"
        scale = ("the score divided by 5" if cogym else
                 "the score's place between 1 (counts 0) and 5 (counts 1)")
        performance = [f"{grade.score} out of {MAX_SCORE} counts as "
                       f"{performance_of(grade.score, grade.protocol):.2f}: {scale}."]
        if not delivered:
            performance.append("The section does not count as delivered (the library holds no "
                               "paper, or the section is empty), so this is 0.")
        explained["rubric_score"] = ("The judge's score on the Related Work rubric, 1 to 5",
                                     judged)
        explained["performance"] = ("Task performance: the rubric score on a 0 to 1 scale",
                                    performance)
    order = ("performance", "rubric_score", "unique_citations", "subsections")
    return [ScoreReport(name=name, value=float(scores[name]), label=explained[name][0],
                        reasons=explained[name][1])
            for name in order if name in explained and name in scores]
