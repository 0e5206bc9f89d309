"""``python -m rates`` is the same as the ``rates`` console script."""

from cli.app import main

main()
