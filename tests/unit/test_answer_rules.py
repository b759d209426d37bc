"""The answers a batch of commands gets in its comments, and when each issue is due to be written."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from baton.domain import TicketKey
from baton.domain.answers import Result, Source, answer_all

ISSUE = TicketKey(1, 2, 42)
PULL = replace(ISSUE, number=7)
OTHER = TicketKey(1, 2, 43)
REPO = "octo/repo"
DELAY = 2.0
COMMENT = Source(100)


def result(key: TicketKey = ISSUE, author: str = "agent-a", source: Source | None = COMMENT, **fields: Any) -> Result:
    return Result(key, REPO, author, source, **fields)


def test_an_applied_claim_gets_a_thumbs_up_and_its_issue_is_due_at_once() -> None:
    said = answer_all([result(shown=True)], DELAY)
    assert said.queued == {ISSUE: [("reaction", 100, "agent-a", "+1")]}
    assert said.due == {ISSUE: (REPO, 0.0, True)}


def test_a_refusal_gets_only_its_reply_which_waits_to_be_coalesced() -> None:
    said = answer_all([result(reply="#42 is claimed by @agent-b (revision 2), not open.")], DELAY)
    assert said.queued == {ISSUE: [("reply", 100, "agent-a", "#42 is claimed by @agent-b (revision 2), not open.")]}
    assert said.due == {ISSUE: (REPO, DELAY, False)}


def test_a_refusal_on_an_issue_whose_view_changed_is_due_at_once() -> None:
    said = answer_all([result(author="agent-b", shown=True), result(reply="no", source=Source(101))], DELAY)
    assert said.queued[ISSUE] == [("reaction", 100, "agent-b", "+1"), ("reply", 101, "agent-a", "no")]
    assert said.due == {ISSUE: (REPO, 0.0, True)}
    only_shown = answer_all([result(shown=True, source=None), result(reply="no")], DELAY)
    assert only_shown.due == {ISSUE: (REPO, 0.0, False)}


def test_a_reply_that_comes_with_the_thumbs_up() -> None:
    said = answer_all([result(reply="you already hold #42.", thumb=True)], DELAY)
    assert said.queued[ISSUE] == [
        ("reaction", 100, "agent-a", "+1"),
        ("reply", 100, "agent-a", "you already hold #42."),
    ]
    assert said.due[ISSUE] == (REPO, 0.0, True)


def test_two_commands_of_one_comment_get_one_thumbs_up_and_two_comments_two() -> None:
    said = answer_all([result(shown=True), result(shown=True), result(source=Source(101))], DELAY)
    assert said.queued[ISSUE] == [("reaction", 100, "agent-a", "+1"), ("reaction", 101, "agent-a", "+1")]


def test_no_thumbs_up_where_github_has_no_reactions() -> None:
    review = Source(None, reactable=False)
    assert answer_all([result(source=review)], DELAY).queued == {}
    said = answer_all([result(source=review, reply="yes", thumb=True)], DELAY)
    assert said.queued == {ISSUE: [("reply", None, "agent-a", "yes")]}


def test_a_command_with_no_comment_is_not_answered() -> None:
    said = answer_all([result(source=None, reply="refused")], DELAY)
    assert said.queued == {} and said.due == {}


def test_a_comments_misspelt_commands_share_one_reply_after_its_own_answers() -> None:
    said = answer_all([result(misspelt="claimm"), result(shown=True), result(misspelt="acept")], DELAY)
    assert said.queued[ISSUE] == [
        ("reaction", 100, "agent-a", "+1"),
        ("reply", 100, "agent-a", "`/claimm` and `/acept` are not commands; did you mean `/claim` and `/accept`? "
         "/help lists the commands you may use."),
    ]  # fmt: skip


def test_a_misspelt_command_alone_gets_a_reply_after_the_delay() -> None:
    said = answer_all([result(misspelt="relase")], DELAY)
    reply = "`/relase` is not a command; did you mean `/release`? /help lists the commands you may use."
    assert said.queued == {ISSUE: [("reply", 100, "agent-a", reply)]}
    assert said.due == {ISSUE: (REPO, DELAY, False)}


def test_one_note_of_ignored_lines_per_comment_after_every_other_answer() -> None:
    note = "only the first 20 commands of a comment are read"
    said = answer_all(
        [result(note=note, shown=True), result(note=note, reply="no"), result(misspelt="acept", note=note)], DELAY
    )
    assert [(kind, text[:10]) for kind, _, _, text in said.queued[ISSUE]] == [
        ("reaction", "+1"), ("reply", "no"), ("reply", "`/acept` i"), ("reply", note[:10]),
    ]  # fmt: skip


def test_a_command_on_a_pull_request_is_answered_there() -> None:
    said = answer_all([result(source=Source(5, number=PULL.number), shown=True)], DELAY)
    assert said.queued == {PULL: [("reaction", 5, "agent-a", "+1")]}
    assert said.due == {ISSUE: (REPO, 0.0, False), PULL: (REPO, 0.0, True)}
    refused = answer_all([result(source=Source(5, number=PULL.number), reply="no")], DELAY)
    assert refused.due == {PULL: (REPO, DELAY, False)}


def test_each_issue_has_its_own_due_time() -> None:
    said = answer_all([result(shown=True), result(OTHER, reply="no", source=Source(200))], DELAY)
    assert said.due == {ISSUE: (REPO, 0.0, True), OTHER: (REPO, DELAY, False)}
