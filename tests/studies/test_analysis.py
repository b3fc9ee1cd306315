"""One arm's analysis against values computed by hand from the fixture export."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from scipy import stats

from cogym_lab.cli.main import main
from cogym_lab.studies.analysis import AnalysisOptions, analyse, write_analysis
from cogym_lab.studies.export_reader import ExportError, read_export
from tests.studies import export_fixture as fx


@pytest.fixture
def export(tmp_path: Path) -> Path:
    return fx.write(tmp_path / "human")


def _one(rows: list[dict], **match: object) -> dict:
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def test_borda_points_from_each_participants_last_ranking(export: Path) -> None:
    rows = analyse(export).section("borda")
    # first of three gets 3, then 2, then 1 (DPT-Agent's count); hand-summed over PREFERENCE
    assert [(r["place"], r["label"], r["value"]) for r in rows] == [
        (1, "Agent A", 14), (2, "Agent B", 12), (3, "Agent C", 10)]
    assert _one(rows, label="Agent A")["mean"] == pytest.approx(10 / 6)
    assert _one(rows, label="Agent A")["condition"] == "c1"
    assert all(r["n"] == 6 for r in rows)  # the partial rankings were replaced
    from_zero = analyse(export, AnalysisOptions(borda_lowest=0)).section("borda")
    assert [r["value"] for r in from_zero] == [8, 6, 4]


def test_a_borda_tie_is_shown_and_shares_its_place(tmp_path: Path) -> None:
    tables = fx.build()
    tables["answers"] = [a for a in tables["answers"] if a.kind != "ranking"]
    for person, order in (("p1", "ABC"), ("p2", "BAC")):
        tables["answers"] += [fx._answer(person, "final", "", -1, "cooperation", "ranking",
                                         rank, f"Agent {letter}")
                              for rank, letter in enumerate(order, start=1)]
    fx.write_export(tmp_path, design="toy", arm="human", **tables)
    rows = analyse(tmp_path).section("borda")
    assert [(r["place"], r["value"]) for r in rows] == [(1, 5), (1, 5), (3, 2)]
    assert "place shared" in rows[0]["note"] and "place shared" in rows[1]["note"]
    assert rows[2]["note"] == ""


def test_win_rate_counts_a_tie_half_with_wilsons_interval(export: Path) -> None:
    rate = _one(analyse(export).section("win_rate"), item="pairwise")
    # 4 own, 1 tie, 1 autonomous: (4 + 0.5) / 6
    n, share, z = 6, 4.5 / 6, 1.959963984540054
    centre = (share + z ** 2 / (2 * n)) / (1 + z ** 2 / n)
    half = z * math.sqrt(share * (1 - share) / n + z ** 2 / (4 * n ** 2)) / (1 + z ** 2 / n)
    assert rate["value"] == pytest.approx(0.75)
    assert (rate["low"], rate["high"]) == pytest.approx((centre - half, centre + half))
    assert rate["label"] == "Agent A" and rate["n"] == 6
    assert rate["note"].startswith("4 own, 1 tie, 1 autonomous")


def test_likert_composite_task_load_and_sessions(export: Path) -> None:
    analysis = analyse(export)
    steer_b = _one(analysis.section("likert"), item="steerability", condition="c2")
    assert (steer_b["n"], steer_b["median"], steer_b["mean"]) == (6, 3.0, pytest.approx(17 / 6))
    utility = _one(analysis.section("composite"), item="utility", condition="c1")
    assert utility["mean"] == pytest.approx((4 + 5 + 3) / 3)
    raw = _one(analysis.section("task_load"), item="task_load", condition="")
    assert raw["label"] == "all conditions" and raw["n"] == 6
    assert raw["mean"] == pytest.approx(sum(sum(v) / 6 for v in fx.TLX.values()) / 6)
    sessions = analysis.section("sessions")
    assert _one(sessions, measure="delivered_share", condition="c1")["value"] == \
        pytest.approx(5 / 6)
    assert _one(sessions, measure="sessions", condition="c1")["value"] == 6  # no practice
    assert _one(sessions, measure="performance", condition="c2")["mean"] == \
        pytest.approx(0.6 + 0.01 * sum(range(6)) / 6)
    assert _one(sessions, measure="duration_seconds", condition="c3")["median"] == 125.0


def test_wilcoxon_with_bonferroni_within_subjects(export: Path) -> None:
    analysis = analyse(export, AnalysisOptions(compared=("steerability", "utility")))
    assert analysis.subjects == "within" and analysis.tests == ["wilcoxon"]
    tests = [r for r in analysis.section("tests") if r["family"] == "ratings"]
    assert {r["item"] for r in tests} == {"steerability", "utility"}
    b_vs_c = _one(tests, item="steerability", condition="c2", condition_b="c3")
    # differences 1, 0, -2, 2, 0, 1: zeros dropped; |d| ranks 1.5, 3.5, 3.5, 1.5;
    # positive ranks 1.5 + 3.5 + 1.5 = 6.5, negative 3.5: W = 3.5
    assert b_vs_c["statistic"] == 3.5
    b = [v[1] for v in fx.STEER.values()]
    c = [v[2] for v in fx.STEER.values()]
    expected = stats.wilcoxon(b, c, zero_method="wilcox")
    assert b_vs_c["p_value"] == pytest.approx(expected.pvalue)
    assert b_vs_c["test"] == "Wilcoxon signed-rank" and b_vs_c["n"] == 6
    a_vs_b = _one(tests, item="steerability", condition="c1", condition_b="c2")
    assert a_vs_b["statistic"] == 0.0  # every participant steered A at least as well as B
    # utility: A 4, B 3, C 3 for everyone: tested against A (family of 2), not for B vs C
    # (no pair differs: family of 1, steerability alone)
    for pair in (("c1", "c2"), ("c1", "c3")):
        family = [r for r in tests if (r["condition"], r["condition_b"]) == pair]
        assert all(not math.isnan(r["p_value"]) for r in family)
        for r in family:
            assert r["p_bonferroni"] == pytest.approx(min(1.0, 2 * r["p_value"]))
    untested = _one(tests, item="utility", condition="c2", condition_b="c3")
    assert math.isnan(untested["p_value"]) and untested["note"].startswith("no test")
    assert b_vs_c["p_bonferroni"] == b_vs_c["p_value"]


def test_paired_t_when_the_design_asks(export: Path) -> None:
    analysis = analyse(export, AnalysisOptions(measures=("paired_t",),
                                               compared=("steerability",)))
    row = _one(analysis.section("tests"), item="steerability", condition="c1",
               condition_b="c3", family="ratings")
    a = [v[0] for v in fx.STEER.values()]
    c = [v[2] for v in fx.STEER.values()]
    assert row["test"] == "paired t-test"
    assert row["statistic"] == pytest.approx(stats.ttest_rel(a, c).statistic)


def test_mann_whitney_between_subjects(tmp_path: Path) -> None:
    analysis = analyse(fx.write_between(tmp_path))
    assert analysis.subjects == "between"
    row = _one(analysis.section("tests"), item="satisfaction", family="ratings")
    # pairs where c1's rating beats c2's: 5 beats 4, each 4 beats 4, 3 beats 3 and ties 1
    assert row["statistic"] == 15.5
    assert row["p_value"] == pytest.approx(
        stats.mannwhitneyu([5, 4, 4, 3], [2, 3, 1, 2], alternative="two-sided").pvalue)
    assert row["test"] == "Mann-Whitney U" and row["n"] == 8
    assert row["p_bonferroni"] == row["p_value"]  # one measure tested


def test_files_written_and_the_cli(export: Path) -> None:
    result = CliRunner().invoke(main, ["study", "analyse", str(export)])
    assert result.exit_code == 0, result.output
    for name in ("analysis.md", "analysis.csv", "likert.png", "borda.png", "win_rate.png"):
        assert (export / name).stat().st_size > 0, name
    text = (export / "analysis.md").read_text()
    assert "## Rankings (Borda count)" in text and "| 1 | Agent A | c1 | 14 |" in text
    with (export / "analysis.csv").open() as table:
        rows = list(csv.DictReader(table))
    assert {"sessions", "borda", "win_rate", "likert", "composite", "task_load",
            "tests"} <= {r["section"] for r in rows}
    assert write_analysis(analyse(export), export / "again", plots=False) == [
        export / "again" / "analysis.md", export / "again" / "analysis.csv"]


def test_malformed_exports_give_clear_errors(tmp_path: Path) -> None:
    folder = fx.write(tmp_path / "gone")
    (folder / "sessions.csv").unlink()
    with pytest.raises(ExportError, match=r"sessions\.csv is missing"):
        read_export(folder)

    tables = fx.build()
    tables["answers"][0] = tables["answers"][0].model_copy(update={"value": "very"})
    fx.write_export(tmp_path / "word", design="toy", arm="human", **tables)
    with pytest.raises(ExportError, match=r"participant p1, item 'steerability'.*'very'"):
        analyse(tmp_path / "word")

    tables = fx.build()
    tables["answers"] = [a.model_copy(update={"value": "1"}) if a.kind == "ranking" else a
                         for a in tables["answers"]]
    fx.write_export(tmp_path / "ranks", design="toy", arm="human", **tables)
    with pytest.raises(ExportError, match=r"ranking 'preference': positions \[1, 1"):
        analyse(tmp_path / "ranks")

    broken = fx.write(tmp_path / "row")
    lines = (broken / "sessions.csv").read_text().splitlines()
    lines[3] = lines[3].replace(",todo,", ",todo,x", 1).replace(",False,", ",maybe,", 1)
    (broken / "sessions.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ExportError, match=r"sessions\.csv, line 4: practice"):
        read_export(broken)

    result = CliRunner().invoke(main, ["study", "analyse", str(folder)])
    assert result.exit_code == 1
    assert "sessions.csv is missing" in result.output


DESIGN = """
name = "toy"
title = "Toy"
consent = "I agree."
measures = ["borda", "paired_t"]

[assignment]
subjects = "within"

[[conditions]]
name = "c1"
label = "Agent A"
session = { task = "todo", team = "example" }

[[conditions]]
name = "c2"
label = "Agent B"
session = { task = "todo", team = "example" }

[[conditions]]
name = "c3"
label = "Agent C"
session = { task = "todo", team = "example" }

[[questionnaires]]
name = "after"
after = "session"
items = [{ kind = "likert", name = "steerability", text = "I could steer it.", points = 4 }]
"""


def test_a_design_file_sets_the_tests_and_the_scales(export: Path, tmp_path: Path) -> None:
    design = tmp_path / "toy.toml"
    design.write_text(DESIGN)
    result = CliRunner().invoke(main, ["study", "analyse", str(export), "--design", str(design),
                                       "--no-plots"])
    # steerability answers of 5 lie outside the design's 4-point scale
    assert result.exit_code == 1
    assert "'5' is not a likert value in [1, 4]" in result.output
    design.write_text(DESIGN.replace("points = 4", "points = 5"))
    result = CliRunner().invoke(main, ["study", "analyse", str(export), "--design", str(design),
                                       "--no-plots"])
    assert result.exit_code == 0, result.output
    assert "tests: paired_t" in (export / "analysis.md").read_text()
    design.write_text("name = 'toy'\n")
    result = CliRunner().invoke(main, ["study", "analyse", str(export), "--design", str(design)])
    assert result.exit_code == 1 and "missing (a required field)" in result.output
