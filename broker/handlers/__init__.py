"""broker.handlers package."""
