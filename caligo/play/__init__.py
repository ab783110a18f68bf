"""Caligo play layer (see docs/design.md for the layering)."""
