"""Caligo subgame layer (see docs/design.md for the layering)."""
