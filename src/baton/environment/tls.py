"""The TLS settings of every HTTPS call Baton makes (to GitHub, or as an agent to a Baton server), made once
per process: loading the CA certificates costs about 20 ms, which a client built per call would pay each
time."""

from __future__ import annotations

import functools
import ssl


@functools.cache
def context() -> ssl.SSLContext:
    return ssl.create_default_context()
