"""The two gates: pre-execution (gate 1) and post-execution (gate 2)."""
