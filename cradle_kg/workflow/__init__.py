"""Journal-first workflows: step contracts, model calls, replay, autonomy, budgets.

    from cradle_kg.workflow import Engine, OpenAICompatibleClient, strict_replay

    engine = Engine(runtime, client=OpenAICompatibleClient("http://127.0.0.1:8000/v1"))
    status = engine.start(workflow, {"sender": ..., ...})    # -> RunStatus
    engine.decide(status.run_id, "route", {"route": "pay"}, by="user:carol")
    strict_replay(home, [status.run_id])                        # same events, same hashes

Modules: :mod:`.steps` (contracts), :mod:`.model` (clients), :mod:`.engine` (runs),
:mod:`.replay` (strict), :mod:`.difference` (live replay and its report),
:mod:`.sandbox` (recorded activities), :mod:`.autonomy` and :mod:`.rules` (progressive
autonomy), :mod:`.budgets`.
"""

from .autonomy import AutonomyBook, AutonomyPolicy, Routing, Stage
from .budgets import Budget, BudgetBook
from .difference import LiveReport, LiveSettings, live_replay
from .engine import Engine, RunStatus
from .errors import AutonomyError, ModelError, WorkflowError
from .model import (
    ChatMessage,
    ModelClient,
    ModelRequest,
    ModelResponse,
    OpenAICompatibleClient,
    RecordedClient,
)
from .replay import StrictReport, strict_replay
from .rules import Rule, learn
from .steps import HumanStep, ModelStep, ToolStep, Workflow

__all__ = [
    "AutonomyBook",
    "AutonomyError",
    "AutonomyPolicy",
    "Budget",
    "BudgetBook",
    "ChatMessage",
    "Engine",
    "HumanStep",
    "LiveReport",
    "LiveSettings",
    "ModelClient",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelStep",
    "OpenAICompatibleClient",
    "RecordedClient",
    "Routing",
    "Rule",
    "RunStatus",
    "Stage",
    "StrictReport",
    "ToolStep",
    "Workflow",
    "WorkflowError",
    "learn",
    "live_replay",
    "strict_replay",
]
