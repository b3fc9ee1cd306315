"""Measures of a session or a set of sessions, from results directories (and the judges' labels
where a measure needs them): the outcome and win rates, who did what and who took initiative,
effort scaling by round, the turn-taking ablation, and the measures of interactive-plan and
real-time cooking sessions.
"""
