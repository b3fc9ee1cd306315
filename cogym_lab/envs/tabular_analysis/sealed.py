"""The bundled sample's gold hypotheses, stored sealed so no file in the package holds them plain.

The package is installed where the person's kernel (and so an agent's cells) can read it, and
anything in it is one ``open()`` or ``grep -r`` away. The sample's answer key is therefore kept as
:data:`SEALED_NAME` (a name that says nothing): the key's CSV text XOR-ed with a key stream
derived here (SHA-256 of a fixed seed and a block counter), behind a short header and a digest of
the plain text, so a damaged file is an error rather than wrong gold. Only the loader unseals it,
in the process that grades.

This hides the gold from a search of the disk and from a cell that reads the files near the data;
it is no secret from code that imports this module on purpose (the key stream is in the code,
and a process of the same user cannot be kept out). ``docs/tabular-scoring.md`` says what else
limits that. No compression: its output depends on the zlib build, and the committed file must be
reproducible byte for byte by ``scripts/samples/build_tabular_analysis_sample.py``.
"""

from __future__ import annotations

import hashlib

from cogym_lab.datasets import DatasetError

__all__ = ["SEALED_NAME", "seal", "unseal"]

#: The sealed answer key's file name, in the sample's test folder (beside the domain folders).
SEALED_NAME = "records.bin"

_MAGIC = b"CGS1"  # format and version
_SEED = b"cogym_lab/tabular_analysis/sample"
_DIGEST_SIZE = 32


def _key_stream(size: int) -> bytes:
    blocks = (hashlib.sha256(_SEED + counter.to_bytes(8, "big")).digest()
              for counter in range(-(-size // _DIGEST_SIZE)))
    return b"".join(blocks)[:size]


def _xor(data: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, _key_stream(len(data)), strict=True))


def seal(text: str) -> bytes:
    """``text`` sealed: header, SHA-256 of the UTF-8 text, the text XOR-ed with the key stream."""
    plain = text.encode("utf-8")
    return _MAGIC + hashlib.sha256(plain).digest() + _xor(plain)


def unseal(blob: bytes) -> str:
    """The text :func:`seal` sealed; :class:`DatasetError` for a file that is not one, or that
    was damaged."""
    header, digest, body = (blob[:len(_MAGIC)], blob[len(_MAGIC):len(_MAGIC) + _DIGEST_SIZE],
                            blob[len(_MAGIC) + _DIGEST_SIZE:])
    if header != _MAGIC:
        raise DatasetError("The sample's sealed answer key has an unknown format.")
    plain = _xor(body)
    if hashlib.sha256(plain).digest() != digest:
        raise DatasetError("The sample's sealed answer key is damaged; reinstall cogym_lab.")
    return plain.decode("utf-8")
