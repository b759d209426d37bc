"""A stand-in GitHub for end-to-end tests and `baton demo`."""
