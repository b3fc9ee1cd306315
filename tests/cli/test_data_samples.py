"""``cogym-lab data`` on a task whose data is missing but which carries a sample: it says that
sessions read the sample (and what it holds), that its numbers are not the papers', and the
command that fetches the full data; a chosen data directory gets the sample's rule instead.

The task is ``sampled_todo`` (tests/support/sampled_task.py); each test has a fresh home and
cache folder and no ``COGYM_DATA``."""

from __future__ import annotations

from click.testing import CliRunner

from cogym_lab.cli.data_command import data
from tests.support.sampled_task import TASK, full_data


def _report(*args: str):
    return CliRunner().invoke(data, [TASK, *args])


def test_missing_data_with_a_sample_says_sessions_use_it(sampled_task) -> None:
    result = _report()
    assert result.exit_code == 1, result.output  # the data itself is still missing
    text = " ".join(result.output.split())
    assert (f"{TASK}: its data is missing here, so sessions use the sample that comes with "
            "cogym_lab (1 of the 3 trips, the beach). Numbers from it are not comparable with "
            "the papers'") in text
    assert f"For the full data, run `cogym-lab data download {TASK}`." in text
    assert "--allow-sample" in text
    assert "How to obtain the missing items:" in text  # the item-by-item list still follows


def test_a_chosen_directory_gets_the_samples_rule(sampled_task) -> None:
    chosen = sampled_task / "chosen"
    chosen.mkdir()
    text = " ".join(_report("--data-dir", str(chosen)).output.split())
    assert "sessions read it only when no data directory is chosen" in text
    assert "so sessions use the sample" not in text


def test_with_the_full_data_the_sample_is_not_mentioned(sampled_task) -> None:
    result = _report("--data-dir", str(full_data(sampled_task / "data")))
    assert result.exit_code == 0, result.output
    assert "sample" not in result.output.replace(TASK, "")
