"""One HTTP download into a ``.part`` file that survives an interruption, with a progress bar.

The bytes go to the part file as they arrive and stay there when the transfer breaks (no
network, a cut connection, Ctrl-C). The next call asks the server for the rest
(``Range: bytes=N-``) and appends it when the server answers ``206 Partial Content``; a server
that sends the whole file again (``200``) starts it over, and one that answers ``416`` (nothing
left past N) either confirms the part is whole or has it started over. Failures raise
:class:`TransferError` whose text says what went wrong in plain words.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import re
import socket
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cogym_lab.datasets.checksums import file_digest
from cogym_lab.errors import CogymError

if TYPE_CHECKING:  # tqdm is imported when a bar is drawn: importing the package stays light
    from tqdm import tqdm

__all__ = ["Transfer", "TransferError", "fetch", "format_size", "plain_reason"]

_CHUNK = 1 << 16
_USER_AGENT = "cogym-lab data"


class TransferError(CogymError):
    """A download that did not complete; its text is the reason, in plain words."""


class _StartOver(CogymError):
    """The part file cannot be continued (the server's range does not fit it)."""


@dataclass(frozen=True)
class Transfer:
    """A completed download: the part file holds ``size`` bytes whose SHA-256 is ``sha256``;
    ``resumed_from`` bytes of them were already there before this call."""

    sha256: str
    size: int
    resumed_from: int


def plain_reason(error: BaseException, url: str, timeout: float) -> str:
    """Why a request to ``url`` failed, in words a person acts on (no exception names)."""
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    cause = error.reason if isinstance(error, urllib.error.URLError) else error
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or url
    if isinstance(cause, socket.gaierror):
        return f"no network connection (the name {host} could not be looked up)"
    if isinstance(cause, ConnectionRefusedError):
        where = f"{host}:{parts.port}" if parts.port else host
        return f"the connection to {where} was refused (no network, or the server is down)"
    if isinstance(cause, TimeoutError | socket.timeout):
        return f"the server did not answer in {timeout:g} s"
    if isinstance(cause, ssl.SSLError):
        return f"a secure connection to {host} could not be made ({cause.reason or cause})"
    if isinstance(cause, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(cause, ConnectionError):
        return "the connection was broken"
    if isinstance(cause, OSError) and cause.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH,
                                                      errno.ENETDOWN):
        return "no network connection (the network is unreachable)"
    text = str(getattr(cause, "strerror", None) or cause) or type(cause).__name__
    return text[0].lower() + text[1:]


def _content_range(header: str | None) -> tuple[int | None, int | None]:
    """``(first byte, whole size)`` of a ``Content-Range`` header such as ``bytes 10-99/100`` or
    ``bytes */100``; None for what it does not say."""
    match = re.fullmatch(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)\s*", header or "")
    if match is None:
        return None, None
    first, whole = match.groups()
    return (int(first) if first else None), (int(whole) if whole != "*" else None)


def _bar(label: str, total: int | None, initial: int, enabled: bool) -> tqdm[Any]:
    """The progress bar on stderr: bytes done, total, percent and rate. Redrawn ten times a
    second on a terminal, once a second when stderr goes to a pipe (a notebook cell shows
    the carriage-return updates as one line)."""
    from tqdm import tqdm

    terminal = sys.stderr.isatty()
    return tqdm(total=total, initial=initial, desc=label, unit="B", unit_scale=True,
                unit_divisor=1024, file=sys.stderr, disable=not enabled, leave=True,
                mininterval=0.1 if terminal else 1.0, dynamic_ncols=terminal,
                ncols=None if terminal else 100)


def _open(url: str, offset: int, timeout: float) -> http.client.HTTPResponse:
    headers = {"User-Agent": _USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=timeout)
    return response


def _copy(response: http.client.HTTPResponse, out: IO[bytes], digest: hashlib._Hash,
          bar: tqdm[Any]) -> int:
    """Append the body to ``out``; the count of bytes. Network errors propagate, with what
    arrived already written (and flushed when the file closes)."""
    received = 0
    # read1: what has arrived, at most one chunk. read() would wait to fill the chunk, and
    # the bytes it holds when the server goes silent would be lost to the part file.
    while chunk := response.read1(_CHUNK):
        out.write(chunk)
        digest.update(chunk)
        received += len(chunk)
        bar.update(len(chunk))
    return received


def _fetch_once(url: str, part: Path, offset: int, *, label: str, progress: bool,
                timeout: float, size_hint: int | None) -> Transfer:
    try:
        response = _open(url, offset, timeout)
    except urllib.error.HTTPError as error:
        error.close()
        if error.code == 416 and offset:  # nothing past the part's end
            _first, whole = _content_range(error.headers.get("Content-Range"))
            if whole == offset:  # the part already holds the whole file
                return Transfer(file_digest(part).hexdigest(), offset, offset)
            raise _StartOver from None
        raise TransferError(plain_reason(error, url, timeout)) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as error:
        raise TransferError(plain_reason(error, url, timeout)) from None
    with response:
        length = response.headers.get("Content-Length")
        body = int(length) if length and length.isdigit() else None
        if offset and response.status == 206:
            first, whole = _content_range(response.headers.get("Content-Range"))
            if first != offset:
                raise _StartOver
            total = whole if whole is not None else (offset + body if body is not None
                                                     else size_hint)
            digest, mode = file_digest(part), "ab"
        else:  # the whole file (a server that ignores Range answers 200): start over
            offset, total = 0, body if body is not None else size_hint
            digest, mode = hashlib.sha256(), "wb"
        part.parent.mkdir(parents=True, exist_ok=True)
        shown = f"{label} (resuming)" if offset else label
        with open(part, mode) as out, _bar(shown, total, offset, progress) as bar:
            try:
                received = _copy(response, out, digest, bar)
            except (OSError, http.client.HTTPException) as error:
                out.flush()
                raise TransferError(_broken(out.tell(), total,
                                            plain_reason(error, url, timeout))) from None
    size = offset + received
    if body is not None and received < body:
        raise TransferError(_broken(size, total, "the connection was cut"))
    return Transfer(digest.hexdigest(), size, offset)


def format_size(size: int) -> str:
    """``532 B``, ``3.2 MB``: a byte count for a person."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"  # pragma: no cover


def _broken(done: int, total: int | None, why: str) -> str:
    """``why`` a transfer stopped, with how far it got."""
    of = f" of {format_size(total)}" if total else ""
    return f"{why} (stopped at {format_size(done)}{of})"


def fetch(url: str, part: Path, *, label: str, progress: bool = True, timeout: float = 30.0,
          size_hint: int | None = None) -> Transfer:
    """Download ``url`` into ``part``, continuing what an earlier call left there.

    ``label`` names the file on the progress bar; ``size_hint`` is its total when the server
    sends no length. Raises :class:`TransferError` (the part file kept, for the next call);
    the part is only created once the server has answered."""
    if not url.startswith(("http://", "https://")):
        raise TransferError("only http(s) addresses are fetched")
    offset = part.stat().st_size if part.is_file() else 0
    try:
        return _fetch_once(url, part, offset, label=label, progress=progress, timeout=timeout,
                           size_hint=size_hint)
    except _StartOver:
        part.unlink(missing_ok=True)
    return _fetch_once(url, part, 0, label=label, progress=progress, timeout=timeout,
                       size_hint=size_hint)
