"""travel.airline — the τ-bench airline policy, enforced before the API runs (see README)."""
