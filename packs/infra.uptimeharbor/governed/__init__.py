"""infra.uptimeharbor's contributions to the governed runtime, as declarations.

The manifest names each of them; loading the pack registers them (no registration code).
A target names the *world* (one repository and its two environments, under
``<home>/uptimeharbor/<world>/``) and what in it is touched:
``harbor:<world>/production``, ``harbor:<world>/repo``, ``harbor:<world>/incident/<id>``.

=========================  ===========  ===========  ===================================
tool                       side effect  idempotency  gate 2
=========================  ===========  ===========  ===================================
``infra.detect_outage``    read_only    natural      — (an observation)
``infra.run_tests``        read_only    natural      — (an observation, never a fact)
``infra.claim_fix``        reversible   natural      ``infra.fix-claimed``
``infra.deploy``           compensable  keyed        ``infra.deploy-verified``;
                                                     compensation ``infra.rollback``; lookup
``infra.rollback``         reversible   keyed        ``infra.rollback-verified``
``infra.resolve_incident`` reversible   natural      ``infra.resolution-verified``
=========================  ===========  ===========  ===================================

Verifiers read the probe, git and the state file — never a tool's output — and record
what they read in the pack's verification log (``harbor.record_verification``), which is
what the flow rules consult: ``infra.incident-resolved`` (the paths that failed when the
incident was opened pass now), ``infra.deployed-commit-matches``, ``infra.service-healthy``
(each registered alone; ``infra.deploy-verified`` runs the three).

Gate-1 validators are the pack's rules (``validators/rules.py``) over the proposal and a
snapshot of the state: ``well_formed_change``, ``one_fix_per_incident``,
``green_tests_not_resolution``, ``production_runs_verified_commits_only`` (plus: the cited
``staging_verification`` is the recorded one). "Staging verification does not authorize
production" is structural: the production permit is its own Cedar policy
(``production-deploy-explicit``: its own role, ``@requires_approval``), a staging permit
never covers production (``decision-is-for-its-environment``), and the staging verification
is only a condition. A failed post-deploy verification compensates with a rollback to the
last verified commit, which also gives the fix's claim back.
"""
