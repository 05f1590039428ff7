"""``python -m cli``: the same as the ``agent-assist`` command."""

from cli.entry import main

main()
