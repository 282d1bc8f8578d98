"""protocol.records package."""
