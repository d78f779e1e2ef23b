"""Closed-world validators of the flow rules."""
