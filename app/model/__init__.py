"""A model as the app sees it: its spec and labels, image files, and the pre- and postprocessing around inference."""
