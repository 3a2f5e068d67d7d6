"""chrome.storage: its keys and defaults, reading what it holds, and the one flat history."""
