"""A chat turn and what it needs: slimming, the overflow rescue, agent turns, unsaved answers, explain."""
