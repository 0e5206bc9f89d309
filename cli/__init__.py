"""The `rates` command-line interface (typer). Each command lives in its own module with ``register(app)``."""
