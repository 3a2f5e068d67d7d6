"""The options page's settings: providers, the active provider, the language, the thresholds."""
