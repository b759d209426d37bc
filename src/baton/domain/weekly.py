"""The work's pace per ISO week, for the board's charts (docs/board.md#charts): how long from an attempt's
start to its first delivery, from that delivery to acceptance, and how many tasks were accepted.

Which times count:
- an attempt starts at its claim, its assignment, or the send-back that opened it;
- an attempt's delivery is its *first* one (a runner may deliver again before a review);
- claim to delivery counts every attempt that delivered, in the week of its first delivery, so an attempt
  sent back still shows how long it took;
- delivery to acceptance counts each acceptance, from the first delivery of the accepted attempt, in the
  week of the acceptance; that week also counts the task as accepted.
Weeks are ISO weeks in UTC, Monday to Sunday. Pure: the times come in, the figures go out.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

STARTS = frozenset({"claimed", "assigned", "sent_back"})
FLOW_EVENTS = STARTS | {"delivered", "accepted"}
WEEKS = 12


@dataclass(frozen=True)
class WorkTime:
    """One work event's time: which ticket (any key unique to it), what happened, in which attempt."""

    ticket: int
    type: str
    attempt: int
    at: datetime  # aware


@dataclass(frozen=True)
class Week:
    monday: date
    to_delivery: tuple[float, ...] = field(default=())  # hours, one per attempt delivered this week
    to_acceptance: tuple[float, ...] = field(default=())  # hours, one per acceptance this week
    accepted: int = 0  # tasks accepted this week

    @property
    def label(self) -> str:
        """The ISO week, as `2026-W49`."""
        year, week, _ = self.monday.isocalendar()
        return f"{year}-W{week:02d}"

    @property
    def median_to_delivery(self) -> float | None:
        return statistics.median(self.to_delivery) if self.to_delivery else None

    @property
    def median_to_acceptance(self) -> float | None:
        return statistics.median(self.to_acceptance) if self.to_acceptance else None


def monday(moment: datetime) -> date:
    day = moment.astimezone(UTC).date()
    return day - timedelta(days=day.weekday())


def first_monday(now: datetime, count: int = WEEKS) -> datetime:
    """The start of the oldest of the `count` weeks that end with the one holding `now`, at 00:00 UTC."""
    start = monday(now) - timedelta(weeks=count - 1)
    return datetime(start.year, start.month, start.day, tzinfo=UTC)


def _hours(since: datetime, until: datetime) -> float:
    return max(0.0, (until - since).total_seconds() / 3600)


def weekly(times: Iterable[WorkTime], now: datetime, count: int = WEEKS) -> list[Week]:
    """The `count` weeks up to the one holding `now`, oldest first; a week with nothing is empty, not left out."""
    started: dict[tuple[int, int], datetime] = {}
    delivered: dict[tuple[int, int], datetime] = {}
    accepted: list[tuple[tuple[int, int], datetime]] = []
    for time in sorted(times, key=lambda t: t.at):
        key = (time.ticket, time.attempt)
        if time.type in STARTS:
            started.setdefault(key, time.at)
        elif time.type == "delivered":
            delivered.setdefault(key, time.at)
        elif time.type == "accepted":
            accepted.append((key, time.at))
    oldest = monday(now) - timedelta(weeks=count - 1)
    mondays = [oldest + timedelta(weeks=n) for n in range(count)]
    to_delivery: dict[date, list[float]] = {day: [] for day in mondays}
    to_acceptance: dict[date, list[float]] = {day: [] for day in mondays}
    counts = dict.fromkeys(mondays, 0)
    for key, at in delivered.items():
        if key in started and monday(at) in to_delivery:
            to_delivery[monday(at)].append(_hours(started[key], at))
    for key, at in accepted:
        if monday(at) in counts:
            counts[monday(at)] += 1
            if key in delivered:
                to_acceptance[monday(at)].append(_hours(delivered[key], at))
    return [Week(day, tuple(to_delivery[day]), tuple(to_acceptance[day]), counts[day]) for day in mondays]


__all__ = ["FLOW_EVENTS", "STARTS", "WEEKS", "Week", "WorkTime", "first_monday", "monday", "weekly"]
