"""Reading a results folder: what a session wrote, and what an evaluation left beside it.

Everything here reads files and replays logs, with no LM and no judging, so that the runtime (a
pairwise rating reads the sessions it compares) and the widgets (the trajectory viewer) can read
results without the evaluation suite:

* :mod:`~cogym_lab.records.trajectory`: one results directory as a :class:`SessionRecord`, and
  finding the sessions of a run.
* :mod:`~cogym_lab.records.likert`: the rating form's Likert items, their old names, and the
  general-utility composite.
* :mod:`~cogym_lab.records.decisions`: a member's decisions and the LM calls behind each.
* :mod:`~cogym_lab.records.label_files` and :mod:`~cogym_lab.records.failure_types`: the label
  files the evaluation writes into a session folder, and the failure codes they use.
* :mod:`~cogym_lab.records.viewer`: the trajectory viewer's data, rebuilt by replaying the log.
"""
