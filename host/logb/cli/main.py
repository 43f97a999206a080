"""Entry point of the `logb` command."""

import argparse
import sys

from . import cat, dbc, decode, dump, export, import_, info, plot, pull, stats, tail, verify
from .common import EXIT_USAGE, CliError

COMMANDS = {"info": info, "verify": verify, "dump": dump, "cat": cat, "export": export, "dbc": dbc, "decode": decode,
            "import": import_, "stats": stats, "plot": plot, "pull": pull, "tail": tail}

EPILOG = """\
exit status: 0 success/intact, 1 damaged or truncated input, 2 not a Logb
file, 3 unsupported Logb version, 64 usage error.
Run `logb COMMAND --help` for each command's details."""


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 64 (EX_USAGE): argparse's 2 means "not a Logb file" here."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser():
    p = _Parser(
        prog="logb",
        description="Read, check, dump, concatenate and export Logb recordings.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, mod in COMMANDS.items():
        sp = sub.add_parser(name, help=mod.HELP, description=mod.DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(module=mod)
    return p


def main(argv=None, out=None):
    args = build_parser().parse_args(argv)
    out = out or sys.stdout
    try:
        return args.module.run(args, out)
    except CliError as exc:
        print(f"logb {args.command}: {exc}", file=sys.stderr)
        return exc.code
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
