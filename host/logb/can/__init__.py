"""CAN bus on Logb: the stream layouts every tool agrees on (layout.py), DBC
compilation, decoding, and python-can formats in and out."""
