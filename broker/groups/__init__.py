"""broker.groups package."""
