"""Closed-world validators of the pack's inputs and graph additions."""
