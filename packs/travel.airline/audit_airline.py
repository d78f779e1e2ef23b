"""AUDIT TOOL (the fourth audit, README "Fourth audit"): a differential test of the pack
against the independent oracle of ``oracle_audit.py``.

    python packs/travel.airline/audit_airline.py --data ../shared/data/tau-airline \\
        --tau /work/.mirror/sierra-research+tau-bench/repo [--seed 20240515] \\
        [--confirm 150] [--show 3] [--out disagreements.json]

It generates write calls broadly from the benchmark's database (every reservation and
every user; seeded, deterministic): cancellations with each reason, changes of flights
and cabins, bags, passengers, bookings with each payment mix, certificates for each
complaint. Each call is judged by

- the pack: the benchmark's API run on a view that is never written (an ``Error:`` is the
  API's answer, not a policy decision), then ``rules.findings`` — the pack's validator,
  on one read-only connection to a database loaded from ``--data``; and
- the oracle (``oracle_audit.judge``), with the API's answer from the benchmark's own
  tool code (``--tau``: a git mirror of ``sierra-research/tau-bench``).

``--confirm N`` runs N calls (a deterministic sample, every tool) through
``Runtime.submit`` on a fresh copy of the database each — Cedar, gates and all — and checks
the verdict is the fast path's. Disagreements are counted by class (tool, the pack's
verdict and codes, the oracle's verdict and sentence) and printed with examples.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from copy import deepcopy
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import oracle_audit as oracle  # noqa: E402

from cradle_kg.packs import testing  # noqa: E402

REASONS = ("change_of_plan", "airline_cancelled", "health", "weather", "other")
YES = {"airline:confirmed": "yes"}


# --- generation -----------------------------------------------------------------------------

class Gen:
    def __init__(self, data: dict[str, Any], seed: int) -> None:
        self.d = data
        self.rng = random.Random(seed)
        self.by_route: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.by_origin: dict[str, list[str]] = defaultdict(list)
        for num, f in sorted(data["flights"].items()):
            self.by_route[(f["origin"], f["destination"])].append(num)
            self.by_origin[f["origin"]].append(num)
        self.calls: list[dict[str, Any]] = []

    def add(self, kind: str, tool: str, args: dict[str, Any], uid: str,
            said: dict[str, str] | None = None) -> None:
        self.calls.append({"kind": kind, "tool": tool, "args": args,
                           "customer": f"customer:{uid}", "said": dict(said or {})})

    def available(self, num: str, date: str) -> dict[str, Any] | None:
        st: dict[str, Any] | None = self.d["flights"][num]["dates"].get(date)
        return st if st and st["status"] == "available" else None

    def avail_dates(self, num: str) -> list[str]:
        return sorted(dt for dt, st in self.d["flights"][num]["dates"].items()
                      if st["status"] == "available")

    def pay_id(self, user: dict[str, Any], allow_certificate: bool = False) -> str:
        ids = sorted(user["payment_methods"])
        good = [p for p in ids if user["payment_methods"][p]["source"] != "certificate"]
        if allow_certificate or not good:
            return self.rng.choice(ids)
        return self.rng.choice(good)

    def said(self, base: dict[str, str] | None = None, p_missing: float = 0.05
             ) -> dict[str, str]:
        out = dict(YES) if self.rng.random() >= p_missing else {}
        out.update(base or {})
        return out

    # every reservation -----------------------------------------------------------------
    def reservation(self, rid: str) -> None:
        r = self.d["reservations"][rid]
        uid = r["user_id"]
        user = self.d["users"][uid]
        statuses = [self.d["flights"][s["flight_number"]]["dates"].get(s["date"], {})
                    .get("status") for s in r["flights"]]
        interesting = (r["insurance"] == "yes" or r["cabin"] == "business"
                       or "cancelled" in statuses or r["created_at"] >= "2024-05-13")
        reasons = list(REASONS) if interesting else self.rng.sample(REASONS, 2)
        for reason in reasons:
            # the customer's yes is asked for a cancellation too (test_603): given in
            # 95 % of the calls, as `said` gives it for the other writes
            said = {"airline:cancellationReason": reason}
            if self.rng.random() >= 0.05:
                said.update(YES)
            self.add("cancel/" + reason, "cancel_reservation", {"reservation_id": rid}, uid,
                     said)
        if self.rng.random() < 0.03:
            self.add("cancel/no-reason", "cancel_reservation", {"reservation_id": rid}, uid, YES)
        # bags
        k = self.rng.choice((0, 1, 1, 2, 3))
        total = r["total_baggages"] + k
        free = oracle.FREE[user["membership"]][r["cabin"]] * len(r["passengers"])
        variants = {"allowance": max(r["nonfree_baggages"], total - free, 0),
                    "all-charged": r["nonfree_baggages"] + k,
                    "none-charged": r["nonfree_baggages"],
                    "pack-formula": r["nonfree_baggages"] + max(
                        0, k - max(0, free - (r["total_baggages"] - r["nonfree_baggages"])))}
        for name in self.rng.sample(sorted(variants), 2):
            self.add(f"bags/+{min(k, 2)}/{name}", "update_reservation_baggages",
                     {"reservation_id": rid, "total_baggages": total,
                      "nonfree_baggages": variants[name],
                      "payment_id": self.pay_id(user, self.rng.random() < 0.1)}, uid,
                     self.said())
        if r["total_baggages"] > 0 and self.rng.random() < 0.2:
            self.add("bags/remove", "update_reservation_baggages",
                     {"reservation_id": rid, "total_baggages": r["total_baggages"] - 1,
                      "nonfree_baggages": max(0, r["nonfree_baggages"] - 1),
                      "payment_id": self.pay_id(user)}, uid, self.said())
        # passengers
        pax = [dict(p) for p in r["passengers"]]
        pax[0] = {**pax[0], "first_name": pax[0]["first_name"] + "a"}
        if self.rng.random() < 0.05:
            pax = [*pax, {"first_name": "Extra", "last_name": "Person", "dob": "1990-01-01"}]
        self.add("passengers", "update_reservation_passengers",
                 {"reservation_id": rid, "passengers": pax}, uid, self.said())
        # flights
        for kind, flights, cabin in self.rng.sample(self.flight_changes(r), k=min(
                2, len(self.flight_changes(r)))):
            self.add("flights/" + kind, "update_reservation_flights",
                     {"reservation_id": rid, "cabin": cabin, "flights": flights,
                      "payment_id": self.pay_id(user, self.rng.random() < 0.1)}, uid,
                     self.said())

    def flight_changes(self, r: dict[str, Any]) -> list[tuple[str, list[dict[str, str]], str]]:
        segs = [{"flight_number": s["flight_number"], "date": s["date"]} for s in r["flights"]]
        out: list[tuple[str, list[dict[str, str]], str]] = []
        for cabin in oracle.CABINS:
            if cabin != r["cabin"]:
                out.append((f"cabin/{r['cabin']}->{cabin}", segs, cabin))
        # each segment moved to another available date of the same flight, or another flight
        # of the same route the same day
        for i, s in enumerate(r["flights"]):
            dates = [dt for dt in self.avail_dates(s["flight_number"]) if dt != s["date"]]
            flown = self.d["flights"][s["flight_number"]]["dates"].get(s["date"], {}).get(
                "status") in ("landed", "flying")
            tag = "flown" if flown else "open"
            if dates:
                new = [dict(x) for x in segs]
                new[i] = {"flight_number": s["flight_number"], "date": self.rng.choice(dates)}
                out.append((f"move-date/{tag}", new, r["cabin"]))
            others = [n for n in self.by_route[(s["origin"], s["destination"])]
                      if n != s["flight_number"] and self.available(n, s["date"])]
            if others:
                new = [dict(x) for x in segs]
                new[i] = {"flight_number": self.rng.choice(others), "date": s["date"]}
                out.append((f"other-flight/{tag}", new, r["cabin"]))
                if r["cabin"] != "business":
                    out.append((f"other-flight+upgrade/{tag}", new, "business"))
        # the last segment to another destination
        last = r["flights"][-1]
        elsewhere = [n for n in self.by_origin[last["origin"]]
                     if self.d["flights"][n]["destination"] != last["destination"]
                     and self.available(n, last["date"])]
        if elsewhere:
            new = [dict(x) for x in segs]
            new[-1] = {"flight_number": self.rng.choice(elsewhere), "date": last["date"]}
            out.append(("other-destination", new, r["cabin"]))
        out.append(("empty", [], r["cabin"]))
        out.append(("duplicated", [*segs, segs[-1]], r["cabin"]))
        if r["flight_type"] == "round_trip" and len(segs) >= 2:
            out.append(("drop-return", segs[: len(segs) // 2], r["cabin"]))
        else:
            back = [n for n in self.by_route[(r["destination"], r["origin"])]
                    if self.avail_dates(n)]
            if back:
                n = self.rng.choice(back)
                back_seg = {"flight_number": n, "date": self.avail_dates(n)[-1]}
                out.append(("add-return", [*segs, back_seg], r["cabin"]))
        return out

    # every user ----------------------------------------------------------------------------
    def user(self, uid: str) -> None:
        user = self.d["users"][uid]
        for _ in range(3):
            self.booking(uid, user)
        for rid in user["reservations"]:
            r = self.d["reservations"].get(rid)
            if r is None:
                continue
            st = [self.d["flights"][s["flight_number"]]["dates"].get(s["date"], {})
                  for s in r["flights"]]
            n = len(r["passengers"])
            if any(x.get("status") == "cancelled" for x in st):
                self.certificate(uid, 100 * n, "cancelled_flight", "cancelled/right")
                self.certificate(uid, 100 * (n + 1), "cancelled_flight", "cancelled/more")
            if any(x.get("status") == "delayed" for x in st):
                self.certificate(uid, 50 * n, "delayed_flight", "delayed/right")
                self.certificate(uid, 100 * n, "delayed_flight", "delayed/as-cancelled")
            if any(x.get("status") == "landed" and x.get("actual_arrival_time_est")
                   for x in st) and self.rng.random() < 0.3:
                self.certificate(uid, 50 * n, "delayed_flight", "delayed/landed")
        if user["reservations"] and self.rng.random() < 0.3:
            r = self.d["reservations"].get(self.rng.choice(user["reservations"]))
            if r is not None:
                ground = self.rng.choice(("cancelled_flight", "delayed_flight"))
                unit = 100 if ground == "cancelled_flight" else 50
                self.certificate(uid, unit * len(r["passengers"]), ground, "random-reservation")
                if self.rng.random() < 0.3:
                    self.add("certificate/no-complaint", "send_certificate",
                             {"user_id": uid, "amount": unit * len(r["passengers"])}, uid,
                             dict(YES))

    def certificate(self, uid: str, amount: int, ground: str, kind: str) -> None:
        self.add("certificate/" + kind, "send_certificate", {"user_id": uid, "amount": amount},
                 uid, {**YES, "airline:compensationRequested": ground})

    def booking(self, uid: str, user: dict[str, Any]) -> None:
        rng = self.rng
        nums = sorted(self.d["flights"])
        for _ in range(20):  # a flight available on some date
            num = rng.choice(nums)
            dates = self.avail_dates(num)
            if dates:
                break
        else:
            return
        f = self.d["flights"][num]
        date = rng.choice(dates)
        flights = [{"flight_number": num, "date": date}]
        kind = rng.choice(("one_way", "one_way", "round_trip", "one_stop"))
        origin, destination, ftype = f["origin"], f["destination"], "one_way"
        if kind == "round_trip":
            back = [(n, dt) for n in self.by_route[(destination, origin)]
                    for dt in self.avail_dates(n) if dt >= date]
            if back:
                n, dt = rng.choice(back)
                flights.append({"flight_number": n, "date": dt})
                ftype = "round_trip"
        elif kind == "one_stop":
            nxt = [n for n in self.by_origin[destination]
                   if self.d["flights"][n]["destination"] != origin and self.available(n, date)]
            if nxt:
                n = rng.choice(nxt)
                flights.append({"flight_number": n, "date": date})
                destination = self.d["flights"][n]["destination"]
        shown_destination = destination
        tag = kind
        if ftype == "one_way" and len(flights) == 1 and rng.random() < 0.05:
            ftype, tag = "round_trip", kind + "/labelled-round-trip"
        elif rng.random() < 0.04:  # a second flight that does not leave from the first's end
            away = [n for n in nums if self.d["flights"][n]["origin"] not in (
                destination, origin) and self.available(n, date)]
            if away:
                flights.append({"flight_number": rng.choice(away), "date": date})
                tag = kind + "/disconnected"
        if rng.random() < 0.08:  # the trip named is not the flights'
            shown_destination = rng.choice(sorted({x["destination"] for x in
                                                   self.d["flights"].values()} - {destination}))
            tag += "/wrong-destination"
        pax_n = rng.choice((0, 1, 1, 1, 1, 2, 2, 3, 4, 5, 6))
        cabin = rng.choice(oracle.CABINS)
        seats = min(self.d["flights"][s["flight_number"]]["dates"][s["date"]]
                    ["available_seats"][cabin] for s in flights)
        if seats < pax_n and rng.random() < 0.8:
            pax_n = max(1, min(pax_n, seats))
        free = oracle.FREE[user["membership"]][cabin] * pax_n
        total_bags = rng.choice((0, 0, 1, 2, 3, 4, 6))
        nonfree = max(0, total_bags - free)
        bag_tag = "bags-right"
        if rng.random() < 0.15:
            nonfree, bag_tag = (total_bags, "bags-all-charged") if total_bags else (
                1, "bags-phantom")
        insurance = rng.choice(("yes", "no"))
        price = sum(self.d["flights"][s["flight_number"]]["dates"][s["date"]]["prices"][cabin]
                    for s in flights) * pax_n + 30 * pax_n * (insurance == "yes") + 50 * nonfree
        methods = user["payment_methods"]
        by = defaultdict(list)
        for pid in sorted(methods):
            by[methods[pid]["source"]].append(pid)
        mix = rng.choice(("cc", "gc", "cert+cc", "cert", "2gc", "4gc", "2cc", "2cert",
                          "gc+cc", "cert+gc+cc", "3gc+cc"))
        want = {"cc": mix.count("cc") and (2 if "2cc" in mix else 1),
                "gc": (4 if "4gc" in mix else 3 if "3gc" in mix else 2 if "2gc" in mix
                       else 1 if "gc" in mix else 0),
                "cert": 2 if "2cert" in mix else 1 if "cert" in mix else 0}
        chosen: list[str] = []
        for key, src in (("cert", "certificate"), ("gc", "gift_card"), ("cc", "credit_card")):
            chosen += by[src][: want[key]]
        if not chosen:
            chosen = sorted(methods)[:1]
        left = price
        pays = []
        cards = [p for p in chosen if methods[p]["source"] == "credit_card"]
        for p in chosen:
            m = methods[p]
            if m["source"] == "credit_card":
                continue
            amt = min(m["amount"], left)  # what it holds, at most; a card pays the rest
            pays.append({"payment_id": p, "amount": amt})
            left -= amt
        for i, p in enumerate(cards):
            share = left if i == len(cards) - 1 else left // 2
            pays.append({"payment_id": p, "amount": share})
            left -= share
        pays = [p for p in pays if p["amount"] > 0] or pays
        passengers = [{"first_name": f"P{i}", "last_name": user["name"]["last_name"],
                       "dob": "1990-01-01"} for i in range(pax_n)]
        self.add(f"book/{tag}/{mix}/{bag_tag}/pax{min(pax_n, 6)}", "book_reservation",
                 {"user_id": uid, "origin": origin, "destination": shown_destination,
                  "flight_type": ftype, "cabin": cabin, "flights": flights,
                  "passengers": passengers, "payment_methods": pays,
                  "total_baggages": total_bags, "nonfree_baggages": nonfree,
                  "insurance": insurance}, uid, self.said())


    # conversations: several writes in a row, each judged on the database the earlier ones
    # left (what one call on the benchmark's database cannot reach) ------------------------
    def call(self, kind: str, tool: str, args: dict[str, Any], uid: str,
             said: dict[str, str] | None = None) -> dict[str, Any]:
        self.add(kind, tool, args, uid, said)
        return self.calls.pop()

    def sequences(self) -> list[list[dict[str, Any]]]:
        d, rng = self.d, self.rng
        seqs: list[list[dict[str, Any]]] = []
        for rid in sorted(d["reservations"]):
            r = d["reservations"][rid]
            uid = r["user_id"]
            user = d["users"][uid]
            n = len(r["passengers"])
            st = [d["flights"][x["flight_number"]]["dates"].get(x["date"], {}).get("status")
                  for x in r["flights"]]
            cards = [p for p in sorted(user["payment_methods"])
                     if user["payment_methods"][p]["source"] in ("credit_card", "gift_card")]
            if not cards:
                continue
            card = cards[0]
            segs = [{"flight_number": x["flight_number"], "date": x["date"]}
                    for x in r["flights"]]
            cert = {"user_id": uid, "amount": 50 * n}
            delayed = {**YES, "airline:compensationRequested": "delayed_flight"}
            if "delayed" in st:
                reason = "health" if r["insurance"] == "yes" else "change_of_plan"
                seqs.append([
                    self.call("seq/cancel-delayed", "cancel_reservation",
                              {"reservation_id": rid}, uid,
                              {"airline:cancellationReason": reason}),
                    self.call("seq/cancel-delayed/then-certificate", "send_certificate",
                              cert, uid, delayed)])
                i = st.index("delayed")
                x = r["flights"][i]
                alts = [(m, dt) for m in self.by_route[(x["origin"], x["destination"])]
                        for dt in (x["date"], "2024-05-16") if (m, dt) != (
                            x["flight_number"], x["date"]) and self.available(m, dt)]
                if alts and r["cabin"] != "basic_economy":
                    m, dt = rng.choice(alts)
                    new = [dict(y) for y in segs]
                    new[i] = {"flight_number": m, "date": dt}
                    seqs.append([
                        self.call("seq/change-delayed", "update_reservation_flights",
                                  {"reservation_id": rid, "cabin": r["cabin"], "flights": new,
                                   "payment_id": card}, uid, YES),
                        self.call("seq/change-delayed/then-certificate", "send_certificate",
                                  cert, uid, delayed)])
            if "cancelled" in st:
                c = {"user_id": uid, "amount": 100 * n}
                ground = {**YES, "airline:compensationRequested": "cancelled_flight"}
                seqs.append([self.call("seq/certificate", "send_certificate", c, uid, ground),
                             self.call("seq/certificate/again", "send_certificate", c, uid,
                                       ground)])
                seqs.append([
                    self.call("seq/cancel-cancelled", "cancel_reservation",
                              {"reservation_id": rid}, uid,
                              {"airline:cancellationReason": "airline_cancelled"}),
                    self.call("seq/cancel-cancelled/then-certificate", "send_certificate", c,
                              uid, ground)])
                others = [o for o in user["reservations"] if o != rid and o in d["reservations"]
                          and len(d["reservations"][o]["passengers"]) == n and any(
                              d["flights"][y["flight_number"]]["dates"].get(y["date"], {})
                              .get("status") == "cancelled"
                              for y in d["reservations"][o]["flights"])]
                if others:
                    seqs.append([
                        self.call("seq/certificate-two-reservations", "send_certificate", c,
                                  uid, ground),
                        self.call("seq/certificate-two-reservations/second", "send_certificate",
                                  c, uid, ground)])
            if any(x != "available" for x in st) or rng.random() > 0.25:
                continue
            up = "business" if r["cabin"] != "business" else "economy"
            change = self.call(f"seq/cabin-{up}", "update_reservation_flights",
                               {"reservation_id": rid, "cabin": up, "flights": segs,
                                "payment_id": card}, uid, YES)
            # bags after the change of cabin, at the new cabin's allowance or the old one's
            k = rng.choice((1, 2, 3))
            which = rng.choice((up, r["cabin"]))
            free = oracle.FREE[user["membership"]][which] * n
            total = r["total_baggages"] + k
            seqs.append([change, self.call(
                f"seq/cabin-{up}/then-bags-at-{'new' if which == up else 'old'}-allowance",
                "update_reservation_baggages",
                {"reservation_id": rid, "total_baggages": total,
                 "nonfree_baggages": max(r["nonfree_baggages"], total - free, 0),
                 "payment_id": card}, uid, YES)])
            reason = rng.choice(("change_of_plan", "other"))
            seqs.append([change, self.call(f"seq/cabin-{up}/then-cancel-{reason}",
                                           "cancel_reservation", {"reservation_id": rid}, uid,
                                           {"airline:cancellationReason": reason})])
            x = r["flights"][0]
            alts = [m for m in self.by_route[(x["origin"], x["destination"])]
                    if m != x["flight_number"] and self.available(m, x["date"])]
            if alts:
                new = [dict(y) for y in segs]
                new[0] = {"flight_number": rng.choice(alts), "date": x["date"]}
                seqs.append([
                    self.call("seq/change-no-delay", "update_reservation_flights",
                              {"reservation_id": rid, "cabin": r["cabin"], "flights": new,
                               "payment_id": card}, uid, YES),
                    self.call("seq/change-no-delay/then-delay-certificate", "send_certificate",
                              cert, uid, delayed)])
            if r["cabin"] == "basic_economy":
                up = "economy"
                change = self.call(f"seq/cabin-{up}", "update_reservation_flights",
                                   {"reservation_id": rid, "cabin": up, "flights": segs,
                                    "payment_id": card}, uid, YES)
            if alts:
                named = rng.choice((up, r["cabin"]))
                seqs.append([change, self.call(
                    f"seq/cabin-{up}/then-flights-named-{'new' if named == up else 'old'}",
                    "update_reservation_flights",
                    {"reservation_id": rid, "cabin": named, "flights": new,
                     "payment_id": card}, uid, YES)])
            bag = {"reservation_id": rid, "payment_id": card}
            t1 = r["total_baggages"] + 1
            free = oracle.FREE[user["membership"]][r["cabin"]] * n
            nf1 = max(r["nonfree_baggages"], t1 - free, 0)
            seqs.append([
                self.call("seq/bag", "update_reservation_baggages",
                          {**bag, "total_baggages": t1, "nonfree_baggages": nf1}, uid, YES),
                self.call("seq/bag/then-bag", "update_reservation_baggages",
                          {**bag, "total_baggages": t1 + 1,
                           "nonfree_baggages": max(nf1, t1 + 1 - free, 0)}, uid, YES)])
        for uid in sorted(d["users"])[::5]:
            user = d["users"][uid]
            before = len(self.calls)
            self.booking(uid, user)
            book = self.calls.pop() if len(self.calls) > before else None
            if book is None or "bags-right" not in book["kind"] or any(
                    w in book["kind"] for w in ("wrong", "disconnected", "labelled", "pax0")):
                continue
            reason = rng.choice(REASONS)
            seqs.append([book, self.call(f"seq/book/then-cancel-{reason}",
                                         "cancel_reservation", {"reservation_id": "HATHAT"},
                                         uid, {"airline:cancellationReason": reason})])
        return seqs


# --- an agent's own calls: a τ-bench trajectories file -------------------------------------

#: what the customer said, read from their messages before the call (crude keywords: the
#: same statements go to both judges, so a disagreement is about the rules, not the facts)
REASON_WORDS = (("airline_cancelled", ("airline cancel", "cancelled by the airline",
                                       "flight was cancelled", "flight got cancelled",
                                       "flight has been cancelled")),
                ("health", ("sick", "ill", "health", "hospital", "medical", "unwell")),
                ("weather", ("weather", "storm", "hurricane", "snow")),
                ("change_of_plan", ("change of plan", "change in plan", "plans changed",
                                    "plan changed", "change my plan", "no longer need",
                                    "don't need", "do not need")))


def said_before(messages: list[dict[str, Any]], tool: str) -> dict[str, str]:
    text = " ".join(str(m.get("content") or "") for m in messages
                    if m.get("role") == "user").lower()
    said = {"airline:confirmed": "yes"}
    if tool == "cancel_reservation":
        said["airline:cancellationReason"] = next(
            (reason for reason, words in REASON_WORDS if any(w in text for w in words)),
            "other")
    if tool == "send_certificate":
        said["airline:compensationRequested"] = (
            "delayed_flight" if "delay" in text else "cancelled_flight")
    return said


def trajectory_conversations(path: Path) -> list[list[dict[str, Any]]]:
    """Each trajectory's write calls, as the agent made them, with what the customer said
    before each (``said_before``); the customer is the task's user."""
    out = []
    for t_index, t in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        uid = t["info"]["task"]["user_id"]
        seq = []
        for m_index, m in enumerate(t["traj"]):
            for tc in m.get("tool_calls") or []:
                name = tc["function"]["name"]
                if name not in oracle.TOOLS:
                    continue
                try:
                    args = json.loads(tc["function"]["arguments"])
                except ValueError:
                    continue
                seq.append({"kind": f"trajectory/{t_index}/{name}", "tool": name,
                            "args": args, "customer": f"customer:{uid}",
                            "said": said_before(t["traj"][:m_index], name),
                            "n": len(seq)})
        if seq:
            out.append(seq)
    return out


def for_another(calls: list[dict[str, Any]], users: list[str], seed: int) -> list[dict[str, Any]]:
    """A few of the calls made for another customer than the one they act on."""
    rng = random.Random(seed + 2)
    out = []
    for c in calls[::40]:
        other = rng.choice(users)
        if c["customer"] != f"customer:{other}":
            out.append({**c, "kind": "another-customer/" + c["kind"],
                        "customer": f"customer:{other}"})
    return out


def generate(data: dict[str, Any], seed: int) -> tuple[list[dict[str, Any]],
                                                      list[list[dict[str, Any]]]]:
    g = Gen(data, seed)
    for rid in sorted(data["reservations"]):
        g.reservation(rid)
    for uid in sorted(data["users"]):
        g.user(uid)
    g.calls += for_another(g.calls, sorted(data["users"]), seed)
    seqs = g.sequences()
    for n, c in enumerate([*g.calls, *(c for seq in seqs for c in seq)]):
        c["n"] = n
    seqs = [[dict(c) for c in seq] for seq in seqs]  # a call shared by two conversations
    return g.calls, seqs


# --- the pack -------------------------------------------------------------------------------

class Pack:
    """The pack's fast path: the API's dry run, then the validator's rules."""

    def __init__(self, home: testing.PackHome, db_file: Path) -> None:
        self.home = home
        e = home.entry
        self.api_writes = e("api:WRITES")
        self.view = e("api:View")
        self.findings = e("rules:findings")
        self.call = e("rules:Call")
        self.created_at = e("tools:created_at_of")
        self.now = e("db:DEFAULT_NOW")
        self.db = e("db:AirlineDB")(db_file)

    def judge(self, c: dict[str, Any], db: Any = None) -> tuple[str, list[str]]:
        with (db or self.db).reading() as conn:
            v = self.view(conn, self.created_at(self.now))
            answer = self.api_writes[c["tool"]](v, **c["args"])
            if answer.startswith("Error"):
                return "api_error", [answer]
            call = self.call(tool=c["tool"], args=c["args"], on_behalf_of=c["customer"],
                             said=c["said"], hearsay={}, now=self.now)
            found = self.findings(self.view(conn, self.created_at(self.now)), call)
        if not found:
            return "respects", []
        return "breaks", sorted({f.code for f in found})

    def apply(self, db_file: Path, c: dict[str, Any]) -> None:
        """The call's API run on the database (whatever the verdict: the conversation goes
        on from what the benchmark's trajectory would see)."""
        conn = sqlite3.connect(db_file)
        try:
            v = self.view(conn, self.created_at(self.now))
            if not self.api_writes[c["tool"]](v, **c["args"]).startswith("Error"):
                v.flush()
                conn.commit()
        finally:
            conn.close()

    def conversation(self, template: Path, tmp: Path, seq: list[dict[str, Any]],
                     data: dict[str, Any], api: Any) -> list[dict[str, Any]]:
        db_file = tmp / "conversation.sqlite"
        db_file.unlink(missing_ok=True)
        copy_db(template, db_file)
        db = self.db.__class__(db_file)
        rows, history = [], []
        for c in seq:
            verdict, codes = self.judge(c, db)
            o = oracle.judge(data, c["tool"], c["args"], c["customer"], c["said"], api=api,
                             history=history)
            rows.append({**c, "pack": verdict, "codes": codes, "oracle": o.kind,
                         "sentence": o.sentence, "detail": o.detail})
            rid = c["args"].get("reservation_id")
            before = deepcopy(data["reservations"].get(rid)) if isinstance(rid, str) else None
            answer, data = oracle.apply(api, data, c["tool"], c["args"])
            if not answer.startswith("Error"):
                history.append({"tool": c["tool"], "args": c["args"], "before": before})
            self.apply(db_file, c)
        return rows


def submit_fresh(template: Path, tmp: Path, c: dict[str, Any], i: int) -> tuple[str, list[str]]:
    """One call through ``Runtime.submit`` on a fresh copy of the database."""
    from cradle_kg.packs.sdk import Agent, Permission, RuntimeConfig

    agent = "agent:airline-assistant"
    cfg = RuntimeConfig(agents=(Agent(id=agent, role="airline-assistant"),),
                        permissions=tuple(Permission(subject=agent, action_type="airline.*",
                                                     resource_selector=t)
                                          for t in ("reservation:*", "customer:*", "airline:*")))
    home = tmp / f"confirm-{i}"
    target = home / "travel-airline" / "airline.sqlite"
    target.parent.mkdir(parents=True)
    shutil.copyfile(template, target)
    with testing.pack_home(HERE, home, config=cfg) as h:
        proposal = h.entry("examples_runner:proposal")
        summary = h.entry("examples_runner:summary")
        got = summary(h.runtime.submit(proposal(
            {"tool": c["tool"], "arguments": c["args"], "on_behalf_of": c["customer"],
             "facts": sorted(c["said"].items())})))
    if got["status"] == "executed":
        return "respects", []
    if got["status"] == "verification_failed" and str(got["output"]).startswith("Error"):
        return "api_error", [str(got["output"])]
    return "breaks", sorted(got["codes"])


def copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite database (its WAL included)."""
    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()


def load(data_dir: Path) -> dict[str, Any]:
    return {name: json.loads((data_dir / f"{name}.json").read_text(encoding="utf-8"))
            for name in ("users", "reservations", "flights")}


def classes(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["pack"] == r["oracle"]:
            continue
        key = (f"{r['tool']} | pack {r['pack']} {','.join(r['codes'])[:60]} | oracle "
               f"{r['oracle']} {r['sentence'][:70]}")
        out[key].append(r)
    return out


def run(args: argparse.Namespace) -> Iterator[str]:
    data = load(args.data)
    api = oracle.load_benchmark_tools(args.tau)
    calls, seqs = generate(data, args.seed)
    if args.trajectories:  # an agent's own calls instead of generated ones
        calls, seqs = [], trajectory_conversations(args.trajectories)
    with tempfile.TemporaryDirectory(prefix="airline-audit-") as tmp_name:
        tmp = Path(tmp_name)
        home = tmp / "home"
        with testing.pack_home(HERE, home) as h:
            db_file = h.entry("db:db_path")(home)
            h.entry("db:AirlineDB")(db_file).load(args.data, h.entry("db:DEFAULT_NOW"))
            pack = Pack(h, db_file)
            rows = []
            for c in calls:
                verdict, codes = pack.judge(c)
                o = oracle.judge(data, c["tool"], c["args"], c["customer"], c["said"],
                                 api=api)
                rows.append({**c, "pack": verdict, "codes": codes, "oracle": o.kind,
                             "sentence": o.sentence, "detail": o.detail})
            template = tmp / "template.sqlite"
            copy_db(db_file, template)
            for seq in seqs:
                rows += pack.conversation(template, tmp, seq, data, api)
        by_tool = Counter(r["tool"] for r in rows)
        yield f"calls generated: {len(rows)} (seed {args.seed}; {len(calls)} alone, " \
              f"{len(rows) - len(calls)} in {len(seqs)} conversations): " + ", ".join(
            f"{t} {n}" for t, n in sorted(by_tool.items()))
        yield "pack: " + ", ".join(f"{k} {v}" for k, v in sorted(
            Counter(r["pack"] for r in rows).items()))
        yield "oracle: " + ", ".join(f"{k} {v}" for k, v in sorted(
            Counter(r["oracle"] for r in rows).items()))
        kinds: dict[str, Counter[str]] = defaultdict(Counter)
        for r in rows:
            head = [*r["kind"].split("/"), ""]
            kinds[f"{head[0]}/{head[1]}"][r["pack"]] += 1
        yield "by kind (the pack's verdicts): " + "; ".join(
            f"{k} " + " ".join(f"{v}:{n}" for v, n in sorted(c.items()))
            for k, c in sorted(kinds.items()))
        notes = Counter(r["detail"] for r in rows if r["detail"].startswith("note:"))
        for note, n in notes.items():
            yield f"oracle {note}: {n}"
        if args.confirm:
            rng = random.Random(args.seed + 1)
            by: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in rows[: len(calls)]:  # calls alone: each on the benchmark's database
                by[f"{r['tool']}/{r['pack']}"].append(r)
            sample = []
            for key in sorted(by):
                sample += rng.sample(by[key], min(len(by[key]), max(
                    3, args.confirm * len(by[key]) // len(rows))))
            same = same_codes = 0
            for i, r in enumerate(sample):
                got = submit_fresh(template, tmp, r, i)
                if got[0] == r["pack"]:
                    same += 1
                    same_codes += got[1] == r["codes"] or r["pack"] == "api_error"
                else:
                    yield f"  Runtime.submit differs on #{r['n']}: {got} vs {r['pack']} " \
                          f"{r['codes']}"
            yield (f"Runtime.submit on a fresh database: {same}/{len(sample)} verdicts "
                   f"identical ({same_codes} with the same reason codes; the others name a "
                   "subset of the findings' codes)")
        dis = classes(rows)
        yield f"disagreements: {sum(len(v) for v in dis.values())} in {len(dis)} classes"
        for key, rs in sorted(dis.items(), key=lambda kv: -len(kv[1])):
            yield f"{len(rs):5d}  {key}"
            for r in rs[: args.show]:
                yield "         " + json.dumps({k: r[k] for k in (
                    "n", "kind", "args", "said", "codes", "detail")})[:600]
        if args.out:
            args.out.write_text(json.dumps([r for rs in dis.values() for r in rs], indent=1),
                                encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--tau", type=Path, required=True,
                    help="a git mirror or checkout of sierra-research/tau-bench")
    ap.add_argument("--seed", type=int, default=20240515)
    ap.add_argument("--confirm", type=int, default=0,
                    help="about this many calls also through Runtime.submit")
    ap.add_argument("--trajectories", type=Path,
                    help="a τ-bench trajectories file (historical_trajectories/…airline.json):"
                         " its agent's writes, conversation by conversation, instead")
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    for line in run(args):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
