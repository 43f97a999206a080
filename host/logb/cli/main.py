"""Entry point of the `logb` command, and the one place where an error that
stops a command becomes its documented exit status and message."""

import argparse
import sys
from importlib import metadata

from ..errors import (LakeBusyError, LinkError, LogbError, NotFoundError, NothingToDecodeError, NotLogbError,
                      TransferError, TransferInterrupted, UnsupportedVersionError, UsageError)
from . import (cat, dbc, decode, dump, export, flash, import_, info, lake, plot, pull, record, recover_fat, replay,
               stats, tail, transport, verify)
from .common import (EXIT_BUSY, EXIT_DAMAGED, EXIT_INTERRUPTED, EXIT_NO_DEVICE, EXIT_NOT_LOGB, EXIT_OK,
                     EXIT_UNSUPPORTED, EXIT_USAGE)

COMMANDS = {"info": info, "verify": verify, "dump": dump, "cat": cat, "export": export, "dbc": dbc, "decode": decode,
            "import": import_, "stats": stats, "plot": plot, "pull": pull, "tail": tail, "record": record,
            "replay": replay, "transport": transport, "flash": flash, "recover-fat": recover_fat, "lake": lake}

EPILOG = """\
the common path, with a trace and a DBC (every reading command takes a candump
.log, ASC, BLF, TRC or MF4 trace as it is, or a .logb file):
  logb info drive.blf                                what it holds: buses, ids, span
  logb decode drive.blf --dbc vehicle.dbc -o sig.csv     signals to a table (.parquet)
  logb plot drive.blf --dbc vehicle.dbc EngineSpeed -o speed.html      (.png, .svg)
  logb stats drive.blf                               per id: period, jitter; bus load
  logb transport truck.log --j1939                   J1939 TP and ISO-TP reassembled
  logb import drive.blf --dbc vehicle.dbc -o drive.logb      as Logb, DBC attached
  logb record -i socketcan -c can0 -o live.logb      a live bus (python-can)

exit status: 0 success/intact, 1 damaged or truncated input, 2 not a Logb
file, 3 unsupported Logb version, 4 intact but its writer states data its
medium did not take (verify: logb.lost.sink), 64 usage error, 65 no mpy-cross
for the board (flash), 69 no logger answers (pull, tail, flash) or the CAN bus
cannot be opened or failed (record, replay), 73 the board's filesystem is full
(flash), 75 another run is writing the lake (lake), 130 interrupted (pull, replay).
Run `logb COMMAND --help` for each command's details."""

# The exit status of each error that stops a command; the first match wins,
# so a subclass comes before its base.
EXIT_STATUS = (
    (NotLogbError, EXIT_NOT_LOGB),
    (UnsupportedVersionError, EXIT_UNSUPPORTED),
    (LinkError, EXIT_NO_DEVICE),
    (LakeBusyError, EXIT_BUSY),
    (TransferError, EXIT_DAMAGED),  # a pull or tail under way failed for good
    (TransferInterrupted, EXIT_INTERRUPTED),
    (NothingToDecodeError, EXIT_DAMAGED),  # the input falls short
    (NotFoundError, EXIT_USAGE),  # a stream, bus, message or signal the caller named
    (UsageError, EXIT_USAGE),
    (LogbError, EXIT_DAMAGED),  # damaged or rejected input
)

# The optional dependencies, by import name, and the extra (host/pyproject.toml) that installs each.
EXTRA_OF = {"cantools": "can", "can": "can", "asammdf": "can", "matplotlib": "can", "pyarrow": "parquet",
            "dask": "lake", "distributed": "lake"}


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 64 (EX_USAGE): argparse's 2 means "not a Logb file" here."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def package_version():
    try:
        return metadata.version("logb")
    except metadata.PackageNotFoundError:  # run from a source tree pip did not install
        return "unknown (not installed)"


class _Version(argparse.Action):
    """--version, the installed version looked up only when asked for (a metadata lookup takes ~1 ms)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0,
                         help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(f"logb {package_version()}\n")
        parser.exit()


def build_parser(command=None):
    """The `logb` parser; `command`: the one subcommand to build it with (the
    command line names it), else all of them. Building every subcommand's
    parser takes ~10 ms that a command pays before it starts."""
    p = _Parser(
        prog="logb",
        description="Record, read, check, dump, concatenate, export and replay Logb recordings.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, mod in COMMANDS.items():
        if command is not None and name != command:
            continue
        sp = sub.add_parser(name, help=mod.HELP, description=mod.DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(module=mod)
    return p


def named_command(argv):
    """The subcommand `argv` names, or None: the first word that is no option
    (logb's own options take no value), when it is a command."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def failure(exc):
    """(exit status, message) for an error that stops a command, or None for
    one that is a bug (it keeps its traceback)."""
    for kind, status in EXIT_STATUS:
        if isinstance(exc, kind):
            return status, str(exc)
    missing = (getattr(exc, "name", None) or "").partition(".")[0]
    if isinstance(exc, ModuleNotFoundError) and missing in EXTRA_OF:
        return EXIT_USAGE, f"{exc}; install it with: pip install 'logb[{EXTRA_OF[missing]}]'"
    if isinstance(exc, OSError) and exc.filename is not None:  # a path the command was given
        return EXIT_USAGE, f"{exc.filename}: {exc.strerror}"
    return None


def main(argv=None, out=None):
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(named_command(argv)).parse_args(argv)
    try:
        return args.module.run(args, out or sys.stdout)
    except BrokenPipeError:  # whoever read stdout stopped (`logb dump … | head`)
        return EXIT_OK
    except Exception as exc:
        failed = failure(exc)
        if failed is None:
            raise
        status, message = failed
        print(f"logb {args.command}: {message}", file=sys.stderr)
        return status


if __name__ == "__main__":
    sys.exit(main())
