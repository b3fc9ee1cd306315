"""Jupyter kernels as tasks use them: run cells and collect their outputs (``executor``,
``cells``), keep a private kernel away from hidden data (``sandbox``), and the protocol of a
person's own notebook that a host links to a task (``notebook_link``).

Generic infrastructure: it names no task. Tasks import it, and so does the Jupyter server
extension that implements :class:`NotebookLink`; it imports neither.
"""

from cogym_lab.kernels.cells import CellOutput, CellResult, strip_ansi
from cogym_lab.kernels.executor import KernelExecutor, LocalKernelExecutor
from cogym_lab.kernels.notebook_link import Happening, KernelRestarted, NotebookLink, PersonCell
from cogym_lab.kernels.sandbox import KernelSandbox

__all__ = ["CellOutput", "CellResult", "Happening", "KernelExecutor", "KernelRestarted",
           "KernelSandbox", "LocalKernelExecutor", "NotebookLink", "PersonCell", "strip_ansi"]
