"""Caligo subgame layer (see DESIGN.md for the layering)."""
