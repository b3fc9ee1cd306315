"""The evaluation report inline in a notebook (``EvalReport._repr_html_``), rendered from a real
small batch in headless Chromium inside a stand-in for JupyterLab's output area: no table is
clipped (each scrolls in its own box), the page never scrolls sideways, charts are large enough
to read and never wider than the output; and the charts' text sizes, checked in matplotlib.

Screenshots go to ``test-artifacts/report/`` (ignored by git) for a person to look at.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from matplotlib.text import Text
from playwright.async_api import async_playwright

from cogym_lab.eval import EvalReport, report
from cogym_lab.eval.reporting import plots
from cogym_lab.eval.reporting.report_html import format_number
from cogym_lab.lm import LMConfig, make_lm
from cogym_lab.testing import ScriptedOpenAIServer
from tests.support.paths import REPO_ROOT
from tests.support.trajectories import (
    AUTONOMOUS_RUN,
    FOUR_ROUNDS,
    TODO_ARGS,
    add,
    say,
    write_session,
)

pytestmark = pytest.mark.usefixtures("no_ambient_lm")

REPO = REPO_ROOT
ARTIFACTS = REPO / "test-artifacts" / "report"
# Debian's Chromium, found on PATH as tests/widgets/test_widgets.py finds it; Playwright downloads nothing.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LONG_MODEL = "example-org/a-collaborative-model-with-a-rather-long-name-v2-instruct"

OTHER_ARGS = {**TODO_ARGS, "min_items": 5}
SHORT_COLLABORATION = [("agent", add("tent")), ("user", say("Please add a rain jacket.")),
                       ("agent", add("rain jacket")), ("user", "FINISH()")]

# A stand-in for the JupyterLab rules that decide how an HTML output is laid out (written for
# this test, after how JupyterLab 4 behaves): the output row clips what overflows it, the
# output is a flex column that scrolls, tables are centred with fixed layout and right-aligned
# cells, and images are at most as wide as the output.
OUTPUT_AREA_PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; font-family: sans-serif; font-size: 13px; }
.jp-OutputArea-child { display: flex; flex-direction: row; width: 100%; overflow: hidden; }
.jp-OutputPrompt { flex: 0 0 64px; }
.jp-OutputArea-output { width: 100%; overflow: auto; flex-grow: 1; flex-shrink: 1;
  display: flex; flex-direction: column; padding-right: 20px; min-width: 130px; }
.jp-OutputArea-output table { table-layout: fixed; margin-left: auto; margin-right: auto;
  border-collapse: collapse; }
.jp-OutputArea-output td, .jp-OutputArea-output th { text-align: right; padding: 0.5em;
  white-space: normal; max-width: none; }
.jp-OutputArea-output img { max-width: 100%; height: auto; }
</style></head><body><div class="jp-OutputArea-child"><div class="jp-OutputPrompt"></div>
<div class="jp-OutputArea-output jp-RenderedHTMLCommon">REPORT</div></div></body></html>"""

MEASURE = """() => {
  const output = document.querySelector(".jp-OutputArea-output");
  const outputBox = output.getBoundingClientRect();
  const scroller = (element) => {
    for (let node = element.parentElement; node && node !== output; node = node.parentElement) {
      if (getComputedStyle(node).overflowX === "auto") return node;
    }
    return null;
  };
  const tables = [...output.querySelectorAll("table")].map((table) => {
    const box = scroller(table);
    const rect = box && box.getBoundingClientRect();
    return { scrolled: !!box, right: rect ? rect.right : null,
             overflows: box ? box.scrollWidth > box.clientWidth : false,
             untitled: [...table.querySelectorAll("thead th")].filter((th) => !th.title).length,
             numbers: [...table.querySelectorAll("td")]
               .filter((td) => /^-?[0-9][0-9,]*(\\.[0-9]+)?$/.test(td.textContent.trim()))
               .map((td) => getComputedStyle(td).textAlign),
             texts: [...table.querySelectorAll("tbody th, tbody td")]
               .filter((cell) => /[a-z]{3}/.test(cell.textContent))
               .map((cell) => getComputedStyle(cell).whiteSpace) };
  });
  const images = [...output.querySelectorAll("img")].map((image) => ({
    alt: image.alt, complete: image.complete, natural: image.naturalWidth,
    width: image.getBoundingClientRect().width, right: image.getBoundingClientRect().right }));
  return { pageWidth: document.documentElement.scrollWidth, innerWidth,
           outputScroll: output.scrollWidth, outputWidth: output.clientWidth,
           outputRight: outputBox.right, tables, images };
}"""


@pytest.fixture
def batch(tmp_path: Path) -> EvalReport:
    """A real small batch, judged by a scripted LM so every table has values: a collaborative
    team with a long model name, and the autonomous baseline, on two instances each."""
    collab, auto = tmp_path / "collaborative", tmp_path / "autonomous"
    write_session(collab / "0", FOUR_ROUNDS, model=LONG_MODEL,
                  tokens={"agent": (5200, 1240), "user": (300, 40)},
                  ratings={"user": {"outcome_rating": 4, "satisfaction": 5}})
    write_session(collab / "1", SHORT_COLLABORATION, env_args=OTHER_ARGS, model=LONG_MODEL,
                  tokens={"agent": (200, 60), "user": (100, 20)})
    write_session(auto / "0", AUTONOMOUS_RUN, agent_type="autonomous")
    write_session(auto / "1", AUTONOMOUS_RUN, env_args=OTHER_ARGS, agent_type="autonomous")
    with ScriptedOpenAIServer(responder=_judge) as server:
        judge = make_lm(LMConfig(model="judge-lm", base_url=server.base_url, max_retries=0))
        return report([collab, auto], judge=judge)


def _judge(body: dict[str, Any]) -> str:
    """Every message takes initiative; A wins; every round is rated 4; a planning failure."""
    prompt = body["messages"][-1]["content"]
    if "Label each of the" in prompt:
        numbers = [int(n) for n in re.findall(r"^\[M(\d+)\]", prompt, re.M)]
        return json.dumps({"labels": [{"n": n, "initiative": True, "kind": "task"}
                                      for n in numbers]})
    if "<outcome_A>" in prompt:
        return json.dumps({"winner": "A"})
    if "## Round" in prompt:
        rounds = [int(n) for n in re.findall(r"^## Round (\d+)", prompt, re.M)]
        return json.dumps({"ratings": [{"round": k, "rating": 4} for k in rounds]})
    if "kinds of failure" in prompt:
        return json.dumps({"planning": {"present": True, "evidence": []}})
    return "no idea"


async def test_the_report_fits_a_narrow_notebook_output(batch: EvalReport) -> None:
    html = OUTPUT_AREA_PAGE.replace("REPORT", batch._repr_html_())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "report.html").write_text(html, encoding="utf-8")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                    args=CHROMIUM_ARGS)
        try:
            for width in (800, 1366):
                page = await chromium.new_page(viewport={"width": width, "height": 768})
                await page.set_content(html, wait_until="load")
                await page.screenshot(path=str(ARTIFACTS / f"report-{width}.png"),
                                      full_page=True)
                measured = await page.evaluate(MEASURE)
                await page.close()
                _check_layout(measured, width)
        finally:
            await chromium.close()


def _check_layout(measured: dict[str, Any], width: int) -> None:
    # Neither the page nor the output area scrolls sideways: nothing sticks out to be clipped.
    assert measured["pageWidth"] <= measured["innerWidth"] == width, measured
    assert measured["outputScroll"] <= measured["outputWidth"], measured
    tables = measured["tables"]
    assert len(tables) >= 6, tables  # paper table, summary, comparison, effort, acts, failures
    for table in tables:
        assert table["scrolled"], table  # inside a box with overflow-x: auto ...
        assert table["right"] <= measured["outputRight"] + 0.5, (table, measured)  # ... that fits
        assert table["untitled"] == 0, table  # every column header says what it means
        assert table["numbers"] and set(table["numbers"]) == {"right"}, table
        assert set(table["texts"]) <= {"normal"}, table  # long text wraps
    if width == 800:  # the effort table is wider than this: it scrolls in its box
        assert any(table["overflows"] for table in tables), tables
    images = measured["images"]
    assert [image["alt"] for image in images] == ["scaling curves", "metric bars",
                                                  "initiative shares"]
    for image in images:
        assert image["complete"] and image["natural"] >= 600, image
        assert image["width"] <= measured["outputWidth"], (image, measured)
        assert image["right"] <= measured["outputRight"] + 0.5, (image, measured)
    if width == 1366:  # room enough: shown at the design width, 800 CSS px
        assert all(round(image["width"]) == 800 for image in images), images


def test_chart_text_is_readable_and_legends_cover_no_data(batch: EvalReport) -> None:
    for name, figure in batch.figures().items():
        width_px = plots.display_width(figure)
        assert 600 <= width_px <= 900, name  # the inline display width, CSS px
        png = plots.png_bytes(figure)
        natural = struct.unpack(">I", png[16:20])[0]  # the PNG header's width
        assert natural == 2 * width_px, name  # 2x for high-density screens
        figure.canvas.draw()
        texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
        assert texts, name
        small = [(t.get_text(), t.get_fontsize()) for t in texts
                 if t.get_fontsize() < plots.MIN_FONT_SIZE]
        assert not small, (name, small)
        renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
        # Everything drawn lies within the image (text past its edges would be cut off).
        drawn = figure.get_tightbbox(renderer)  # inches
        assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01, (name, drawn)
        assert drawn.x1 <= figure.get_figwidth() + 0.01, (name, drawn)
        assert drawn.y1 <= figure.get_figheight() + 0.01, (name, drawn)
        lefts = {round(axis.get_position().x0, 2) for axis in figure.axes}
        assert len(lefts) == 1, (name, lefts)  # one chart per row, never side by side
        assert figure.legends, name
        for legend in figure.legends:
            box = legend.get_window_extent(renderer)
            for axis in figure.axes:
                assert not box.overlaps(axis.get_window_extent(renderer)), name


def test_numbers_get_the_digits_their_column_needs() -> None:
    assert format_number("performance", 0.72549) == "0.725"
    assert format_number("sessions", 12, integer=True) == "12"
    assert format_number("agent_tokens", 12345.6) == "12,346"
    assert format_number("p_value", 0.00001) == "< 0.001"
    assert format_number("p_value", 0.2951) == "0.295"
    assert format_number("rounds", 3.0) == "3.00"
    assert format_number("win_rate", float("nan")) == "–"
