"""On the Generalization and Approximation Capacities of Neural Controlled Differential Equations."""

__all__: list[str] = []
