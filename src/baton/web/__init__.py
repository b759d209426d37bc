"""The HTTP face of Baton: built by `create_app(settings)`, never at import time."""

from .app import create_app

__all__ = ["create_app"]
