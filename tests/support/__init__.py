"""What the tests share: scenes of Baton and the stand-in GitHub, keys, payloads, databases, processes.

A test module imports from here, never from another test module (tests/unit/test_architecture.py checks it)."""
