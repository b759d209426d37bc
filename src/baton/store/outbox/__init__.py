"""The outbox: what Baton still owes GitHub, per issue (the `outbox` rows: this issue is due for
reconciling) and per command (the `outbox_items` rows: a 👍 or a reply to send).

Two sides, one module each:

- `marking`: inside the transaction of a change to a ticket or its evidence, mark the issue due and queue
  the answers to commands (`OutboxTx`). Every change fills the outbox this one way.
- `writing`: the writer's side: which installation to write for, its most urgent issue, what to show, what
  was sent (`Outbox`).

This package imports neither, so the evidence rail can use `marking` without reaching the work rail that
`writing` reads tickets from.
"""
