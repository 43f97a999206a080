"""The `logb` command line: one module per subcommand."""
