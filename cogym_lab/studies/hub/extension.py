"""The ``cogym_lab.studies.hub`` Jupyter server extension: a study's participant flow under
``/cogym/study/api``, beside the ``cogym_lab`` extension whose session host it uses."""

from __future__ import annotations

import os

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Unicode, default

from cogym_lab.studies.hub.handlers import HANDLERS, SETTINGS_KEY, StudyParts
from cogym_lab.studies.hub.notebook import write_study_notebook
from cogym_lab.studies.hub.store import StudyFolder
from cogym_lab.studies.hub.telemetry import StudyTelemetry

#: The environment variable that names the study folder when the setting is not given.
STUDY_DIR_ENV = "COGYM_STUDY_DIR"


class CogymStudy(ExtensionApp):
    """The study's settings, as ``c.CogymStudy.<name>``."""

    study_dir = Unicode(help="The study's folder (made by `cogym-lab study serve`), on a disk "
                             "every participant's server reaches. Default: $COGYM_STUDY_DIR."
                        ).tag(config=True)
    write_notebook = Bool(True, help="Write study.ipynb into the server's root directory at "
                                     "start, when it is not there.").tag(config=True)

    @default("study_dir")
    def _default_study_dir(self) -> str:
        return os.environ.get(STUDY_DIR_ENV, "")


class CogymStudyApp(CogymStudy):
    name = "cogym_lab_study"
    load_other_extensions = True

    def initialize_settings(self) -> None:
        if self.serverapp is None:
            return
        if not self.study_dir:
            self.log.warning("cogym_lab study: no study folder (c.CogymStudy.study_dir or "
                             "$%s); the study API answers 404", STUDY_DIR_ENV)
            return
        folder = StudyFolder(os.path.expanduser(self.study_dir))
        if not folder.exists():
            self.log.error("cogym_lab study: %s is not a study folder (set one up with "
                           "`cogym-lab study serve`)", folder.root)
            return
        design = folder.design()
        telemetry = StudyTelemetry(self.serverapp.event_logger, folder, design.name)
        self.settings[SETTINGS_KEY] = StudyParts(folder, design, telemetry)
        root = getattr(self.serverapp, "root_dir", None)
        if self.write_notebook and root:
            try:
                write_study_notebook(root)
            except OSError as error:
                self.log.warning("cogym_lab study: could not write study.ipynb: %s", error)
        self.log.info("cogym_lab study %s from %s", design.name, folder.root)

    def initialize_handlers(self) -> None:
        self.handlers.extend(HANDLERS)


__all__ = ["STUDY_DIR_ENV", "CogymStudy", "CogymStudyApp"]
