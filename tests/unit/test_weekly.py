"""The charts' weekly figures (domain/weekly.py), pure: medians, empty weeks, and which delivery counts when a
ticket is sent back and delivered again. The SVG they become: top_of and describe in web/charts.py."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from baton.domain.weekly import Week, WorkTime, first_monday, weekly
from baton.web.charts import Series, bar_chart, describe, top_of

# Wednesday of ISO week 2026-W49
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
MONDAY = datetime(2026, 11, 30, tzinfo=UTC)


def at(days: float, hours: float = 0) -> datetime:
    return MONDAY + timedelta(days=days, hours=hours)


def test_twelve_weeks_oldest_first_with_empty_weeks_kept() -> None:
    weeks = weekly([], NOW)
    assert len(weeks) == 12 and weeks[-1].label == "2026-W49" and weeks[0].label == "2026-W38"
    assert weeks[0].monday == date(2026, 9, 14) and first_monday(NOW) == datetime(2026, 9, 14, tzinfo=UTC)
    assert all(w.median_to_delivery is None and w.median_to_acceptance is None and w.accepted == 0 for w in weeks)


def test_medians_per_week_of_the_delivery_and_of_the_acceptance() -> None:
    times = [
        # ticket 1: claimed Monday, delivered 2 hours later, accepted 6 hours after that
        WorkTime(1, "claimed", 1, at(0)), WorkTime(1, "delivered", 1, at(0, 2)), WorkTime(1, "accepted", 1, at(0, 8)),
        # ticket 2: assigned the week before, delivered this week after 30 hours
        WorkTime(2, "assigned", 1, at(-1)), WorkTime(2, "delivered", 1, at(0, 6)),
        # ticket 3: 4 hours; no review yet
        WorkTime(3, "claimed", 1, at(1)), WorkTime(3, "delivered", 1, at(1, 4)),
        # ticket 4: last week entirely
        WorkTime(4, "claimed", 1, at(-6)), WorkTime(4, "delivered", 1, at(-6, 1)), WorkTime(4, "accepted", 1, at(-5)),
    ]  # fmt: skip
    weeks = weekly(times, NOW)
    this, last = weeks[-1], weeks[-2]
    assert sorted(this.to_delivery) == [2.0, 4.0, 30.0] and this.median_to_delivery == 4.0
    assert this.to_acceptance == (6.0,) and this.accepted == 1
    assert last.to_delivery == (1.0,) and last.to_acceptance == (23.0,) and last.accepted == 1
    assert all(w == Week(w.monday) for w in weeks[:-2])


def test_a_ticket_sent_back_counts_the_first_delivery_of_the_accepted_attempt() -> None:
    times = [
        WorkTime(1, "claimed", 1, at(0)),
        WorkTime(1, "delivered", 1, at(0, 3)),
        WorkTime(1, "sent_back", 2, at(0, 5)),  # opens attempt 2
        WorkTime(1, "delivered", 2, at(0, 9)),  # attempt 2's first delivery
        WorkTime(1, "delivered", 2, at(0, 10)),  # delivered again before the review: not counted
        WorkTime(1, "accepted", 2, at(0, 12)),
    ]
    this = weekly(reversed(times), NOW)[-1]  # the order they come in does not matter
    # each attempt that delivered: 3 hours (attempt 1), 4 hours (attempt 2, from the send-back)
    assert sorted(this.to_delivery) == [3.0, 4.0] and this.median_to_delivery == 3.5
    assert this.to_acceptance == (3.0,) and this.accepted == 1  # from 9h, not from 3h nor 10h


def test_times_outside_the_twelve_weeks_are_left_out() -> None:
    times = [
        WorkTime(1, "claimed", 1, at(-100)),
        WorkTime(1, "delivered", 1, at(-99)),
        WorkTime(1, "accepted", 1, at(7)),
    ]  # fmt: skip: next week is not shown yet
    assert all(w.to_delivery == () and w.accepted == 0 for w in weekly(times, NOW))


def test_the_svg_has_a_title_a_description_and_a_bar_per_value() -> None:
    assert [top_of(v, False) for v in (0, 0.001, 3, 7.5, 30)] == [1.0, 1.0, 5.0, 10.0, 50.0]
    assert [top_of(v, True) for v in (0, 1, 3, 11)] == [2.0, 2.0, 5.0, 20.0]
    series = Series("x", "Tasks accepted per week", "tasks", ("2026-W48", "2026-W49"), (None, 3.0), whole=True)
    svg = str(bar_chart(series))
    assert svg.startswith('<svg role="img" aria-labelledby="x-title x-desc" viewBox="0 0 480 250" width="100%"')
    assert '<title id="x-title">Tasks accepted per week</title>' in svg and svg.count("<rect") == 1
    assert ">W48</text>" in svg and ">W49</text>" in svg and ">ISO week (UTC)</text>" in svg
    assert describe(series) == ("Tasks accepted per week, 2026-W48 to 2026-W49: 1 of 2 weeks have a value; "
                                "the highest is 3 tasks in 2026-W49. The table below gives every week.")  # fmt: skip
    hostile = Series("y", "<script>", "h", ("<b>",), (1.0,))
    assert "<script>" not in str(bar_chart(hostile)) and "<b>" not in str(bar_chart(hostile))
