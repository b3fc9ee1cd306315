"""Running a study with people on a Jupyter server or JupyterHub (docs/studies.md).

A second Jupyter server extension, ``cogym_lab.studies.hub``, beside ``cogym_lab``'s own: the
session host lives in :mod:`cogym_lab.server`, which sits below studies in the layer order and
so cannot import them; this one sits above it and reaches the host through the server's
settings. Enable both (``cogym-lab study serve`` writes the configuration that does).
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from cogym_lab.studies.hub.extension import CogymStudyApp

    return [{"module": "cogym_lab.studies.hub.extension", "app": CogymStudyApp}]


__all__ = ["_jupyter_server_extension_points"]
