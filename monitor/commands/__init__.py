"""One module per `rankmon` subcommand; each exposes `register(subparsers)`.

`register` adds the subcommand's parser and sets its `handler`, a function taking the parsed
arguments and returning the exit code.
"""
