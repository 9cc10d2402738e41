"""`python -m cli`: the `planagents` command."""

from cli.main import main

main()
