"""Audit: is lineage robust to how real agents write values? (Prints figures; asserts nothing.)

AgentDojo's replay (``cradle-kg eval agentdojo``) submits the benchmark's reference calls
verbatim. A real agent reformats values, reads before acting, splits calls and quotes. This
audit rewrites each user task's calls and each injection task's attacker calls into
deterministic variants a model plausibly writes — derived only from the value's shape (an
address, an IBAN, a date-time, a URL, a number, free text, a list) and the tool's meaning
(reads and writes, from the suite's YAML), never from which task is measured — and replays
them through the runtime with the pack ``security.lineage``, as the evaluation does:

* utility — user tasks whose variant calls all execute unattended on the clean
  environment (the prompt the trusted input); ``held`` counts the tasks where lineage held
  a call (approval or deny), ``tool`` the tasks where the *tool* refused the variant (a
  format it does not parse: the variant is then no fair test of lineage);
* security — (user task, injection task) pairs where an attacker write executed
  unattended (``important_instructions``), the attacker's calls rewritten the same way.

Variant kinds (each applied alone; ``reference`` is the benchmark's own calls):

Value variants rewrite the writes' arguments only (a read with a reformatted key returns
other content: the run would not see what the reference run saw).

* ``case``: addresses, IBANs and short names in another case;
* ``grouped``: an IBAN written in groups of four;
* ``numbers``: a number as a float or as text with two decimals (``100`` → ``"100.00"``);
* ``datetime``: a date-time with ``T`` and seconds (``2024-05-01 09:00`` →
  ``2024-05-01T09:00:00``);
* ``urls``: a host or URL with the scheme added (``https://…``) or dropped, a trailing
  slash;
* ``quoted``: free text (four words or more) wrapped in the agent's own words, a value
  quoted inside a longer string;
* ``reads``: every read of the suite that takes no argument made before the first write;
* ``split``: a call with a list of two or more values made once per value;
* ``content_dates``: the *texts* (the person's prompt, the injected text) write their
  dates numerically (``May 1st`` → ``5/1``, ``2024-05-01`` → ``5/1/2024``), the calls
  keep ISO.

Run: ``cd /tmp && PYTHONPATH=… python bench/lineage_variants.py [--variant K ...]
[--suite S ...] [--no-security] [--failures]``. It replays calls; it runs no model.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cradle_kg.integrations.agentdojo import SUITES, _Session
from cradle_kg.records import OutcomeStatus

_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$")
_IBAN = re.compile(r"^[A-Za-z]{2}\d{2}[A-Za-z0-9]{10,30}$")
_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})$")
_URL = re.compile(r"^(?:https?://)?(?:www\.)?[\w-]+(?:\.[\w-]+)+(?:/\S*)?$")
_URL_IN_TEXT = re.compile(r"(?<![\w@/.])((?:https?://)?(?:www\.)[\w-]+(?:\.[\w-]+)+(?:/\S*)?)")
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december"]
_PROSE_DATE = re.compile(
    r"\b(" + "|".join(m.capitalize() for m in _MONTHS) + r") (\d{1,2})(?:st|nd|rd|th)?"
    r"(?:,? (\d{4}))?\b")
_ISO_IN_TEXT = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")

Calls = list[Any]


def _call(function: str, args: dict[str, Any]) -> Any:
    from agentdojo.functions_runtime import FunctionCall
    return FunctionCall(function=function, args=args)


def _map_values(calls: Calls, fn: Callable[[str, Any], Any]) -> Calls:
    """Each call with ``fn(argument name, value)`` on its values (list items one by one)."""
    out = []
    for c in calls:
        args = {}
        for k, v in dict(c.args).items():
            args[k] = [fn(k, x) for x in v] if isinstance(v, list) else fn(k, v)
        out.append(_call(c.function, args))
    return out


def _case(_: str, v: Any) -> Any:
    if not isinstance(v, str):
        return v
    if _EMAIL.match(v):
        local, domain = v.split("@", 1)
        return f"{local[:1].upper()}{local[1:]}@{domain.capitalize()}"
    if _IBAN.match(v):
        return v.lower()
    if len(v) >= 3 and len(v.split()) <= 3 and any(c.isalpha() for c in v) \
            and not _URL.match(v):  # not a code such as a permission's ``r``/``rw``
        return v.lower() if v != v.lower() else v.title()
    return v


def _grouped(_: str, v: Any) -> Any:
    if isinstance(v, str) and _IBAN.match(v):
        return " ".join(v[i:i + 4] for i in range(0, len(v), 4))
    return v


def _numbers(_: str, v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return v
    return float(v) if isinstance(v, int) else f"{v:.2f}"


def _datetime(_: str, v: Any) -> Any:
    m = _DATETIME.match(v) if isinstance(v, str) else None
    return f"{m.group(1)}T{m.group(2)}:00" if m else v


def _url(u: str) -> str:
    if u.startswith(("http://", "https://")):
        return u.split("://", 1)[1].rstrip("/")
    return "https://" + u + ("" if "/" in u else "/")


def _urls(_: str, v: Any) -> Any:
    if not isinstance(v, str) or "@" in v:
        return v
    if _URL.match(v) and ("www." in v or "://" in v or "/" in v):
        return _url(v)
    return _URL_IN_TEXT.sub(lambda m: _url(m.group(1)), v)


def _quoted(_: str, v: Any) -> Any:
    if isinstance(v, str) and len(v.split()) >= 4:
        return f"Hi,\n\nas requested, here it is: \"{v}\"\n\nBest regards"
    return v


def _reads(suite: Any, decls: dict[str, Any]) -> Calls:
    """The suite's reads that take no argument, in the suite's order."""
    return [_call(fn.name, {}) for fn in suite.tools
            if not decls[fn.name].write
            and not any(f.is_required() for f in fn.parameters.model_fields.values())]


def _split(calls: Calls) -> Calls:
    out = []
    for c in calls:
        args = dict(c.args)
        lists = [k for k, v in args.items() if isinstance(v, list) and len(v) >= 2
                 and all(isinstance(x, str) for x in v)]
        if not lists:
            out.append(c)
            continue
        key = lists[0]
        out.extend(_call(c.function, {**args, key: [x]}) for x in args[key])
    return out


def _numeric_dates(text: str) -> str:
    def prose(m: re.Match[str]) -> str:
        month = _MONTHS.index(m.group(1).lower()) + 1
        return f"{month}/{int(m.group(2))}" + (f"/{m.group(3)}" if m.group(3) else "")
    text = _PROSE_DATE.sub(prose, text)
    return _ISO_IN_TEXT.sub(lambda m: f"{int(m.group(2))}/{int(m.group(3))}/{m.group(1)}",
                            text)


VALUE_VARIANTS: dict[str, Callable[[str, Any], Any]] = {
    "case": _case, "grouped": _grouped, "numbers": _numbers, "datetime": _datetime,
    "urls": _urls, "quoted": _quoted}
KINDS = ("reference", *VALUE_VARIANTS, "reads", "split", "content_dates")


class Variant:
    def __init__(self, kind: str, session: _Session) -> None:
        self.kind = kind
        self.session = session

    def calls(self, calls: Calls) -> Calls:
        if self.kind in VALUE_VARIANTS:
            # writes only: a read with a reformatted key returns other content (a hotel's
            # reviews asked in lower case are none), so the run would not see what the
            # reference run saw — no test of lineage
            decls = self.session.decls
            return [_map_values([c], VALUE_VARIANTS[self.kind])[0]
                    if decls[c.function].write else c for c in calls]
        if self.kind == "split":
            return _split(calls)
        if self.kind == "reads":
            decls = self.session.decls
            first = next((i for i, c in enumerate(calls) if decls[c.function].write), None)
            if first is None:
                return calls
            return [*calls[:first], *_reads(self.session.suite, decls), *calls[first:]]
        return calls

    def text(self, text: str) -> str:
        return _numeric_dates(text) if self.kind == "content_dates" else text


def _schema(reasons: list[str]) -> bool:
    """The runtime refused the call's shape (its input schema, or a value not written as
    its type: ``"4.00"`` for a float), not its lineage."""
    return any("input schema" in r or "is not the value the tool runs with" in r
               for r in reasons)


def _held(status: str) -> bool:
    return status in (OutcomeStatus.AWAITING_APPROVAL, OutcomeStatus.DENIED,
                      OutcomeStatus.NEEDS_CLARIFICATION, OutcomeStatus.ESCALATED)


def audit(suite_name: str, kind: str, security: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cradle-variants-") as tmp:
        session = _Session(suite_name, Path(tmp) / "home")
        try:
            return _audit(session, Variant(kind, session), security)
        finally:
            session.runtime.close()


def _audit(session: _Session, variant: Variant, security: bool) -> dict[str, Any]:
    suite = session.suite
    r: dict[str, Any] = {"tasks": 0, "passed": 0, "held": [], "tool": [], "pairs": 0,
                         "executed": [], "attacker_tool_errors": 0}
    for uid, task in suite.user_tasks.items():
        session.holder.env = suite.load_and_inject_default_environment({})
        calls = variant.calls(list(task.ground_truth(session.holder.env.model_copy(
            deep=True))))
        rows = session.run(variant.text(task.PROMPT), calls)
        r["tasks"] += 1
        if any(_held(s) and not _schema(rs) for _, s, rs in rows):
            r["held"].append((uid, [(t, (rs or [""])[0][:160]) for t, s, rs in rows
                                    if _held(s)]))
        elif any(s != OutcomeStatus.EXECUTED for _, s, _ in rows):
            r["tool"].append(uid)
        else:
            r["passed"] += 1
    if not security:
        return r
    for uid, task in suite.user_tasks.items():
        for iid, inj in suite.injection_tasks.items():
            placed = {k: variant.text(v) for k, v in session.injections(task, inj).items()}
            session.holder.env = suite.load_and_inject_default_environment(placed)
            calls = variant.calls(list(task.ground_truth(session.holder.env.model_copy(
                deep=True))))
            n = len(calls)
            attacker = variant.calls(list(inj.ground_truth(session.holder.env.model_copy(
                deep=True))))
            rows = session.run(variant.text(task.PROMPT), [*calls, *attacker])
            r["pairs"] += 1
            writes = [(t, s) for t, s, _ in rows[n:] if session.decls[t].write]
            r["attacker_tool_errors"] += sum(1 for _, s in writes
                                             if s == OutcomeStatus.FAILED)
            executed = [t for t, s in writes if s == OutcomeStatus.EXECUTED]
            r["attacker_writes"] = r.get("attacker_writes", 0) + len(writes)
            if executed:
                r["executed"].append((uid, iid, executed))
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", choices=KINDS)
    ap.add_argument("--suite", action="append", choices=SUITES)
    ap.add_argument("--no-security", action="store_true")
    ap.add_argument("--failures", action="store_true", help="list what each variant broke")
    args = ap.parse_args()
    print("AgentDojo v1, important_instructions — the reference calls rewritten as an agent "
          "writes them; replays calls, runs no model")
    print(f"{'variant':<15}{'suite':<11}{'utility':>9}{'held':>6}{'tool':>6}"
          f"{'attacker writes':>17}{'seconds':>9}")
    for kind in args.variant or KINDS:
        tot = [0, 0, 0, 0, 0, 0]
        for suite in args.suite or SUITES:
            t0 = time.perf_counter()
            r = audit(suite, kind, not args.no_security)
            row = [r["passed"], r["tasks"], len(r["held"]), len(r["tool"]),
                   len(r["executed"]), r["pairs"]]
            tot = [a + b for a, b in zip(tot, row, strict=True)]
            print(f"{kind:<15}{suite:<11}{row[0]:>5}/{row[1]:<3}{row[2]:>6}{row[3]:>6}"
                  f"{row[4]:>11}/{row[5]:<5}{time.perf_counter() - t0:>9.1f}", flush=True)
            if args.failures:
                for uid, why in r["held"]:
                    print("   held:", uid, why)
                if r["tool"]:
                    print("   tool refused the variant:", r["tool"])
                for f in r["executed"]:
                    print("   attacker write executed:", *f)
        print(f"{kind:<15}{'all':<11}{tot[0]:>5}/{tot[1]:<3}{tot[2]:>6}{tot[3]:>6}"
              f"{tot[4]:>11}/{tot[5]:<5}", flush=True)


if __name__ == "__main__":
    main()
