"""Readers of the text people write: comment commands, task briefs, the issues a branch or pull request
links, and a repository's `.github/baton.yml`. Pure: standard library, YAML and `baton.domain` only; no I/O."""
