"""Build the Tabular Analysis sample that ships inside the package, from the full data.

    python scripts/samples/build_tabular_analysis_sample.py --data-dir DIR [--out FOLDER]

``DIR`` is a data directory holding ``tabular_analysis/`` (as ``cogym-lab data download
tabular_analysis`` fetches it). ``FOLDER`` defaults to the package's sample folder
(``cogym_lab/envs/tabular_analysis/sample``), which is replaced whole. The sample holds the
domains ``data_files.SAMPLE_DOMAINS`` names, copied byte for byte, the DiscoveryBench licence, a
``SAMPLE.md`` (what was taken, the attribution, how to get the full data) and the domains' gold
hypotheses sealed (``cogym_lab/envs/tabular_analysis/sealed.py``), never as a plain answer key.
The output depends on the input files alone: the same data gives the same bytes.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import sys
from pathlib import Path

from cogym_lab.datasets import is_sample
from cogym_lab.datasets.samples import SAMPLE_MARKER
from cogym_lab.envs.tabular_analysis.data_files import DATA_FILES, SAMPLE, SAMPLE_DOMAINS
from cogym_lab.envs.tabular_analysis.instances import ANSWER_KEY, TEST_SUBDIR, is_selected
from cogym_lab.envs.tabular_analysis.sealed import SEALED_NAME, seal

LICENCE = Path("discoverybench") / "license.md"
KEY_COLUMNS = ("dataset", "metadataid", "query_id", "gold_hypo")


def sealed_answer_key(test_dir: Path, domains: tuple[str, ...]) -> bytes:
    """The rows of the full answer key for ``domains``, in the key's order, as CSV, sealed."""
    with (test_dir / ANSWER_KEY).open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["dataset"].strip() in domains]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(KEY_COLUMNS)
    writer.writerows([row[column] for column in KEY_COLUMNS] for row in rows)
    return seal(text.getvalue())


def query_counts(test_dir: Path, domains: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """Each domain's selected queries under cogym_lab's rule and under cogym's (multi-table)."""
    counts: dict[str, tuple[int, int]] = {}
    for domain in domains:
        lab = cogym = 0
        for path in sorted((test_dir / domain).glob("metadata_*.json")):
            metadata = json.loads(path.read_text(encoding="utf-8"))
            queries = sum(len(group) if isinstance(group, list) else 1
                          for group in metadata.get("queries") or [])
            lab += queries if is_selected(domain, metadata) else 0
            cogym += queries if is_selected(domain, metadata, multi_table_only=True) else 0
        counts[domain] = (lab, cogym)
    return counts


def sample_notes(counts: dict[str, tuple[int, int]]) -> str:
    """``SAMPLE.md``: what the sample holds, where it comes from, and how to get the rest."""
    data, key = DATA_FILES
    lines = [
        "# Tabular Analysis sample (DiscoveryBench-Real)",
        "",
        "A small part of the DiscoveryBench-Real test split, so the Tabular Analysis task runs",
        "before any data is downloaded. cogym_lab reads it only when no data directory was",
        "chosen and the default one lacks the task's files. Scores computed on it are not",
        "comparable with the papers'.",
        "",
        "## What was taken",
        "",
        "Two domains (folders of `discoverybench/real/test/`), every file of each copied",
        "unchanged: the tables and the `metadata_<N>.json` files.",
        "",
        "| domain | queries (cogym_lab rule) | queries (cogym, multi-table) |",
        "|---|---|---|",
    ]
    lines += [f"| `{domain}` | {lab} | {cogym} |" for domain, (lab, cogym) in counts.items()]
    lines += [
        "",
        f"Their gold hypotheses (the rows of `{ANSWER_KEY}` for these domains) are stored",
        "sealed, not as that file: an agent working in a notebook kernel can read the installed",
        "package, so no file here holds a gold hypothesis as plain text. cogym_lab unseals them",
        "when it loads the instances, in the process that grades.",
        "",
        "## Source and licence",
        "",
        "DiscoveryBench: Towards Data-Driven Discovery with Large Language Models (Majumder et",
        f"al., 2024; Allen Institute for AI), {data.homepage}.",
        f"Tables and metadata: {data.url} (folder `{data.archive_member}`).",
        f"Answer key: {key.url}.",
        f"Licence: {data.license}, the Open Data Commons Attribution License; its text is in",
        f"`{LICENCE.as_posix()}`.",
        "",
        "## The full data",
        "",
        "    cogym-lab data download tabular_analysis",
        "",
        "fetches the whole split (110 queries under the cogym protocol, 117 under cogym_lab);",
        "`cogym-lab data tabular_analysis` says where it goes and what each file is.",
        "",
    ]
    return "\n".join(lines)


def build(data_dir: Path, out: Path) -> list[Path]:
    """Write the sample into ``out`` (replaced whole); the files written, relative to it."""
    source = data_dir / SAMPLE.task
    test_dir = source / TEST_SUBDIR
    if not (test_dir / ANSWER_KEY).is_file():
        raise SystemExit(f"No DiscoveryBench-Real test split in {source}: expected "
                         f"{test_dir / ANSWER_KEY} (`cogym-lab data download tabular_analysis`).")
    if out.exists() and any(out.iterdir()) and not is_sample(out):
        raise SystemExit(f"{out} holds other files and no {SAMPLE_MARKER}: not replacing it.")
    shutil.rmtree(out, ignore_errors=True)
    written: dict[Path, bytes] = {}
    for domain in SAMPLE_DOMAINS:
        for path in sorted((test_dir / domain).iterdir()):
            if path.is_file():
                written[TEST_SUBDIR / domain / path.name] = path.read_bytes()
    written[LICENCE] = (source / LICENCE).read_bytes()
    written[TEST_SUBDIR / SEALED_NAME] = sealed_answer_key(test_dir, SAMPLE_DOMAINS)
    written[Path(SAMPLE_MARKER)] = sample_notes(
        query_counts(test_dir, SAMPLE_DOMAINS)).encode("utf-8")
    for relative, content in written.items():
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return sorted(written)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="a data directory holding tabular_analysis/")
    parser.add_argument("--out", type=Path, default=SAMPLE.folder,
                        help="where to write the sample (default: the package's sample folder)")
    args = parser.parse_args(argv)
    files = build(args.data_dir.expanduser().resolve(), args.out)
    size = sum((args.out / f).stat().st_size for f in files)
    print(f"Wrote {len(files)} files ({size / 1024:.0f} KB) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
