"""A small study for the hub's tests: two conditions of the todo task with the rule-based
example team, under secret names that participants must never see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cogym_lab.studies.design import StudyDesign
from cogym_lab.studies.hub.store import StudyFolder

#: The conditions' names: what the researcher sees, never a participant.
SECRET_NAMES = ("secret-alpha", "secret-beta")
LABELS = ("Assistant A", "Assistant B")


def small_design(**changes: Any) -> StudyDesign:
    data: dict[str, Any] = {
        "name": "hub-test", "title": "Working with an assistant",
        "consent": "You agree to take part in this study. <b>markup stays text</b>",
        "instructions": "You will make a checklist with an assistant, twice.",
        "conditions": [
            {"name": name, "label": label, "session": {"task": "todo", "team": "example"}}
            for name, label in zip(SECRET_NAMES, LABELS, strict=True)],
        "assignment": {"subjects": "within", "order": "latin"},
        "questionnaires": [
            {"name": "after", "after": "session", "title": "About this session", "items": [
                {"kind": "likert", "name": "satisfied", "text": "I am satisfied with it."},
                {"kind": "text", "name": "comment", "text": "Anything to add?"}]},
            {"name": "final", "after": "end", "title": "At the end", "items": [
                {"kind": "ranking", "name": "rank", "text": "Rank the assistants, best first."},
                {"kind": "choice", "name": "again", "text": "Would you work with one again?",
                 "options": ["yes", "no"]},
                {"kind": "task_load", "name": "load"}]}],
    }
    data.update(changes)
    return StudyDesign.model_validate(data)


def study_folder(root: Path, **changes: Any) -> StudyFolder:
    return StudyFolder.create(root, small_design(**changes), seed=7)


TASK_LOAD = {"mental": 40, "physical": 5, "temporal": 50, "performance": 80, "effort": 35,
             "frustration": 10}
