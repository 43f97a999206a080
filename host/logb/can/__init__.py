"""CAN bus on Logb: the stream layouts every tool agrees on (layout.py), DBC
compilation, decoding, and the trace formats in and out (formats/, one module
per format behind formats.REGISTRY)."""
