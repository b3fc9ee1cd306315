"""A task in a person's own notebook (``cogym_lab.kernels.NotebookLink``, for a task that
``runs_in_notebook``): the agent's cells run in the notebook's kernel (``server_kernel``), appear
in its live document (``document``), and the person's cells are reported to the session
(``watch``). ``link`` ties the three to one session."""

from cogym_lab.server.live_notebooks.link import (
    AGENT_CELL_KEY,
    NotebookError,
    NotebookOpener,
    NotebookRef,
    ServerNotebookLink,
)

__all__ = ["AGENT_CELL_KEY", "NotebookError", "NotebookOpener", "NotebookRef",
           "ServerNotebookLink"]
