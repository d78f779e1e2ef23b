"""A Cedar file that does not parse is named by its file and line, its bad token cut.

Finding (left open by the malformed-files round, ``test_275`` …): the policy set's parse
error quoted cedar's message whole, and cedar quotes the token it refuses whole: a
40,000-character name in a policy file (a paste gone wrong, a generated file) made a
40,000-character ``error:`` line for every command that opens the home, and, dropped into
a running home, the same text in the reason of each denial journaled
(``policy_set_unloadable``) until the file was fixed — in the journal for ever, in its
exports and on the graph.

What cedar says is now one line of at most 200 characters (cut with ``…``), after the
file and line the runtime names itself.
"""

from __future__ import annotations

import json

import pytest

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus

from .homes import credit, opened_demo_home, without_journal_url
from .inputcli import assert_refused, cli

TOKEN = "a" * 40_000
#: a statement that parses, then one with the bad token from the file's third line
BROKEN = ('@id("quiet")\nforbid(principal, action == Action::"none.none", resource);\n'
          f'@id("broken")\nforbid(principal, action, resource)\nwhen {{ {TOKEN} }};\n')
#: the file (a temporary folder's path) and line, the runtime's words, and cedar's cut to
#: 200 characters
MOST = 600


def test_a_dropped_file_is_denied_with_a_short_reason(tmp_path_factory: pytest.TempPathFactory,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CRADLE_JOURNAL_URL", raising=False)
    home = opened_demo_home(tmp_path_factory, "cedar-quote", embedded=True)
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(credit("q-0")).status is OutcomeStatus.EXECUTED
        seen, _ = rt.journal.head()
        (home / "policies" / "incident.cedar").write_text(BROKEN, encoding="utf-8")
        outcome = rt.submit(credit("q-1"))
        assert outcome.status is OutcomeStatus.DENIED
        [reason] = [r for r in outcome.reasons if "incident.cedar:3" in r]
        assert "cannot parse the policy" in reason and len(reason) < MOST, len(reason)
        written = [e for e in rt.journal.events(since_seq=seen)
                   if TOKEN[:1000] in json.dumps(e.payload)]
        assert written == []


def test_the_cli_names_the_file_in_one_short_line(tmp_path_factory: pytest.TempPathFactory
                                                  ) -> None:
    home = opened_demo_home(tmp_path_factory, "cedar-quote-cli", embedded=True)
    (home / "policies" / "incident.cedar").write_text(BROKEN, encoding="utf-8")
    proposal = home.parent / "credit.json"
    proposal.write_text(json.dumps(credit("q-2")), encoding="utf-8")
    done = cli("submit", str(proposal), "--home", str(home), env=without_journal_url(),
               timeout=120)
    assert_refused(done, "incident.cedar:3", "cannot parse the policy")
    assert len(done.stderr) < MOST, len(done.stderr)
