"""Views: widgets that draw data (video, plots, coverage strip, ops table, an elided line of text)."""
