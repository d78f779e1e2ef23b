"""A value read out with "oh", "double" or the spelling alphabet keeps its origin.

Finding (tenth attack review; left open by ``test_154``): a value read out a character at a
time is read as one token (``test_154``), but only with single letters, digits and the
digit words: the way people and call transcripts also say them — "oh" for zero, "double
five", "triple nine", the spelling alphabet ("golf bravo two nine …") — broke the run, and
"Call me back on four one five double five five oh one two three" gave ``4155550123`` no
origin at all; the agent's ``send_money(recipient=…)`` to it executed unattended, as did
an IBAN read out as "golf bravo two nine november whiskey bravo kilo …" (3 of 3).

Now "oh" is a zero, "double" and "triple" repeat the next character, and the spelling
alphabet's words (ICAO: ``alfa``/``alpha`` … ``zulu``) are their letters, inside such a
run only — a sentence's ordinary words are not read out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.lineage import normalise

from .test_123_respelled_values import _pay, _waits

IBAN = "GB29NWBK60161331926819"
READ_OUT = {
    "oh-and-double": ("Call me back on four one five double five five oh one two three.",
                      "4155550123"),
    "triple": ("My account number is seven triple nine four oh two one eight, thanks.",
               "799940218"),
    "spelling-alphabet": ("My new IBAN is golf bravo two nine november whiskey bravo kilo six "
                          "zero one six one three three one nine two six eight one nine.",
                          IBAN),
}


@pytest.mark.parametrize("mail,value", list(READ_OUT.values()), ids=list(READ_OUT))
def test_a_value_read_out_in_other_words_has_its_origin(tmp_path: Path, mail: str,
                                                        value: str) -> None:
    # before: executed unattended, the value with no origin
    _waits(*_pay(tmp_path / "home", mail, value))


def test_ordinary_words_are_not_read_out() -> None:
    said = normalise.tokens("Oh, we had a double room at the hotel in India for two nights")
    assert normalise.read_out(said) == []
    assert normalise.read_out(normalise.tokens("double double double double")) == []
