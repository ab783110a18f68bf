"""Caligo search layer (see DESIGN.md for the layering)."""
