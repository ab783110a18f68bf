"""Caligo web layer (see DESIGN.md for the layering)."""
