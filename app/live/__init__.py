"""The controller layer the window drives: pipeline lifecycle, A/B, recording sessions. Qt-free."""
