"""The ``agent-assist`` command: a thin click adapter and the terminal client."""
