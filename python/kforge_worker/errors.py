"""Exceptions that carry a message meant for the user, not a traceback."""


class UserError(Exception):
    """Something the user gave is wrong (a task file, a flag); the message says what to do."""
