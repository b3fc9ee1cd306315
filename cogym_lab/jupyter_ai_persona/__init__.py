"""Co-Gym in jupyter-ai's chat: a persona that starts and joins hosted sessions.

:mod:`~cogym_lab.jupyter_ai_persona.commands` reads what a person writes to the persona,
:mod:`~cogym_lab.jupyter_ai_persona.chat_sessions` creates and finds sessions through the
server's ``SessionHost`` on that person's behalf, and :mod:`~cogym_lab.jupyter_ai_persona.replies`
says what to open. None of them imports jupyter-ai: only
:mod:`~cogym_lab.jupyter_ai_persona.persona` does, and jupyter-ai loads it through the
``jupyter_ai.personas`` entry point (the ``jupyter-ai`` extra).
"""
