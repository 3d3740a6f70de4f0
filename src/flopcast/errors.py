"""The one error type a user sees: a sentence naming the problem and what is valid."""


class FlopcastError(ValueError):
    """Bad input. The CLI prints the message on one line and exits with code 2."""
