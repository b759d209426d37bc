"""Baton: one agent per task, and delivered is never accepted."""
