"""The LM judges and what they answer: the judges themselves and their prompts (``prompts/``),
the validated answers (:mod:`.labels`), checking a judge's quotes against the log
(:mod:`.quotes`), and the failure analysis (:mod:`.failures`, :mod:`.failure_taxonomy`).
"""
