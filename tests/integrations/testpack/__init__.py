"""test.mcp: a pack of the integration tests (see manifest.yaml)."""
