"""What a user calls: `show()`, `compare()`, the `%%stream` magic, the command line, the class log
and the terminal printer. Each module is imported on its own (the command line never loads the
notebook stack); the public names are exported, lazily, by the top-level package."""
