"""The catalogue: the words of the extension's `_locales`, loaded once per language."""
