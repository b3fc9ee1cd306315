"""The two arms side by side: the fidelity table flags a simulator far more cooperative than
the people, and not one that behaves like them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cogym_lab.cli.main import main
from cogym_lab.studies.compare import compare_arms, write_comparison
from cogym_lab.studies.export_reader import ExportError
from tests.studies import export_fixture as fx

#: The easy-mode simulator: accepts every confirmation, never interrupts, rates everything 5,
#: and always prefers its own outcome.
EAGER = {"steer": dict.fromkeys(fx.PEOPLE, (5, 5, 5)),
         "confirmations": {p: (asked, asked, 0) for p, (asked, _, _) in fx.CONFIRMATIONS.items()},
         "pairwise": dict.fromkeys(fx.PEOPLE, "own")}
#: A simulator close to the people: one rating a point higher, one confirmation more accepted.
FAITHFUL = {"steer": fx.STEER | {"p4": (4, 3, 1)},
            "confirmations": fx.CONFIRMATIONS | {"p3": (2, 2, 0)}}


def _row(rows: list[dict], figure: str, condition: str) -> dict:
    return next(r for r in rows if r["figure"] == figure and r["condition"] == condition)


def test_a_too_cooperative_simulator_is_flagged(tmp_path: Path) -> None:
    human = fx.write(tmp_path / "human")
    eager = fx.write(tmp_path / "sim", arm="simulated", **EAGER)
    comparison = compare_arms(human, eager)
    acceptance = _row(comparison.fidelity, "confirmation_acceptance", "c1")
    people = [given / asked for asked, given, _ in fx.CONFIRMATIONS.values()]
    assert acceptance["human"] == pytest.approx(np.mean(people))
    assert acceptance["human_q3"] == pytest.approx(np.percentile(people, 75))
    assert acceptance["simulated"] == 1.0 and acceptance["too_cooperative"]
    interruptions = _row(comparison.fidelity, "interruptions", "c1")
    assert (interruptions["human"], interruptions["simulated"]) == (1.5, 0.0)
    assert interruptions["too_cooperative"]
    assert _row(comparison.fidelity, "rating:steerability", "c2")["too_cooperative"]
    win = _row(comparison.fidelity, "win_rate:pairwise", "c1")
    assert (win["human"], win["simulated"], win["too_cooperative"]) == (0.75, 1.0, True)
    # figures without a cooperative side are shown, never flagged
    assert not _row(comparison.fidelity, "messages_per_action", "c1")["too_cooperative"]
    assert _row(comparison.fidelity, "messages_per_action", "c1")["human"] == 2.0
    assert _row(comparison.fidelity, "ended:finished", "c1")["simulated"] == 1.0


def test_a_faithful_simulator_is_not_flagged(tmp_path: Path) -> None:
    human = fx.write(tmp_path / "human")
    faithful = fx.write(tmp_path / "sim", arm="simulated", **FAITHFUL)
    comparison = compare_arms(human, faithful)
    assert comparison.flagged == []
    steer = _row(comparison.fidelity, "rating:steerability", "c1")
    assert steer["difference"] == pytest.approx(1 / 6)  # within the 0.5 margin
    side = next(r for r in comparison.side_by_side if r["section"] == "likert"
                and r["item"] == "steerability" and r["condition"] == "c1")
    assert side["human"] == pytest.approx(26 / 6) and side["simulated"] == pytest.approx(27 / 6)


def test_the_compare_command_writes_its_files_and_warns(tmp_path: Path) -> None:
    human = fx.write(tmp_path / "human")
    eager = fx.write(tmp_path / "sim", arm="simulated", **EAGER)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["study", "compare", str(human), str(eager),
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "warning: too cooperative: confirmation_acceptance" in result.output
    for name in ("compare.md", "compare.csv", "fidelity.png"):
        assert (out / name).stat().st_size > 0, name
    text = (out / "compare.md").read_text()
    assert "**Warning: the simulator is far more cooperative" in text
    assert "interquartile range" in text  # the rule is said
    assert "TOO COOPERATIVE" in text and "## Measures side by side" in text
    assert write_comparison(compare_arms(human, eager), tmp_path / "quiet", plots=False)[-1] \
        .name == "compare.csv"


def test_arms_given_the_wrong_way_round_are_refused(tmp_path: Path) -> None:
    human = fx.write(tmp_path / "human")
    sim = fx.write(tmp_path / "sim", arm="simulated")
    with pytest.raises(ExportError, match="'simulated' arm's export, given as the human arm"):
        compare_arms(sim, human)
    other = fx.write(tmp_path / "other", arm="simulated", design="another")
    result = CliRunner().invoke(main, ["study", "compare", str(human), str(other)])
    assert result.exit_code == 1 and "different designs" in result.output
