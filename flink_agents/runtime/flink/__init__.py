"""Host 2: the Flink keyed ProcessFunction, its state and the environment wiring.

Only this package imports ``pyflink``.
"""
