"""paperkit's runner ring: the report (run every claim of a paper), the `iclr24` umbrella command and the
test helpers every package uses. It imports the core and the data ring; the core imports neither."""
