"""Independent verifiers of the pack."""
