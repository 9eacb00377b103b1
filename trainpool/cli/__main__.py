"""``python -m trainpool.cli``."""

from trainpool.cli import main

main()
