"""Built-in offline data, and loaders for the real datasets from a path the user gives."""
