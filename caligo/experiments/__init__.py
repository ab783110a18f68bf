"""Caligo experiments layer (see docs/design.md for the layering)."""
