"""Independent verifiers: each re-reads the pack's data files instead of trusting the outcome."""
