"""Figures a paper can use as they are: rendered to PNG, every data point, label and legend entry lies inside
the saved image, no legend covers plotted data or other text, and labels are mathtext (no literal ``W_t``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.legend import Legend
from matplotlib.text import Text
from PIL import Image
from test_compare import synthetic_run

from rates.numeric.trajectory import Trajectory, save
from rates.output.plots import FIGURE_DPI, fit_figure, plot_fit
from rates.studies import figures as sf
from rates.studies.fitting import load_fit_inputs
from rates.studies.verdict_table import bound_label

PIXEL = 1.0  # rounding of extents to whole pixels


def _inside(box, outer, slack: float = PIXEL) -> bool:
    return (box.x0 >= outer.x0 - slack and box.y0 >= outer.y0 - slack and box.x1 <= outer.x1 + slack
            and box.y1 <= outer.y1 + slack)


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 - PIXEL and b.x0 < a.x1 - PIXEL and a.y0 < b.y1 - PIXEL and b.y0 < a.y1 - PIXEL


def _data_points(ax) -> np.ndarray:
    """Display coordinates of every plotted data point of ``ax`` (lines in data coordinates, scatter points)."""
    points = []
    for line in ax.get_lines():
        if line.get_transform() != ax.transData:  # axvline/axhline span the axes in axes coordinates
            continue
        xy = np.asarray(line.get_xydata(), dtype=float)
        points.append(ax.transData.transform(xy[np.isfinite(xy).all(axis=1)]))
    for collection in ax.collections:
        if isinstance(collection, PathCollection) and len(collection.get_offsets()):
            xy = np.asarray(collection.get_offsets(), dtype=float)
            points.append(ax.transData.transform(xy[np.isfinite(xy).all(axis=1)]))
    return np.concatenate(points) if points else np.empty((0, 2))


def _texts(fig) -> list[Text]:
    """Titles, axis labels, legend entries: every text but tick labels (a tick beyond the view limits keeps a
    stale label that is never drawn; the axes' tight boxes below cover the drawn ones)."""
    ticks = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in axis.get_major_ticks() + axis.get_minor_ticks() for label in (tick.label1, tick.label2)}
    return [t for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in ticks]


def assert_legible(fig, png) -> int:
    """The checks of this module on a figure ``fig`` saved as ``png``; returns the number of data points seen."""
    fig.canvas.draw()  # extents at the figure's own dpi, the layout that was saved
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    width_in, height_in = fig.get_size_inches()
    with Image.open(png) as image:
        saved_dpi = image.size[0] / width_in
        assert image.size[1] == pytest.approx(height_in * saved_dpi, abs=1.5)  # the image is the figure's box
        pixels = np.asarray(image.convert("L"), dtype=float)
    scale = saved_dpi / fig.dpi

    legends = [a for a in fig.findobj(Legend)]
    assert legends, "the figure has no legend to check"
    legend_boxes = [legend.get_window_extent(renderer) for legend in legends]
    legend_texts = {id(t) for legend in legends for t in legend.get_texts()} | \
                   {id(legend.get_title()) for legend in legends}
    for text in _texts(fig):
        box = text.get_window_extent(renderer)
        assert _inside(box, page), f"text {text.get_text()!r} at {box} runs past the image {page}"
        sf.check_label(text.get_text())  # sub- and superscripts only inside $...$
        if id(text) not in legend_texts:
            for legend_box in legend_boxes:
                assert not _overlap(box, legend_box), f"the legend covers {text.get_text()!r}"
    for box in legend_boxes:
        assert _inside(box, page), f"legend {box} runs past the image {page}"
        # something is drawn where the legend is: it was saved, not cut off
        x0, x1 = int(box.x0 * scale), int(box.x1 * scale)
        rows = pixels.shape[0]
        y0, y1 = rows - int(box.y1 * scale), rows - int(box.y0 * scale)
        assert pixels[y0:y1, x0:x1].min() < 128, "the legend's area of the PNG is blank"
    seen = 0
    for ax in fig.axes:
        assert _inside(ax.get_tightbbox(renderer), page), "an axes' tick labels run past the image"
        for legend_box in legend_boxes:
            assert not _overlap(ax.bbox, legend_box), "a legend lies over an axes' plotting area"
            for axis in (ax.xaxis, ax.yaxis):
                assert not _overlap(axis.get_tightbbox(renderer), legend_box), "a legend covers tick labels"
        points = _data_points(ax)
        seen += len(points)
        inside = ((points[:, 0] >= ax.bbox.x0 - PIXEL) & (points[:, 0] <= ax.bbox.x1 + PIXEL)
                  & (points[:, 1] >= ax.bbox.y0 - PIXEL) & (points[:, 1] <= ax.bbox.y1 + PIXEL))
        assert inside.all(), f"{(~inside).sum()} data points fall outside the axes (clipped from the image)"
        for legend_box in legend_boxes:
            covered = ((points[:, 0] > legend_box.x0) & (points[:, 0] < legend_box.x1)
                       & (points[:, 1] > legend_box.y0) & (points[:, 1] < legend_box.y1))
            assert not covered.any(), f"the legend hides {covered.sum()} data points"
    return seen


@pytest.fixture
def five_seed_record(tmp_path):
    """SignGD a = 3/4 on five data draws, gap ~ t^(-1/4): a real prediction (rate, envelope, thresholds)."""
    runs = []
    for data_seed in range(5):
        run = synthetic_run(lambda t, s=data_seed: (1 + s / 3) * t ** -0.25, seed=0, noise=0.02)
        run.config = dataclasses.replace(run.config, data_seed=data_seed)
        runs.append(run)
    [record] = load_fit_inputs([save(Trajectory(runs), tmp_path / "signgd.json")])
    assert record.prediction is not None and record.verdict.fit is not None
    return record


def test_fit_figure_keeps_data_and_legend_apart_inside_the_image(five_seed_record, tmp_path):
    rec = five_seed_record
    png = plot_fit(rec.runs, rec.verdict, rec.prediction, tmp_path / "fit.png", rec.title, bound_label(rec))
    assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    fig = fit_figure(rec.runs, rec.verdict, rec.prediction, rec.title, bound_label(rec))
    fig.savefig(tmp_path / "again.png", dpi=FIGURE_DPI)  # the drawing plot_fit saved, to measure its artists
    with Image.open(png) as saved, Image.open(tmp_path / "again.png") as again:
        assert saved.size == again.size
    seen = assert_legible(fig, png)
    checkpoints = sum(int(((np.asarray(r.t) >= 1) & (np.asarray(r.gap) > 0)).sum()) for r in rec.runs)
    assert seen >= checkpoints  # every seed's every checkpoint was checked (plus the fitted line and bound)
    [legend] = fig.findobj(Legend)
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) >= 8  # five seeds, the window, the fit, the bound's shape
    assert sum("data seed" in label for label in labels) == 5  # the five draws are told apart
    assert any(r"$t^{-1/4}$" in label for label in labels)  # the rate as mathtext, not t^(-1/4)
    assert fig.axes[0].get_ylabel() == r"margin gap $\gamma - \gamma(W_t)$"


def test_the_old_layout_fails_the_check(five_seed_record, tmp_path):
    """The check has teeth: a legend inside the axes over the data, as figures used to be drawn, is caught."""
    rec = five_seed_record
    fig = fit_figure(rec.runs, rec.verdict, rec.prediction, rec.title, bound_label(rec))
    fig.axes[0].legend(fontsize=7, loc="lower left")
    fig.savefig(tmp_path / "old.png", dpi=100)
    with pytest.raises(AssertionError, match="legend"):
        assert_legible(fig, tmp_path / "old.png")


def test_literal_subscripts_are_refused():
    with pytest.raises(ValueError, match="mathtext"):
        sf.check_label("margin gap γ - γ(W_t)")
    assert sf.check_label(sf.GAP_LABEL) == sf.GAP_LABEL


def test_study_figure_panels_keep_legends_below_their_data(tmp_path):
    """A row of panels as the studies draw them (long legend entries, a legend in two panels, log and linear
    axes): every panel's data and every legend stay inside the saved PNG and apart."""
    fig, axes = sf.new_figure(2, 3)
    t = np.logspace(0, 5, 40)
    rng = np.random.default_rng(0)
    for col in range(3):
        for j, a in enumerate(("1/4", "1/2", "3/4", "1")):
            gaps = [(1 + j) * t ** -(0.2 + 0.2 * j) * np.exp(0.05 * rng.standard_normal(t.size)) for _ in range(3)]
            sf.curve(axes[0, col], t, gaps, f"a={a}, eps=1e-8: slope {-(0.2 + 0.2 * j):+.2f}, inconclusive (outside "
                                             "Thm 6.3)")
            sf.curve(axes[1, col], t, [1 - 1 / np.log(t + 2)], rf"cos to $W^*_{{\max}}$, a={a}", log_y=False)
        sf.finish(axes[0, col], sf.T_LABEL, sf.GAP_LABEL, f"panel {col}: {sf.RELATIVE_GAP}", legend=col != 1)
        sf.finish(axes[1, col], sf.T_LABEL, r"$\cos(W_t, W^*_{\max})$", "direction", legend=col == 0)
    fig.suptitle("a suptitle as long as the studies write them, naming the paper and figure", fontsize=10)
    [png, pdf] = sf.save(fig, tmp_path, "panels", dpi=120)
    assert png.exists() and pdf.exists()
    assert assert_legible(fig, png) == 2 * 3 * 4 * t.size
    assert len(fig.findobj(Legend)) == 3
