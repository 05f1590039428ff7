"""``python -m cli``: the same as the ``agent-assist`` command."""

from cli.main import main

main()
