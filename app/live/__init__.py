"""The controller layer the window drives, Qt-free: pipeline lifecycle and A/B (controller), recording
sessions (recording), the delegate sweep (sweep), the Ops view's profiler (ops), and the window's
policies: paint deferral (paint), going back to the source that ran (source_trial), events digested
into markers and messages (events), segmentation masks' pixels built off the GUI thread (mask)."""
