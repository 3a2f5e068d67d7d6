"""The base layer: what every concept says and sends (errors, sentences, finite JSON, SSE, the
clock, Stop)."""
