"""cradle-kg: a governed execution runtime for AI agents."""
