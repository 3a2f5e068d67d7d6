"""Images in the conversation: data URLs, pixel work, originals, the bound on unseen pixels, figures."""
