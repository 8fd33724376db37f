"""Task structure and nonlinearity jointly determine learned representational geometry."""

__all__: list[str] = []
