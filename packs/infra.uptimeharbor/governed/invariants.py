"""Gate-2 domain invariants of the pack (manifest ``invariants:``): over what a change did.

- ``infra.deployed-what-was-asked``: a deploy (or rollback) reports the environment it was
  asked for, a deploy the commit it was asked for (a dry run changes nothing);
- ``infra.production-cites-staging``: a production deploy carries the staging verification
  of its commit it was authorised on (gate 1 checked it exists; here it must still be cited).
"""

from __future__ import annotations

from pydantic import BaseModel

from cradle_kg.packs.sdk import Action, PackContext, invariant

from .models import DeployOutput


def _out(output: BaseModel | None) -> DeployOutput | None:
    return output if isinstance(output, DeployOutput) else None


@invariant("infra.deploy", name="infra.deployed-what-was-asked")
def deployed_what_was_asked(ctx: PackContext, action: Action,
                            output: BaseModel | None) -> list[str]:
    out = _out(output)
    if out is None:
        return ["the deploy reported no deployment to check"]
    args = action.arguments
    broken = []
    if out.env != args.get("env"):
        broken.append(f"deployed to `{out.env}`, asked `{args.get('env')}`")
    if not out.dry_run and out.commit != args.get("commit"):
        broken.append(f"deployed `{out.commit[:12]}`, asked `{str(args.get('commit'))[:12]}`")
    return broken


@invariant("infra.rollback", name="infra.rolled-back-where-asked")
def rolled_back_where_asked(ctx: PackContext, action: Action,
                            output: BaseModel | None) -> list[str]:
    out = _out(output)
    if out is None:
        return ["the rollback reported no deployment to check"]
    env = action.arguments.get("env")
    return [] if out.env == env else [f"rolled back `{out.env}`, asked `{env}`"]


@invariant("infra.deploy", name="infra.production-cites-staging")
def production_cites_staging(ctx: PackContext, action: Action,
                             output: BaseModel | None) -> list[str]:
    args = action.arguments
    if args.get("env") == "production" and not args.get("staging_verification"):
        return ["a production deploy cites no staging verification of its commit"]
    return []
