"""The ``cradle-kg`` command line: a thin face over the library.

Exit codes, for every command: 0 done (and for ``submit``: executed and verified);
1 a negative result (denied, failed verification, a broken chain, violations);
2 the input could not be read or the command could not be carried out.
"""

from __future__ import annotations

import typer

from ..errors import CradleError
from . import approvals as approvals_cmds
from . import core
from . import graph as graph_cmds
from . import mcp as mcp_cmds
from . import packs as pack_cmds
from . import query as query_cmds
from . import recovery as recovery_cmds
from . import serve as serve_cmds
from . import tasks as task_cmds
from . import workflow as workflow_cmds
from .common import report_error, report_unexpected

app = typer.Typer(
    name="cradle-kg",
    help="A governed execution runtime for AI agents: agents propose, the runtime disposes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
core.install(app)
graph_cmds.install(app)
pack_cmds.install(app)
approvals_cmds.install(app)
recovery_cmds.install(app)
task_cmds.install(app)
workflow_cmds.install(app)
query_cmds.install(app)
serve_cmds.install(app)
mcp_cmds.install(app)


def main() -> None:
    """Run a command; whatever it did not handle becomes one ``error: ...`` line, exit 2.

    typer's own usage errors exit 2 by themselves, and ``SystemExit`` passes through.
    Writes are transactional (the journal appends in one SQLite transaction), so a
    command stopped by an exception leaves nothing half-written.
    """
    try:
        app()
    except CradleError as exc:  # anything a command did not handle itself
        report_error(exc)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as exc:  # the last line of defence: never a traceback
        report_unexpected(exc)
        raise SystemExit(2) from None
