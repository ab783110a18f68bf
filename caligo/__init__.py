"""Caligo: subgame solving without common knowledge, and a Fog of War chess engine."""

__version__ = "0.1.0"
