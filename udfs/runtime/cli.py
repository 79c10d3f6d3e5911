"""What every command line of the project shares: one error style, one help formatter, one
``--config`` option.

* :func:`fail`: a usage or input error (a bad file, a service that does not answer, a missing
  table) is one line ``<prog>: error: <message>`` on stderr and a non-zero exit status, the way
  argparse reports its own errors; never a traceback. :func:`error` is the same line for one
  bad file among several: the command goes on with the others and exits non-zero at the end.
* :func:`json_lines_out`: commands that print JSON lines never stop on a string UTF-8 cannot
  encode.
* :class:`HelpFormatter`: module docstrings keep their usage examples as written (raw
  description) and every flag's help ends with its default.
* :func:`check_config_value`: ``--config`` names the TOML file of a command's defaults. Spark users
  know ``--conf KEY=VALUE`` as a Spark setting, so a ``--config`` value with ``=`` in it is taken
  for one and answered with a hint to use ``--spark-conf``.
* :class:`ArgumentParser`: every command's parser. A usage error never echoes a secret: argparse
  quotes what it could not use ("unrecognized arguments: --api-k sk-..."), and a mistyped key flag
  would otherwise put the key on stderr and from there into CI logs.
"""

from __future__ import annotations

import argparse
import re
import sys
import typing
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

USAGE_ERROR = 2  # argparse's exit status for a usage error


def error(prog: str, message: str) -> None:
    """Print ``<prog>: error: <message>`` (first line of the message only) on stderr and go on:
    a command over several files reports a bad one this way (``<prog>: error: FILE: reason``),
    reads the others, and exits non-zero at the end."""
    first = str(message).strip().splitlines()[0] if str(message).strip() else "failed"
    print(f"{prog}: error: {first}", file=sys.stderr)


def fail(prog: str, message: str, code: int = USAGE_ERROR) -> typing.NoReturn:
    """Print ``<prog>: error: <message>`` (first line of the message only) on stderr and exit with
    ``code``."""
    error(prog, message)
    raise SystemExit(code)


def json_lines_out() -> None:
    """Let standard output take every string a JSON line may hold: JSON text can carry a lone
    surrogate as an escape (``"\\ud800"``), which UTF-8 cannot encode; it is written back as that
    same escape instead of stopping the command with a traceback."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description as written (usage examples keep their lines) and each flag's default
    after its help; a flag without a default (a required one, or one whose absence means "not
    given") shows none rather than "(default: None)"."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.required:
            return action.help
        return super()._get_help_string(action)


def config_hint(value: str) -> str | None:
    """Why ``value`` cannot be a ``--config`` file (it looks like a Spark ``KEY=VALUE`` setting),
    or None."""
    if "=" in value:
        return (
            f"--config {value!r} looks like a Spark setting; --config takes the pipeline's TOML "
            f"file, a Spark setting goes to --spark-conf KEY=VALUE"
        )
    return None


def check_config_value(prog: str, value: str) -> None:
    """Stop with the one-line hint of :func:`config_hint` when ``value`` is a Spark setting."""
    hint = config_hint(value)
    if hint:
        fail(prog, hint)


# A flag whose name holds one of these (in any case) takes a secret: --api-key, --api_key, --api-k,
# --apikey, --key, --token, --tokn, --password, --pasword, --secret, --auth, --credentials... Loose on
# purpose: the flag is mistyped, and hiding a harmless value in an error costs nothing.
SECRET_FLAG_NAME = re.compile(r"key|tok|secr|pas|pwd|auth|cred|bear|cook|api", re.IGNORECASE)
# Values that are secrets whichever flag (or none) they follow: the key formats of the hosted APIs
# and hubs a user of this project holds (OpenAI-style sk-, Hugging Face hf_, GitHub, Slack, AWS).
SECRET_VALUE = re.compile(r"^(sk-|hf_|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA[0-9A-Z]{12})")
REDACTED = "<redacted>"


def secret_values(argv: typing.Sequence[str]) -> list[str]:
    """The values in ``argv`` a message must not show: the value of every flag whose name looks
    like a secret's (``--flag VALUE`` or ``--flag=VALUE``), whether or not the command has that
    flag, and every word shaped like a known key format."""
    out = []
    for i, a in enumerate(argv):
        a = str(a)
        if SECRET_VALUE.match(a):
            out.append(a)
        if not a.startswith("-") or a == "-":
            continue
        flag, eq, value = a.partition("=")
        if not SECRET_FLAG_NAME.search(flag.lstrip("-")):
            continue
        if eq:
            out.append(value)
        elif i + 1 < len(argv):
            out.append(str(argv[i + 1]))
    return [v for v in dict.fromkeys(out) if v]


def redact(message: str, argv: typing.Sequence[str]) -> str:
    """``message`` with every value of :func:`secret_values` of ``argv`` replaced by
    ``<redacted>``, where it stands as a word of its own (between spaces, quotes, ``=`` or a comma),
    so a short value does not mangle the words around it."""
    for v in sorted(secret_values(argv), key=len, reverse=True):
        message = re.sub(rf"(?<![^\s='\"]){re.escape(v)}(?![^\s'\",])", REDACTED, message)
    return message


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors never show a secret of the command line
    (:func:`redact`): "unrecognized arguments: --api-k <redacted>". Sub-command parsers are of this
    class too. Everything else is argparse's."""

    _argv: tuple[str, ...] = ()

    def parse_known_args(self, args=None, namespace=None):
        # what error() may have to hide: the words this parser was given
        self._argv = tuple(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> typing.NoReturn:
        """A usage error in one line, as every error a user can cause (``--help`` shows the usage)."""
        self.exit(USAGE_ERROR, f"{self.prog}: error: {redact(message, self._argv)} (see --help)\n")


def redact_url(url: str) -> str:
    """``url`` with its secrets replaced by ``<redacted>``: the user and password before the host,
    the value of each query parameter whose name looks like a secret's (key, token, auth...) or
    whose value is shaped like a known key, a path segment shaped like a key; no fragment."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{REDACTED}@{host}" if "@" in parts.netloc else host
    query = [
        (k, REDACTED if SECRET_FLAG_NAME.search(k) or SECRET_VALUE.match(v) else v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    ]
    path = "/".join(REDACTED if SECRET_VALUE.match(seg) else seg for seg in parts.path.split("/"))
    return urlunsplit((parts.scheme, netloc, path, urlencode(query, safe="<>", quote_via=quote), ""))


def redact_urls(value: typing.Any) -> typing.Any:
    """``value`` (a run record's data: dicts, lists, strings) with every URL that carries a user,
    a password or a query redacted by :func:`redact_url`, ``--flag=URL`` words included: a run
    record is shared, its endpoint's credentials are not."""
    if isinstance(value, dict):
        return {k: redact_urls(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_urls(v) for v in value]
    if isinstance(value, str) and "://" in value:
        head, eq, url = value.partition("=") if value.startswith("--") else ("", "", value)
        parts = urlsplit(url)
        secret_query = any(
            SECRET_FLAG_NAME.search(k) or SECRET_VALUE.match(v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        )
        # a URL without a secret stays byte for byte (a key may hold '?' as a character)
        if parts.scheme and ("@" in parts.netloc or secret_query):
            return head + eq + redact_url(url)
    return value
