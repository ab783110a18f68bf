"""Caligo core layer (see docs/design.md for the layering)."""
