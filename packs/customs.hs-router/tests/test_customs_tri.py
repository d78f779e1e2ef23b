from __future__ import annotations

import pytest
from customs_hs_router.tri import Cond, Not, Tri, all_of, any_of, evaluate, relevant_unknowns
from hypothesis import given
from hypothesis import strategies as st

tris = st.sampled_from(list(Tri))
maybe_bool = st.one_of(st.none(), st.booleans())


def test_kleene_tables() -> None:
    T, F, U = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN
    assert (T & U, F & U, U & U) == (U, F, U)
    assert (T | U, F | U, U | U) == (T, U, U)
    assert (~T, ~F, ~U) == (F, T, U)


def test_tri_has_no_truth_value() -> None:
    with pytest.raises(TypeError):
        bool(Tri.UNKNOWN)


@given(maybe_bool, maybe_bool)
def test_agrees_with_boolean_logic_when_known(a: bool | None, b: bool | None) -> None:
    x, y = Tri.of(a), Tri.of(b)
    if a is not None and b is not None:
        assert (x & y) is Tri.of(a and b)
        assert (x | y) is Tri.of(a or b)
        assert ~x is Tri.of(not a)


@given(tris, tris, tris)
def test_algebra(a: Tri, b: Tri, c: Tri) -> None:
    assert ~(a & b) is (~a | ~b)
    assert ~(a | b) is (~a & ~b)
    assert (a & b) is (b & a) and (a | b) is (b | a)
    assert (a & (b | c)) is ((a & b) | (a & c))
    assert ~~a is a
    assert (a & Tri.TRUE) is a and (a | Tri.FALSE) is a


@given(maybe_bool, maybe_bool)
def test_unknown_is_sound(a: bool | None, b: bool | None) -> None:
    """An UNKNOWN result is never contradicted by filling in the unknowns either way."""
    expr = any_of(all_of(Cond("a", "==", True), Cond("b", "==", True)), Not(Cond("a", "==", True)))
    result = evaluate(expr, {"a": a, "b": b})
    for fa in [a] if a is not None else [True, False]:
        for fb in [b] if b is not None else [True, False]:
            full = evaluate(expr, {"a": fa, "b": fb})
            assert full is not Tri.UNKNOWN
            if result is not Tri.UNKNOWN:
                assert full is result


def test_relevant_unknowns_skips_decided_branches() -> None:
    expr = all_of(Cond("x", "==", True), any_of(Cond("y", ">", 1), Cond("z", "<", 2)))
    assert relevant_unknowns(expr, {"x": False}) == []  # decided FALSE by x
    assert relevant_unknowns(expr, {"x": True, "y": 5}) == []  # decided TRUE by y
    assert relevant_unknowns(expr, {"x": None, "y": 0}) == ["x", "z"]
    assert relevant_unknowns(expr, {}) == ["x", "y", "z"]


def test_cond_rejects_unknown_operator() -> None:
    with pytest.raises(ValueError):
        Cond("x", "=~", 1)
