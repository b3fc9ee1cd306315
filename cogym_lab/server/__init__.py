"""Jupyter server extension: hosts cogym_lab sessions behind authenticated REST and websocket
endpoints under ``/cogym/api``.

Importing this package never imports jupyter_server; the server loads the extension through
``_jupyter_server_extension_points``.
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from cogym_lab.server.extension import CogymLabApp

    return [{"module": "cogym_lab.server.extension", "app": CogymLabApp}]
