"""The UptimeHarbor service: its source, the fixture repository and the environments."""
