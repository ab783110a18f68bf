"""Caligo core layer (see DESIGN.md for the layering)."""
