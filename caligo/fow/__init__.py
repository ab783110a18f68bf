"""Caligo fow layer (see DESIGN.md for the layering)."""
