"""Session reports: recordings and sweeps turned into HTML or PNG pages."""
