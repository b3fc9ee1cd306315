"""Where the task data lives, and how to check and fetch the files a task declares it needs.

Every task reads its files from one *data directory*, chosen by :func:`data_dir`:

1. an explicit argument (``--data-dir`` on the command line),
2. else the folder a session is being built for (:func:`reading_from`: a session spec's
   ``data_dir``, such as the one ``%cogym config data_dir=...`` sends from a notebook),
3. else the ``COGYM_DATA`` environment variable,
4. else the user cache directory: ``$XDG_CACHE_HOME/cogym_lab/datasets``, or
   ``~/.cache/cogym_lab/datasets`` when ``XDG_CACHE_HOME`` is not set.

Inside it each task has a folder of its own (named after the task).
A task declares the files it needs there as :class:`DataItem` records, each with its source
(``data_files`` on the task's class; :mod:`cogym_lab.envs.task_data` asks the registered tasks).
Given a task's items, :func:`status` says what is present, :func:`require` raises
:class:`DataMissing` (naming the directory, the missing files and how to get them) and
:func:`download` fetches what has a public download address. Some items have none (they must be
placed by hand); those are marked ``manual`` and point at their project page. A task may also
carry a :class:`DataSample` inside the package, which :func:`task_folder` reads when nobody chose
a data directory and the default one lacks the task's files (see :mod:`.samples`). This package
names no task: tasks import it, not the other way round.

Modules: ``items`` (what a task declares), ``location`` (which folder), ``checks`` (present or
missing, and the message), ``download`` (which items to fetch, and the message when some
fail), ``transfer`` (one resumable HTTP download with its progress bar), ``checksums``,
``samples``.

Downloads go through :mod:`urllib`, continue where an interrupted one stopped, are checked
against the SHA-256 their task declares, and draw a tqdm progress bar a file on stderr.
"""

from cogym_lab.datasets.checks import (
    ASKED_FROM_ENV_VAR,
    asked_from,
    disk_size,
    download_command,
    list_command,
    missing_message,
    require,
    status,
    task_of,
)
from cogym_lab.datasets.download import download, part_file, verify_present
from cogym_lab.datasets.items import DataItem, DataMissing, DatasetError, DownloadError, ItemStatus
from cogym_lab.datasets.location import (
    CHOOSE_ANOTHER_DIR,
    DATA_ENV_VAR,
    cache_root,
    data_dir,
    data_dir_origin,
    reading_from,
)
from cogym_lab.datasets.samples import (
    DataSample,
    announce_once,
    is_sample,
    task_folder,
    uses_sample,
)
from cogym_lab.datasets.transfer import format_size

__all__ = [
    "ASKED_FROM_ENV_VAR",
    "CHOOSE_ANOTHER_DIR",
    "DATA_ENV_VAR",
    "DataItem",
    "DataMissing",
    "DataSample",
    "DatasetError",
    "DownloadError",
    "ItemStatus",
    "announce_once",
    "asked_from",
    "cache_root",
    "data_dir",
    "data_dir_origin",
    "disk_size",
    "download",
    "download_command",
    "format_size",
    "is_sample",
    "list_command",
    "missing_message",
    "part_file",
    "reading_from",
    "require",
    "status",
    "task_folder",
    "task_of",
    "uses_sample",
    "verify_present",
]
