"""A run's trusted inputs: the request a person made, recorded as evidence with its author.

``input.recorded`` carries the text (lineage indexes it as a trusted source), the author
and the content address of the same bytes in the evidence store, so the input can be shown
and re-hashed later like any other evidence.
"""

from __future__ import annotations

from datetime import datetime

from ..errors import InputError
from ..evidence import EvidenceStore
from ..loop.context import LoopContext
from ..storage import NewEvent

#: the longest input recorded (the journal keeps it whole)
MAX_INPUT_CHARS = 64 * 1024


def record_input(ctx: LoopContext, evidence: EvidenceStore, run_id: str, text: str, *,
                 author: str, kind: str, now: datetime) -> str:
    """Journal a trusted input of ``run_id``; returns its content address."""
    if not run_id or not author:
        raise InputError("a trusted input needs a run id and an author")
    if not text.strip():
        raise InputError("a trusted input is not empty")
    if len(text) > MAX_INPUT_CHARS:
        raise InputError(f"a trusted input is at most {MAX_INPUT_CHARS} characters")
    data = text.encode("utf-8")
    ref = evidence.put(data)
    ctx.append([
        NewEvent(run_id=run_id, kind="evidence.collected", subject=ref, actor=author, at=now,
                 payload={"ref": ref, "kind": f"input:{kind}", "bytes": len(data)}),
        NewEvent(run_id=run_id, kind="input.recorded", subject=ref, actor=author, at=now,
                 payload={"ref": ref, "text": text, "author": author, "kind": kind}),
    ])
    return ref
