"""A run's trusted inputs: the request a person made, recorded as evidence with its author.

``input.recorded`` carries the text (lineage indexes it as a trusted source), the author
and the content address of the same bytes in the evidence store, so the input can be shown
and re-hashed later like any other evidence.
"""

from __future__ import annotations

from datetime import datetime

from ..errors import InputError
from ..evidence import COLLECTOR_ROLE, EvidenceStore, collector_role
from ..inputs import InputLimits, check_human_input
from ..loop.context import LoopContext
from ..storage import NewEvent

#: the longest input recorded (the journal keeps it whole)
MAX_INPUT_CHARS = 64 * 1024


def checked_input(limits: InputLimits, run_id: str, text: str, *, author: str,
                  kind: str) -> bytes:
    """The bytes of a trusted input of ``run_id``, or :class:`~cradle_kg.errors.InputError`.

    The run id, the author and the kind are ids (checked as a proposal's are: no NUL, no
    lone surrogate, within the home's limits): an entry point checks an MCP host's
    ``cradle-kg/input`` with this *before* it journals anything for the call."""
    if not run_id or not author:
        raise InputError("a trusted input needs a run id and an author")
    check_human_input(limits, ids={"input.run": run_id, "input.author": author,
                                   "input.kind": kind})
    if not text.strip():
        raise InputError("a trusted input is not empty")
    if len(text) > MAX_INPUT_CHARS:
        raise InputError(f"a trusted input is at most {MAX_INPUT_CHARS} characters")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 bytes to store
        raise InputError(f"a trusted input holds a lone surrogate at {exc.start} (not valid "
                         "unicode)") from None


def record_input(ctx: LoopContext, evidence: EvidenceStore, run_id: str, text: str, *,
                 author: str, kind: str, now: datetime) -> str:
    """Journal a trusted input of ``run_id`` (:func:`checked_input` first); returns its
    content address."""
    data = checked_input(ctx.config.input_limits, run_id, text, author=author, kind=kind)
    ref = evidence.put(data)
    ctx.append([
        NewEvent(run_id=run_id, kind="evidence.collected", subject=ref, actor=author, at=now,
                 payload={"ref": ref, "kind": f"input:{kind}", "bytes": len(data),
                          COLLECTOR_ROLE: collector_role(ctx.config, author)}),
        NewEvent(run_id=run_id, kind="input.recorded", subject=ref, actor=author, at=now,
                 payload=input_payload(ref, text, author=author, kind=kind)),
    ])
    return ref


def input_payload(ref: str, text: str, *, author: str, kind: str) -> dict[str, str]:
    """The payload of an ``input.recorded`` event (what lineage indexes)."""
    return {"ref": ref, "text": text, "author": author, "kind": kind}
