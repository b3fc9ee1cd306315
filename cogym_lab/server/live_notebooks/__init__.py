"""A task in a person's own notebook (``cogym_lab.kernels.NotebookLink``, for a task that
``runs_in_notebook``): the agent's cells run in the notebook's kernel (``server_kernel``), appear
in its live document (``document``) or, on a server without real-time collaboration, in its file
(``file_notebook``), and the person's cells are reported to the session (``watch``). What the
agent owns of its cells, and how it is put back when a save drops it, is in ``agent_cells``.
``link`` ties them to one session."""

from cogym_lab.server.live_notebooks.link import (
    AGENT_CELL_KEY,
    NotebookError,
    NotebookOpener,
    NotebookRef,
    ServerNotebookLink,
)

__all__ = ["AGENT_CELL_KEY", "NotebookError", "NotebookOpener", "NotebookRef",
           "ServerNotebookLink"]
