"""The per-user supervisor daemon: socket server, wire protocol, actor supervision."""
