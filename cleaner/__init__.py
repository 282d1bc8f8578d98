"""cleaner package."""
