"""Caligo experiments layer (see DESIGN.md for the layering)."""
