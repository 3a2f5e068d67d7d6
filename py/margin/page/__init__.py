"""What the user attaches: a tab's page (text, tree, tokens), its video and captions, a data file."""
