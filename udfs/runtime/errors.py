"""The errors a user can cause and act on, and how a command ends on them.

A :class:`UserError` is bad settings, a bad input, a held lease, an unwritable output or a model
service that does not answer: the command prints one line on stderr (what, where, what to do) and
exits with status 2, argparse's status for a usage error. Every other exception is a bug in the
project: exit status 1 with its traceback. The error classes of the rooms that find such faults
(``ConfigError``, ``InputError``, ``ContractError``, ``LeaseError``...) derive from it, so a job
written tomorrow reports them the same way without being told.
"""

from __future__ import annotations

import os

USER_ERROR = 2  # argparse's exit status for a usage error
INTERNAL_ERROR = 1


class UserError(Exception):
    """An error the user can act on: its message is one line naming what is wrong, where, and
    what to do about it."""


class Refused(UserError):
    """A run refused before its work began, found by the job itself rather than its checks (an
    output holding results of other settings): like a refusal in the checks, it leaves what is
    there as it was, the earlier run's record included."""


class OutputError(UserError):
    """An output location that cannot be written: named with the OS's reason."""


class NothingDone(UserError):
    """A run in which no unit succeeded: it wrote its record, but must not exit 0."""


def debugging(argv: list[str] | None = None) -> bool:
    """Whether a user error should carry its traceback: ``--debug`` on the command line or
    ``LLM4SCHEMA_DEBUG=1`` in the environment."""
    return os.environ.get("LLM4SCHEMA_DEBUG", "") not in ("", "0") or "--debug" in (argv or ())
