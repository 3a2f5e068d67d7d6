"""A whole backup as one file streamed over a port: reading, checking, importing, exporting."""
