"""Programmatic checks of a simulated user, from the log alone (no LM).

**Finished right after agreeing to a change that was not made** (τ²-bench pull request 297,
issue 182): the agent proposes a change, the user agrees, and the user's very next act is to
finish, with no task action of an agent in between, so the agreed change never happens. An
*agreement* is a user's chat message that begins with an assent ("yes", "sure", "go ahead",
"please do", ...) and answers an agent's message that offers a change ("shall I", "I'll", "let
me", "how about", ...; not a plain question such as "anything else?", and not an offer to end
the session), or a formal acceptance whose action was still running (deferred
work) when the user finished. Here a formal acceptance of an ordinary action cannot trigger the
check: the coordinator applies the accepted action in the same step.

**Claimed something the hidden information contradicts.** Checked against the task's
structured hidden information (:meth:`cogym_lab.core.env.CoEnv.hidden_facts`), never against
its prose, so every finding points at a definite fact:

* a *quantity* (a budget, a party size, a number of cities): a user's sentence in the first
  person ("I", "we", "my", "our", ...) that states that quantity (a number right before one of
  its words, "3 people", "two adult travellers", or for money, an amount in a sentence that uses
  one of its words, "our budget is $2,000") contradicts it when none of the values it states is
  the hidden one. "Not 3 people but 2" states 2 as well, so it passes;
* a *required* thing (an item the person will not do without): a user's sentence that says it
  is not needed ("we don't need the headlamp") or asks for it to go ("remove the headlamp",
  "skip the rain jacket"), unless negated ("don't remove ...") or asked as a question.

Limits, on purpose: the check sees only what these patterns see. It misses paraphrases ("it is
just my partner and me"), amounts in words ("two thousand dollars"), and relative claims ("a
bit more than planned"); it can misread a first-person sentence about the workspace rather than
the user's wishes ("I see you planned 2 cities"), or an amount that is not the whole budget
in a sentence that names the budget. Tasks without declared facts are not checked, and the
audit says so. The LM reviewer (``eval.users.audit``) covers the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cogym_lab.core.hidden_facts import HiddenFacts, HiddenQuantity
from cogym_lab.core.messages import ChatMessage, EventType
from cogym_lab.eval.judging.labels import UserCheck
from cogym_lab.records.trajectory import SessionRecord

FINISHED_AFTER_AGREEING = "finished_after_agreeing"
CONTRADICTS_HIDDEN = "contradicts_hidden_information"

#: How an agreement begins ("yes", "sure, go ahead", "ok please do"), after leading spaces.
_ASSENT = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|sure|ok|okay|alright|all right|absolutely|of course|definitely|"
    r"agreed|perfect|great|sounds good|that works|go ahead|go for it|please do|do it|"
    r"let'?s do it|please go ahead)\b", re.I)
#: What makes an agent's message an offer to change something: "shall I", "I'll", "how about"
#: ... A plain question ("Is there anything else?") is not one: "yes" to it is no agreement.
_PROPOSAL = re.compile(
    r"\b(?:shall i|should i|shall we|should we|would you like me to|do you want me to|"
    r"want me to|would you like (?:a|an|the|to|me|us)|i can|i could|i'?ll|i will|let me|"
    r"let'?s|i'?m going to|i am going to|i suggest|i'?d suggest|i propose|how about)\b", re.I)
#: An offer to end the session: agreeing to it and then finishing is what was agreed.
_ENDING = re.compile(r"\b(?:finish|wrap (?:things |it )?up|end the session|we'?re done|"
                     r"we are done|call it a day|close (?:the|this) session)\b", re.I)

_NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                 "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
                 "a couple of": 2, "a pair of": 2, "single": 1, "only one": 1}
_COUNT = r"(\d+|" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True)) + r")"
#: One optional word between a number and its noun ("2 adult travellers"), but not one that
#: makes the number relative ("2 more people") or partitive ("3 of the cities").
_RELATIVE = {"more", "fewer", "less", "extra", "other", "additional", "of", "or", "to", "and"}
_MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)\s*(k\b)?|\b(\d[\d,]*(?:\.\d+)?)\s*(k\s*)?"
                    r"(?:dollars|usd)\b", re.I)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|we|we're|we've|we'd|us|our|ours)\b",
                           re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_NEGATED = re.compile(r"\b(?:not|never|n't|don'?t|do not|please don'?t)\W+(?:\w+\W+){0,2}$", re.I)
_ARTICLE = r"(?:(?:a|an|the|any|my|our|that|this)\s+)?"


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE.split(text) if part.strip()]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def stated_quantities(sentence: str, quantity: HiddenQuantity) -> set[float]:
    """The values of ``quantity`` that ``sentence`` states (empty when it states none)."""
    words = [w.lower() for w in quantity.words]
    lowered = sentence.lower()
    if quantity.money:
        if not any(re.search(rf"\b{re.escape(w)}\b", lowered) for w in words):
            return set()
        found = set()
        for match in _MONEY.finditer(sentence):
            digits = match.group(1) or match.group(3)
            value = _number(digits)
            if match.group(2) or match.group(4):  # "$2k"
                value *= 1000
            found.add(value)
        return found
    noun = "|".join(re.escape(w) for w in words)
    found = set()
    for match in re.finditer(rf"\b{_COUNT}\s+(?:([a-z-]+)\s+)?(?:{noun})\b", lowered):
        if match.group(2) in _RELATIVE:
            continue
        count = match.group(1)
        found.add(float(_NUMBER_WORDS[count]) if count in _NUMBER_WORDS else _number(count))
    return found


def _removal(item: str) -> re.Pattern[str]:
    name = r"\s+".join(re.escape(part) for part in item.lower().split())
    return re.compile(
        rf"\b(?:(?:do not|don'?t|doesn'?t|won'?t|no longer|never)\s+(?:really\s+)?"
        rf"(?:need|want|bring|take|pack|care about)\s+{_ARTICLE}|"
        rf"(?:remove|drop|skip|delete|cut|leave out|take out|take off|get rid of)\s+{_ARTICLE})"
        rf"{name}s?\b|\b{name}s?\s+(?:is|are)\s+(?:not needed|unnecessary|not necessary)\b",
        re.I)


def contradicted_claims(message: ChatMessage, facts: HiddenFacts) -> list[str]:
    """What in ``message`` the hidden facts contradict, one line each (empty when nothing)."""
    found = []
    for sentence in sentences(message.text):
        first_person = _FIRST_PERSON.search(sentence) is not None
        for quantity in facts.quantities if first_person else ():
            stated = stated_quantities(sentence, quantity)
            if stated and quantity.value not in stated:
                shown = ", ".join(f"{v:g}" for v in sorted(stated))
                found.append(f"states {quantity.name} {shown} in {sentence!r}; the hidden "
                             f"information says {quantity.value:g}")
        if sentence.rstrip().endswith("?"):
            continue
        for item in facts.required:
            for match in _removal(item).finditer(sentence):
                if _NEGATED.search(sentence[:match.start()]):
                    continue  # "please don't remove the headlamp"
                found.append(f"asks to do without {item!r} in {sentence!r}; the hidden "
                             f"information says the person insists on it")
                break
    return found


def contradiction_checks(record: SessionRecord, roles: Iterable[str],
                         facts: HiddenFacts) -> list[UserCheck]:
    """A failed check for each user message that the hidden facts contradict."""
    users = set(roles)
    return [UserCheck(check=CONTRADICTS_HIDDEN, detail=f"{message.sender} {line}",
                      seq=message.seq)
            for message in record.messages if message.sender in users
            for line in contradicted_claims(message, facts)]


def finished_after_agreeing(record: SessionRecord, roles: Iterable[str]) -> list[UserCheck]:
    """A failed check when a user's act right before its finish agreed to a change that no
    agent made before the finish."""
    users = set(roles)
    agents = set(record.agent_roles)
    found = []
    last_agent_message: ChatMessage | None = None
    messages = {message.seq: message for message in record.messages}
    agreement: tuple[int, str] | None = None  # (seq, what was agreed) of the user's last act
    for event in record.events:
        if event.status != "ok":
            continue
        if event.actor in agents:
            if event.type is EventType.ACTION:
                agreement = None  # an agent changed the workspace: the agreement was acted on
            elif event.type is EventType.MESSAGE and event.seq in messages:
                last_agent_message = messages[event.seq]
            continue
        if event.actor not in users or event.type is EventType.WAIT:
            continue
        if event.type is EventType.FINISH:
            if agreement is not None:
                seq, proposal = agreement
                found.append(UserCheck(
                    check=FINISHED_AFTER_AGREEING, seq=event.seq,
                    detail=f"{event.actor} finished right after agreeing (event {seq}) to "
                           f"{proposal!r}, before any agent acted on it"))
            agreement = None
        elif event.type is EventType.MESSAGE and event.seq in messages:
            text = messages[event.seq].text
            agreed = last_agent_message is not None and _ASSENT.search(text) \
                and _PROPOSAL.search(last_agent_message.text) \
                and not _ENDING.search(last_agent_message.text)
            agreement = (event.seq, last_agent_message.text[:200]) \
                if agreed and last_agent_message is not None else None
        elif event.type is EventType.CONFIRM_ACCEPT and event.info.get("deferred"):
            agreement = (event.seq, str(event.info.get("pending_action") or "")[:200])
        else:
            agreement = None  # any other act of the user comes between
    return found


def run_checks(record: SessionRecord, roles: Iterable[str],
               facts: HiddenFacts) -> list[UserCheck]:
    """Every programmatic check's failures for the simulated users ``roles``, in log order."""
    roles = list(roles)
    failed = finished_after_agreeing(record, roles) + contradiction_checks(record, roles, facts)
    return sorted(failed, key=lambda check: check.seq if check.seq is not None else -1)
