"""The error taxonomy. Every error a caller can see derives from LogbError.

Truncation is deliberately absent: a cut file is a report (rule 2), not an
exception.
"""


class LogbError(Exception):
    """Root of every Logb error."""


class NotLogbError(LogbError):
    """The input does not start with a valid Logb file header."""


class UnsupportedVersionError(LogbError):
    """The file's major version is one this reader does not know."""


class CorruptFrameError(LogbError):
    """A frame failed its CRC or its framing is impossible (strict mode)."""


class MalformedPayloadError(LogbError):
    """A CRC-valid frame whose payload does not parse (short, bad UTF-8, leftovers)."""


class UnsupportedCodecError(LogbError):
    """A DATA or ATTACH frame uses a codec this reader does not implement."""


class UnsupportedFilterError(LogbError):
    """A DATA frame uses a filter this reader does not implement."""


class InvalidSchemaError(LogbError):
    """A SCHEMA that breaks a rule of the format; its stream is skipped."""


class InvalidDataError(LogbError):
    """A DATA frame whose records cannot be decoded against its schema."""


class EncodeError(LogbError, ValueError):
    """A writer was handed something it cannot encode (a ValueError too, so
    `except ValueError` callers keep working)."""


class UsageError(LogbError):
    """A command was called wrongly (the CLI exits 64)."""


class UnreadableInputError(LogbError):
    """An input that is not a Logb file (a DBC, a CAN trace, a device config)
    does not parse."""


class IndexUnavailableError(LogbError):
    """A sealed file's END -> INDEX path cannot be used (absent or inconsistent);
    the caller falls back to a full scan."""


class NotFoundError(LogbError, LookupError):
    """The input has no such stream, bus, message or signal: a name the caller
    gave, or the one bus a call needs when the input has none or several."""


class UnknownSignalError(NotFoundError):
    """A signal or message name that the DBC or the recording does not have."""


class NothingToDecodeError(NotFoundError):
    """The input has no CAN stream to decode, or raw bus streams and no DBC to
    decode them with: the input falls short, not the call."""


class LinkError(LogbError):
    """The serial link to a logger failed (lost, timed out, or the device said no)."""


class TransferError(LogbError):
    """A pull or tail under way stopped for good: the link lost past
    reconnecting, or the destination not writable (what was verified is kept)."""


class TransferInterrupted(LogbError):
    """Ctrl-C stopped a pull; what was verified is kept for the next one."""


class OutsideRecordingError(NotFoundError):
    """A --window that holds no record: outside the recording, or where the
    chosen messages or ids never occur (the message states the span there is)."""


class FormatMismatchError(UsageError):
    """--format names one trace format and the input's content is another."""


class LakeError(LogbError):
    """A Parquet data lake that is not one, or that a run cannot write (logb.lake)."""


class LakeBusyError(LakeError):
    """Another run holds the lake's write lock."""


def did_you_mean(name, known):
    """' (did you mean 'A' or 'B'?)' for the names of `known` closest to a name that is not
    there (a typo, another case, a signal given without its message or with another one),
    else ''. For the messages that reject an unknown name: the fix is usually one of these."""
    import difflib

    lower = {}  # lowercased name, or signal part of `Message.Signal` -> the names it stands for
    for k in sorted(set(map(str, known))):
        lower.setdefault(k.lower(), []).append(k)
        if "." in k and "." not in name:  # `Signal` against `Message.Signal`
            lower.setdefault(k.rsplit(".", 1)[1].lower(), []).append(k)
    key = str(name).lower()
    close = [key] if key in lower else difflib.get_close_matches(key, lower, n=3, cutoff=0.7)
    close.sort(key=lambda m: (-difflib.SequenceMatcher(None, key, m).ratio(), m))  # ties: by name, not reversed
    hits = list(dict.fromkeys(k for m in close for k in lower[m]))[:4]
    return f" (did you mean {' or '.join(map(repr, hits))}?)" if hits else ""
