"""What a result was made with: versions of the graders, judges and prompts, the data's
checksums, and whether the setup is the shipped one (``standard``) or ``custom``.

``session.json`` and ``run.json`` record it as ``provenance`` (:class:`Provenance`);
``cogym-lab eval regrade`` compares it with today's (:mod:`cogym_lab.eval.regrade`).
Modules: ``versions`` (hashes of code and prompts), ``data`` (checksums of data files),
``shipped_prompts`` and ``standard`` (standard or custom), ``model`` (the record itself).
"""

from cogym_lab.provenance.data import DataChecksum
from cogym_lab.provenance.model import Custom, Provenance, run_provenance, session_provenance

__all__ = ["Custom", "DataChecksum", "Provenance", "run_provenance", "session_provenance"]
