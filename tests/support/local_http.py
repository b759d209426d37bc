"""One HTTP client for the tests' own calls to Baton and the stand-in GitHub. Building a client loads the CA
certificates (about 20 ms of CPU): a test that polls every 20 ms with `httpx.get` spends a core on that alone."""

from __future__ import annotations

import httpx

HTTP = httpx.Client(timeout=10)
