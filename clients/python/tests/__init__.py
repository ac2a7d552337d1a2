"""The package tests (they start a real memory serve)."""
