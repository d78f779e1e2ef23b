"""Lineage of argument values: where each value of a proposed action came from.

:mod:`.normalise` (tokens and normalisations), :mod:`.index` (the run's observed values,
derived and in memory), :mod:`.trace` (a proposal's lineage), :mod:`.rdf` (its triples),
:mod:`.rules` (graph policies asked at gate 1), :mod:`.inputs` (a run's trusted inputs).
"""
