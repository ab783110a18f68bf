"""Caligo search layer (see docs/design.md for the layering)."""
