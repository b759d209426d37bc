"""The charts page's pictures (docs/board.md#charts): bar charts written as inline SVG on the server, with no
chart library and no script. Each is an image to assistive technology (`role="img"`, a title and a
description) and its page shows the same figures as a table beside it.

The SVG scales to the width it is given (a viewBox, `width: 100%`), so a phone's width needs no scrolling.
Its colours are the page's: ink and bars at 7:1 or more against white.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

INK = "#1b1b1b"
MUTED = "#4a4a4a"
BAR = "#0a4fb8"
WIDTH, HEIGHT = 480, 250
LEFT, RIGHT, TOP, BOTTOM = 52, 8, 12, 52  # room for the value axis at the left, the weeks below


@dataclass(frozen=True)
class Series:
    """One chart's figures: a label per bar, and its value (None: nothing that week, no bar)."""

    key: str  # unique on the page: the SVG's ids
    title: str
    axis: str  # what the values are, in words: "hours", "tasks"
    labels: tuple[str, ...]  # one per bar, "2026-W49"; under the bar, "W49"
    values: tuple[float | None, ...]
    whole: bool = False  # counts: ticks on whole numbers


def top_of(largest: float, whole: bool) -> float:
    """The value axis's top: the largest value rounded up to 1, 2 or 5 times a power of ten, and at least one
    hour (or two tasks), so minutes show as the short bars they are rather than filling the chart."""
    floor = 2.0 if whole else 1.0
    if largest <= floor:
        return floor
    power = 10 ** math.floor(math.log10(largest))
    for step in (1, 2, 5, 10):
        if largest <= step * power:
            top = step * power
            return float(top)
    return float(10 * power)  # not reached


def _number(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def describe(series: Series) -> str:
    """The picture in words, for its <desc>."""
    shown = [(label, value) for label, value in zip(series.labels, series.values, strict=True) if value is not None]
    span = f"{series.labels[0]} to {series.labels[-1]}" if series.labels else "no weeks"
    if not shown:
        return f"{series.title}, {span}: nothing in these weeks."
    label, value = max(shown, key=lambda pair: pair[1])
    return (
        f"{series.title}, {span}: {len(shown)} of {len(series.labels)} weeks have a value; "
        f"the highest is {_number(value)} {series.axis} in {label}. The table below gives every week."
    )


def bar_chart(series: Series) -> Markup:
    """The SVG of one bar chart."""
    present = [value for value in series.values if value is not None]
    top = top_of(max(present, default=0.0), series.whole)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    base = TOP + plot_h
    slot = plot_w / max(1, len(series.values))
    parts = [
        f'<svg role="img" aria-labelledby="{series.key}-title {series.key}-desc" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="100%" preserveAspectRatio="xMidYMid meet" class="chart" font-family="system-ui, sans-serif" '
        f'font-size="13" fill="{INK}">',
        f'<title id="{series.key}-title">{escape(series.title)}</title>',
        f'<desc id="{series.key}-desc">{escape(describe(series))}</desc>',
    ]
    for tick in (0.0, top / 2, top):
        y = base - plot_h * tick / top
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#c4c4c4"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(tick)}</text>')
    parts.append(
        f'<text x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(series.axis)}</text>'
    )
    for index, (label, value) in enumerate(zip(series.labels, series.values, strict=True)):
        middle = LEFT + slot * (index + 0.5)
        # a median of zero is a thin bar, so "it took no time" differs from "nothing happened"; a count of
        # zero is nothing
        if value is not None and not (series.whole and value == 0):
            height = max(plot_h * value / top, 2.0)
            parts.append(
                f'<rect x="{middle - slot * 0.35:.1f}" y="{base - height:.1f}" width="{slot * 0.7:.1f}" '
                f'height="{height:.1f}" fill="{BAR}"><title>{escape(label)}: {_number(value)} '
                f"{escape(series.axis)}</title></rect>"
            )
        short = escape(label.split("-")[-1])
        parts.append(f'<text x="{middle:.1f}" y="{base + 16}" text-anchor="middle" font-size="11">{short}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="{MUTED}"/>')
    parts.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 10}" text-anchor="middle">ISO week (UTC)</text></svg>'
    )
    return Markup("".join(parts))


__all__ = ["Series", "bar_chart", "describe", "top_of"]
