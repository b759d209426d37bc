"""`baton demo`: the reference story, played by Baton and the stand-in GitHub (`github_standin`) wired to
each other. The only part of Baton that imports the stand-in."""
