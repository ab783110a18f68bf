"""Caligo play layer (see DESIGN.md for the layering)."""
