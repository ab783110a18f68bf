"""Caligo agents layer (see DESIGN.md for the layering)."""
