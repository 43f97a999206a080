"""`micropython.const` for CPython: the identity (MicroPython's compiler folds
`X = const(...)` itself and never imports this)."""


def const(expr):
    return expr
