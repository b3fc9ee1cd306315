"""Small public-dump look-alikes for building the Related Work corpus in tests: an arXiv metadata
snapshot (one JSON object a line) and an ACL Anthology BibTeX export, written by the tests
themselves, with what the build must keep, drop and clean. The expected records are beside them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

# Markup, a line separator, a NUL, a lone surrogate and a bell: what hostile text a dump can carry.
HOSTILE_TITLE = "<script>alert('x')</script> Quantum\u2028Gradient\x00 Tricks\ud800 for \x07Parsers"
HOSTILE_TITLE_CLEANED = "<script>alert('x')</script> Quantum Gradient Tricks\ufffd for Parsers"


def _arxiv(arxiv_id: str, title: str, categories: str, created: str | None,
           **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": arxiv_id, "submitter": "Someone", "title": title,
        "abstract": "  An abstract\n  over two lines.  ", "authors": "A. Author and B. Writer",
        "categories": categories, "journal-ref": None, "doi": None,
        "update_date": "2023-05-04", **extra}
    if created is not None:
        entry["versions"] = [{"version": "v1", "created": created},
                             {"version": "v2", "created": "Wed, 3 May 2023 10:00:00 GMT"}]
    return entry


ARXIV_ENTRIES: list[dict[str, Any]] = [
    _arxiv("0704.0002", "Sparsity-certifying Graph Decompositions", "math.CO cs.CG",
           "Mon, 2 Apr 2007 19:18:42 GMT",
           authors_parsed=[["Streinu", "Ileana", ""], ["Theran", "Louis", ""]]),
    _arxiv("0704.0001", "Calculation of prompt diphoton production cross sections", "hep-ph",
           "Mon, 2 Apr 2007 19:18:42 GMT"),
    _arxiv("2106.01234", "  Zephyrine\n   Transformers   for\tLong\r\nDocuments ", "cs.CL cs.LG",
           "Tue, 1 Jun 2021 17:00:00 GMT"),
    _arxiv("2203.00042", HOSTILE_TITLE, "stat.ML cs.LG", "Tue, 1 Mar 2022 09:00:00 GMT"),
    _arxiv("math/0601001", "A Theorem on Primes", "math.NT", "Sun, 1 Jan 2006 00:00:00 GMT"),
    # No versions: the year comes from update_date.
    _arxiv("2501.00007", "Marmalade Retrieval without Versions", "cs.IR", None,
           update_date="2025-01-09"),
]

#: The records the build writes for ARXIV_ENTRIES, by id (the non-CS ones are left out).
ARXIV_EXPECTED: dict[str, dict[str, Any]] = {
    "arxiv:0704.0002": {"title": "Sparsity-certifying Graph Decompositions", "year": 2007,
                        "authors": ["Ileana Streinu", "Louis Theran"],
                        "categories": ["math.CO", "cs.CG"]},
    "arxiv:2106.01234": {"title": "Zephyrine Transformers for Long Documents", "year": 2021,
                         "authors": ["A. Author", "B. Writer"],
                         "categories": ["cs.CL", "cs.LG"]},
    "arxiv:2203.00042": {"title": HOSTILE_TITLE_CLEANED, "year": 2022,
                         "categories": ["stat.ML", "cs.LG"]},
    "arxiv:2501.00007": {"title": "Marmalade Retrieval without Versions", "year": 2025,
                         "categories": ["cs.IR"]},
}


def write_arxiv(path: Path, entries: list[dict[str, Any]] | None = None) -> Path:
    """The snapshot as JSON lines (gzip when ``path`` ends in .gz), with a blank line and a
    broken line among them, as a partly damaged download would have."""
    lines = [json.dumps(e) for e in (ARXIV_ENTRIES if entries is None else entries)]
    lines.insert(2, "")
    lines.insert(4, '{"id": "9999.9999", "categories": "cs.AI", "title": ')
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


_LONG_VOLUME = ("Proceedings of the 61st Annual Meeting of the Association for Computational "
                "Linguistics (Volume 1: Long Papers)")

# One entry of each kind the build must tell apart, laid out as the Anthology's export is.
ACL_BIB = r"""@proceedings{acl-2023-long,
    title = "VOLUME",
    editor = "Rogers, Anna",
    month = jul,
    year = "2023",
    address = "Toronto, Canada",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2023.acl-long.0",
}
@inproceedings{muller-etal-2023-uber,
    title = "{\"U}ber {BERT}: Caf{\'e}-style Quillwort Models --
      a \textit{study} of na{\"\i}ve {S}panish",
    author = "M{\"u}ller, J{\"o}rg  and
      van der Berg, Anna  and
      Smith, Jr., John",
    booktitle = "VOLUME",
    month = jul,
    year = "2023",
    address = "Toronto, Canada",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2023.acl-long.1/",
    doi = "10.18653/v1/2023.acl-long.1",
    pages = "1--10",
    abstract = "We study   things
  with $x^2$, 50{\%} of {``}quoted{''} words {and
@ a line} that starts with an at sign.",
}
@article{old-2015-cl,
    title = "An Old Journal Paper",
    author = "Doe, Jane",
    journal = "Computational Linguistics",
    year = "2015",
    url = "https://aclanthology.org/J15-1001",
}
@inproceedings{untitled-2020,
    author = "Doe, Jane",
    booktitle = "Proceedings of a Workshop",
    year = "2020",
    url = "https://aclanthology.org/2020.ws-1.3",
}
@article{lee-2019-journal,
    title = "Journal Paper on <b>Bold</b> Heliotrope Parsing",
    author = "Lee, Min  and Kim, Soo",
    journal = "Transactions of the Association for Computational Linguistics",
    volume = "7",
    year = "2019",
    url = "https://www.aclweb.org/anthology/Q19-1001.pdf",
}
@inproceedings{keyed-only-2018,
    title = "A Paper without an Address",
    author = "Roe, Richard",
    booktitle = "Proceedings of the Third Conference on Machine Translation",
    year = "2018",
}
""".replace("VOLUME", _LONG_VOLUME)

#: The records the build writes for ACL_BIB, by id.
ACL_EXPECTED: dict[str, dict[str, Any]] = {
    "acl:2023.acl-long.1": {
        "title": "Über BERT: Café-style Quillwort Models – a study of naïve Spanish", "year": 2023,
        "authors": ["Jörg Müller", "Anna van der Berg", "John Smith, Jr."],
        "venue": _LONG_VOLUME,
        "url": "https://aclanthology.org/2023.acl-long.1/", "categories": ["cs.CL"]},
    "acl:Q19-1001": {
        "title": "Journal Paper on <b>Bold</b> Heliotrope Parsing", "year": 2019,
        "authors": ["Min Lee", "Soo Kim"],
        "venue": "Transactions of the Association for Computational Linguistics",
        "url": "https://www.aclweb.org/anthology/Q19-1001.pdf"},
    "acl:keyed-only-2018": {"title": "A Paper without an Address", "url": "",
                            "venue": "Proceedings of the Third Conference on Machine Translation"},
}


def write_acl(path: Path) -> Path:
    """The BibTeX export (gzip when ``path`` ends in .gz)."""
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(ACL_BIB)
    else:
        path.write_text(ACL_BIB, encoding="utf-8")
    return path
