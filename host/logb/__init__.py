"""Logb: a crash-safe, append-only binary format for measurement and bus logs."""

from .errors import (
    CorruptFrameError,
    EncodeError,
    InvalidDataError,
    IndexUnavailableError,
    InvalidSchemaError,
    LinkError,
    LogbError,
    MalformedPayloadError,
    NotFoundError,
    NotLogbError,
    UnreadableInputError,
    UnsupportedCodecError,
    UnsupportedFilterError,
    UnsupportedVersionError,
)
from .framing import detect
from .reader import LogbFile, open
from .schema import Conversion, Field, Schema
from .tables import AxisKind, AxisMode, ByteOrder, Codec, ConversionType, DataType, Filter, FrameType
from .writer import Writer, stream_uuid
from ._backend import current as backend  # "c" or "python" (see logb._backend)

__version__ = "0.1.0"

__all__ = [
    "AxisKind", "AxisMode", "ByteOrder", "Codec", "Conversion", "ConversionType", "CorruptFrameError",
    "DataType", "EncodeError", "Field", "Filter", "FrameType", "IndexUnavailableError", "InvalidDataError",
    "InvalidSchemaError", "LinkError", "LogbError", "LogbFile", "MalformedPayloadError", "NotFoundError",
    "NotLogbError", "Schema", "UnreadableInputError", "UnsupportedCodecError", "UnsupportedFilterError",
    "UnsupportedVersionError", "Writer", "backend", "detect", "open", "stream_uuid",
]
