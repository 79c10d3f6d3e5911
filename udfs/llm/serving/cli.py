"""The model service's command line: ``llm4schema-serve`` or ``python -m udfs.llm.serving``
``start|stop|status [--config FILE] [--engine E] [--port N]``; a configuration that cannot be used is one
line on stderr and exit status 2."""

import json
import os
import sys
from pathlib import Path
from typing import Any

from udfs.llm import serving
from udfs.llm.serving.config import DEFAULT_SERVING_CONF, ENGINES, load_serving_conf
from udfs.llm.serving.process import host, start, status, stop
from udfs.runtime.config import ConfigError, exit_on_config_error


def main(argv: list[str] | None = None) -> int:
    from udfs.runtime.cli import ArgumentParser, HelpFormatter, check_config_value, fail

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # also when run as the llm4schema-serve script
    prog = "llm4schema-serve" if Path(sys.argv[0]).name == "llm4schema-serve" else "python -m udfs.llm.serving"
    parser = ArgumentParser(
        prog=prog, description=serving.__doc__.split("\n\n")[0], formatter_class=HelpFormatter, allow_abbrev=False
    )
    parser.add_argument(
        "command",
        choices=["start", "stop", "status", "_host"],
        help="start the service (in the background), stop it (only what this user's start of this "
        "host:port began), or print what it serves (_host: the background process itself)",
    )
    parser.add_argument(
        "--config",
        default=str(DEFAULT_SERVING_CONF),
        help="the service's configuration (TOML): engine, models, replicas, port",
    )
    parser.add_argument("--engine", choices=ENGINES, help="override [serving] engine")
    parser.add_argument("--port", type=int, help="override [serving] port")
    args = parser.parse_args(argv)
    check_config_value(prog, args.config)
    overrides: dict[str, dict[str, Any]] = {"serving": {}}
    if args.engine:
        overrides["serving"]["engine"] = args.engine
    if args.port:
        overrides["serving"]["port"] = args.port
    try:
        conf = load_serving_conf(args.config, overrides)
    except ConfigError as exc:
        exit_on_config_error(prog, exc)
    if args.command == "start":
        try:
            url = start(conf, args.config)
        except (RuntimeError, TimeoutError, OSError) as exc:
            fail(prog, f"start: {exc}", code=1)
        print(f"serving {conf.serving.engine} at {url}")
    elif args.command == "_host":
        host(conf)
    elif args.command == "stop":
        said = stop(conf)
        if said:
            print(said)
    else:
        info = status(conf)
        print(json.dumps(info, indent=2))
        return 0 if "models" in info else 1
    return 0
