"""Gate 1 — the pre-execution gate (§6): eleven checks, one decision.

:mod:`.checks` runs the checks in their one ordered list; :mod:`.keys` derives the keys
they claim and compare; :mod:`.limits` counts usage against cost and rate limits;
:mod:`.findings` is what a domain validator answers; :mod:`.decision` turns the result
into the journaled :class:`~cradle_kg.records.RuntimeDecision`.
"""
