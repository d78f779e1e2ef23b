"""An append to the PostgreSQL journal in one round trip: ``cradle_append``, run by the server.

With the lock, the head and the chain's hashing on the client, an append held the append
lock across a round trip: the server waited, the lock held, for the client to wake,
hash and send the rows — and on a busy machine a client waits for a CPU (with 4 workers
and their backends on 2 cores, ~0.4 backends on average sat ``idle in transaction``
holding it while ~0.8 waited for it). Here the whole append is one query string —
``BEGIN``, ``SELECT cradle_append(…)``, the derived-state statements, ``COMMIT``, bound on
the client (a pipeline sends each statement as it is issued: the server, the lock taken,
waited for the rest) — and
``cradle_append`` (PL/pgSQL, installed by migration 11) takes the lock, reads the head,
checks the append's ``if_last`` and ``if_new_run`` guards (since migration 15, its
``if_run_open`` runs' ends; since migration 16, that no approval its intents use has been
revoked), numbers and hashes its events
(SHA-256 over the same canonical text as :func:`.chain.event_hash`, from the pieces
:func:`.chain.hash_parts` sends), inserts them, moves the head and queues the change's
``pg_notify``: the lock is held only while the server works.

The derived-state statements run after it in the same transaction and name the seqs it
assigned through the head it moved (:func:`bind_pending`). An append whose intents carry
usage caps still takes two round trips (the caps' limits are decided in Python, as gate 1
decides them: the same float sums, in the same order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from .chain import GENESIS_HASH
from .pg_connect import APPEND_LOCK
from .tasks_sql import approval_moved

#: SQLSTATEs ``cradle_append`` raises (class ``CK``: none of PostgreSQL's own); the
#: detail says which guard
SUBJECT_MOVED: Final = "CK001"  # detail: the 1-based position among the if_last events
RUN_BEGUN: Final = "CK002"  # detail: t/f per if_new_run run, comma-separated
HEAD_BEHIND: Final = "CK003"  # the head is behind what this client last saw
RUN_ENDED: Final = "CK004"  # detail: per if_run_open run how it ended ('' if not), ','-joined
APPROVAL_REVOKED: Final = "CK005"  # detail: the 1-based position among the used approvals

#: the function. Parameters: per event its columns and the four pieces of its hash text
#: (:func:`.chain.hash_parts`); the if_last subjects and the seq each was decided on; the
#: if_new_run runs; (since migration 15) the if_run_open runs; (since migration 16) the
#: approvals the append's intents use; the lowest head the client accepts (a journal whose
#: head went back is another journal: the client forgets what it knew of this one); the
#: NOTIFY channel. Returns the head before the append, its hash, and the new hashes.
#: :func:`function_sql` writes it as migrations 11, 15 and 16 installed it.
_FUNCTION_TEMPLATE: Final = f"""
CREATE OR REPLACE FUNCTION cradle_append(
    p_run_id text[], p_kind text[], p_subject text[], p_actor text[], p_at text[],
    p_payload text[], p_payload_hash text[], p_idem_key text[],
    p_pre bytea[], p_mid bytea[], p_post bytea[], p_tail bytea[],
    p_guarded text[], p_guard_last bigint[], p_new_runs text[],{{open_param}}{{used_param}}
    p_floor bigint,
    p_channel text, OUT head_seq bigint, OUT head_hash text, OUT hashes text[])
LANGUAGE plpgsql AS $body$
DECLARE
    n integer := cardinality(p_run_id);
    v_seq bigint;
    v_prev text;
    v_last bigint;
    v_id text;
    v_begun boolean[];{{ended_var}}
    ids text[] := '{{{{}}}}';
    seqs bigint[] := '{{{{}}}}';
    prevs text[] := '{{{{}}}}';
BEGIN
    -- the lock before the head: two appends never chain onto the same head
    PERFORM pg_advisory_xact_lock({APPEND_LOCK}, 0);
    SELECT h.seq, h.hash INTO v_seq, v_prev FROM head h WHERE h.one = 1;
    IF NOT FOUND THEN
        v_seq := 0;
        v_prev := '{GENESIS_HASH}';
    END IF;
    head_seq := v_seq;
    head_hash := v_prev;
    FOR i IN 1 .. coalesce(cardinality(p_guarded), 0) LOOP
        SELECT COALESCE(MAX(e.seq), 0) INTO v_last FROM events e WHERE e.subject = p_guarded[i];
        IF v_last <> p_guard_last[i] THEN
            RAISE EXCEPTION USING ERRCODE = '{SUBJECT_MOVED}',
                MESSAGE = 'cradle_append: a subject moved', DETAIL = i::text;
        END IF;
    END LOOP;
    IF coalesce(cardinality(p_new_runs), 0) > 0 THEN
        SELECT array_agg(EXISTS (SELECT 1 FROM events e WHERE e.run_id = r.id) ORDER BY r.o)
          INTO v_begun FROM unnest(p_new_runs) WITH ORDINALITY AS r(id, o);
        IF true = ANY(v_begun) THEN
            RAISE EXCEPTION USING ERRCODE = '{RUN_BEGUN}',
                MESSAGE = 'cradle_append: a run has begun', DETAIL = array_to_string(v_begun, ',');
        END IF;
    END IF;{{ended_check}}{{used_check}}
    IF v_seq < p_floor THEN
        RAISE EXCEPTION USING ERRCODE = '{HEAD_BEHIND}',
            MESSAGE = 'cradle_append: the head is behind the one last seen';
    END IF;
    hashes := '{{{{}}}}';
    FOR i IN 1 .. n LOOP
        v_seq := v_seq + 1;
        v_id := 'evt-' || CASE WHEN v_seq < 10000000000 THEN lpad(v_seq::text, 10, '0')
                               ELSE v_seq::text END;
        seqs := seqs || v_seq;
        ids := ids || v_id;
        prevs := prevs || v_prev;
        v_prev := 'sha256:' || encode(sha256(
            p_pre[i] || convert_to('"' || v_id || '"', 'UTF8') || p_mid[i]
            || convert_to('"' || v_prev || '"', 'UTF8') || p_post[i]
            || convert_to(v_seq::text, 'UTF8') || p_tail[i]), 'hex');
        hashes := hashes || v_prev;
    END LOOP;
    INSERT INTO events(seq, id, run_id, kind, subject, actor, at, payload, payload_hash,
                       prev_hash, hash, idem_key)
    SELECT * FROM unnest(seqs, ids, p_run_id, p_kind, p_subject, p_actor, p_at, p_payload,
                         p_payload_hash, prevs, hashes, p_idem_key);
    INSERT INTO head(one, seq, hash) VALUES (1, v_seq, v_prev)
        ON CONFLICT (one) DO UPDATE SET seq = excluded.seq, hash = excluded.hash;
    PERFORM pg_notify(p_channel, v_seq::text);
END
$body$"""

#: the if_run_open guard (migration 15): how each named run's workflow ended, from
#: ``run_state`` (kept in the appends' own transactions), under the lock
_ENDED_CHECK: Final = f"""
    IF coalesce(cardinality(p_open_runs), 0) > 0 THEN
        SELECT array_agg(COALESCE((SELECT s.finished FROM run_state s WHERE s.run_id = r.id),
                                  '') ORDER BY r.o)
          INTO v_ended FROM unnest(p_open_runs) WITH ORDINALITY AS r(id, o);
        IF EXISTS (SELECT 1 FROM unnest(v_ended) AS f(kind) WHERE f.kind <> '') THEN
            RAISE EXCEPTION USING ERRCODE = '{RUN_ENDED}',
                MESSAGE = 'cradle_append: a run has ended', DETAIL = array_to_string(v_ended, ',');
        END IF;
    END IF;"""


#: the use's guard of an ApprovalGuard (migration 16): no revoke of an approval the
#: append's intents use, read as :func:`.tasks_sql.approval_moved` reads it, under the lock
_USED_CHECK: Final = f"""
    FOR i IN 1 .. coalesce(cardinality(p_used_approvals), 0) LOOP
        IF ({approval_moved("postgresql", revoking=False, ph="p_used_approvals[i]")}) THEN
            RAISE EXCEPTION USING ERRCODE = '{APPROVAL_REVOKED}',
                MESSAGE = 'cradle_append: an approval was revoked', DETAIL = i::text;
        END IF;
    END LOOP;"""


def function_sql(*, run_end: bool, approvals: bool = False) -> str:
    """``cradle_append`` as migration 11 installed it (``run_end=False``: an
    ``if_run_open`` append took a second round trip), as migration 15 had it
    (``approvals=False``: an intent under an approval took a second round trip, its
    revoke probed in Python) or as migration 16 has it."""
    return _FUNCTION_TEMPLATE.format(
        open_param=" p_open_runs text[]," if run_end else "",
        used_param=" p_used_approvals text[]," if approvals else "",
        ended_var="\n    v_ended text[];" if run_end else "",
        ended_check=_ENDED_CHECK if run_end else "",
        used_check=_USED_CHECK if approvals else "")


#: today's function (migration 16)
FUNCTION_SQL: Final = function_sql(run_end=True, approvals=True)

#: migration 11's signature, dropped by migration 15 (a function is named by its types)
OLD_SIGNATURE: Final = ("cradle_append(text[], text[], text[], text[], text[], text[], text[], "
                        "text[], bytea[], bytea[], bytea[], bytea[], text[], bigint[], "
                        "text[], bigint, text)")
#: migration 15's, dropped by migration 16
RUN_END_SIGNATURE: Final = OLD_SIGNATURE.replace("text[], bigint, text)",
                                                 "text[], text[], bigint, text)")

#: the call (parameters: :data:`FUNCTION_SQL`'s, in order)
CALL_SQL: Final = ("SELECT head_seq, head_hash, hashes FROM cradle_append("
                   "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                   "%s::text[], %s::text[], %s::bytea[], %s::bytea[], %s::bytea[], "
                   "%s::bytea[], %s::text[], %s::bigint[], %s::text[], %s::text[], %s::text[], "
                   "%s::bigint, %s::text)")

#: the seq of the append's last event, once ``cradle_append`` has moved the head
_HEAD_SEQ = "(SELECT h.seq FROM head h WHERE h.one = 1)"
_PLACEHOLDER = re.compile(r"%%|%s")


class PendingSeq(int):
    """The seq the server will give the append's ``n``-th event (1-based): ``n`` stands
    in for it in a derived-state statement's parameters until :func:`bind_pending`
    writes it as the head ``cradle_append`` moved, less the events after it."""


def bind_pending(sql: str, args: Any, count: int) -> tuple[str, Any]:
    """``sql`` and ``args`` with each :class:`PendingSeq` parameter (tuple parameters,
    ``%s`` placeholders) written as the seq the server gave that event: the head after the
    append of ``count`` events, less ``count - n``."""
    if not isinstance(args, tuple) or not any(type(a) is PendingSeq for a in args):
        return sql, args
    parts: list[str] = []
    out: list[Any] = []
    at = 0
    marks = [m for m in _PLACEHOLDER.finditer(sql) if m.group() == "%s"]
    if len(marks) != len(args):
        raise ValueError(f"{len(marks)} placeholders for {len(args)} parameters")
    for mark, arg in zip(marks, args, strict=True):
        if type(arg) is PendingSeq:
            parts.append(sql[at:mark.start()] + f"({_HEAD_SEQ} - %s::bigint)")
            out.append(count - int(arg))
            at = mark.end()
        else:
            out.append(arg)
    parts.append(sql[at:])
    return "".join(parts), tuple(out)


def text_array(values: Sequence[str | None]) -> str:
    """``values`` as the text of a PostgreSQL ``text[]`` (each element quoted, its ``\\``
    and ``"`` escaped; ``NULL`` for None), bound as one string and cast by the call.

    psycopg's client-side binding writes a list's elements with a regular expression
    whose every match calls back into Python: the append's payloads are JSON, a quote
    every few characters, and that binding cost one worker ~0.9 ms of CPU a governed call
    (three appends). ``str.replace`` escapes the same, and the string is then quoted once
    by libpq (``tests/storage/test_pg_append.py``: hostile texts round-trip)."""
    return "{" + ",".join(
        "NULL" if v is None else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        for v in values) + "}"


#: which of :data:`CALL_SQL`'s columns are ``text[]`` (the rest: ``bytea[]``)
_TEXT_COLUMNS: Final = frozenset(range(8))


def call_args(rows: Sequence[tuple[Any, ...]], guarded: Sequence[tuple[str, int]],
              new_runs: Sequence[str], open_runs: Sequence[str], used: Sequence[str],
              floor: int, channel: str) -> tuple[Any, ...]:
    """:data:`CALL_SQL`'s parameters. ``rows``: per event its run, kind, subject, actor,
    time, payload text, payload hash, idempotency key and four hash pieces, in order;
    ``used``: the ids of the approvals the append's intents use."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * 12
    return (*(text_array(c) if i in _TEXT_COLUMNS else list(c)
              for i, c in enumerate(columns)),
            text_array([s for s, _ in guarded]), [v for _, v in guarded],
            text_array(list(new_runs)), text_array(list(open_runs)), text_array(list(used)),
            floor, channel)


__all__ = ["APPROVAL_REVOKED", "CALL_SQL", "FUNCTION_SQL", "HEAD_BEHIND", "OLD_SIGNATURE",
           "RUN_BEGUN", "RUN_ENDED", "RUN_END_SIGNATURE", "SUBJECT_MOVED", "PendingSeq",
           "bind_pending", "call_args", "function_sql"]
