"""The HS 2022 nomenclature, read from the pack's copy of the UN Comtrade CSV.

Codes are rendered the way the design paper writes them: a chapter ``88``, a heading
``8806``, a subheading ``8806.21``. ``normalise_code`` accepts ``880621``, ``8806.21`` and
``8806 21``. Chapter 99 and ``9999`` / ``999999`` are pseudo-codes and are refused.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
HS_CSV = DATA / "hs2022" / "harmonized-system.csv"
TNVED_JSON = DATA / "eaeu-tnved" / "tnved_group88.json"
_CODE = re.compile(r"^\d{2}(\d{2}(\d{2})?)?$")


@dataclass(frozen=True)
class HsEntry:
    code: str  # digits only, e.g. "880621"
    description: str
    parent: str | None  # digits, None for a chapter
    level: int  # 2, 4 or 6
    section: str


def normalise_code(code: str) -> str | None:
    """Digits-only form of ``code`` or None when it is not shaped like an HS code."""
    digits = re.sub(r"[.\s]", "", code.strip())
    return digits if _CODE.match(digits) else None


def render_code(digits: str) -> str:
    """``880621`` → ``8806.21``; headings and chapters unchanged."""
    return f"{digits[:4]}.{digits[4:]}" if len(digits) == 6 else digits


def is_pseudo(digits: str) -> bool:
    return digits.startswith("99") or digits in {"9999", "999999"}


class Nomenclature:
    """An in-memory index of one nomenclature file."""

    def __init__(self, entries: dict[str, HsEntry]) -> None:
        self._entries = entries

    @classmethod
    def load(cls, path: Path = HS_CSV) -> Nomenclature:
        entries: dict[str, HsEntry] = {}
        with path.open(encoding="utf-8-sig", newline="") as handle:
            for row in csv.DictReader(handle):
                code = row["hscode"]
                if is_pseudo(code):
                    continue
                parent = row["parent"] if row["parent"] != "TOTAL" else None
                entries[code] = HsEntry(
                    code=code,
                    description=row["description"],
                    parent=parent,
                    level=int(row["level"]),
                    section=row["section"],
                )
        return cls(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, code: str) -> HsEntry | None:
        digits = normalise_code(code)
        return self._entries.get(digits) if digits else None

    def exists(self, code: str) -> bool:
        return self.get(code) is not None

    def parent_chain(self, code: str) -> list[HsEntry]:
        """The entry and its ancestors, most specific first."""
        chain: list[HsEntry] = []
        entry = self.get(code)
        while entry is not None:
            chain.append(entry)
            entry = self._entries.get(entry.parent) if entry.parent else None
        return chain

    def children(self, code: str) -> list[HsEntry]:
        digits = normalise_code(code)
        return sorted(
            (e for e in self._entries.values() if e.parent == digits), key=lambda e: e.code
        )


@lru_cache(maxsize=1)
def default_nomenclature() -> Nomenclature:
    return Nomenclature.load()


@lru_cache(maxsize=1)
def _tnved_codes() -> tuple[tuple[str, str], ...]:
    data = json.loads(TNVED_JSON.read_text(encoding="utf-8"))
    out: list[tuple[str, str]] = []
    for heading in data["goods"]:
        for sub in heading.get("subs", []):
            out.append((str(sub["code"]), str(sub["naim"])))
    return tuple(out)


def national_subdivisions(code: str) -> list[dict[str, str]]:
    """EAEU TN VED 10-digit codes under a 6-digit HS subheading (group 88 only)."""
    digits = normalise_code(code)
    if digits is None or len(digits) != 6:
        return []
    return [
        {"code": tn_code, "label": label, "source": "EAEU:TNVED@2022"}
        for tn_code, label in _tnved_codes()
        if tn_code.startswith(digits)
    ]
