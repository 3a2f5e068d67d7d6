"""Sync: saved sessions on every machine of the user, end-to-end encrypted through a WebDAV folder."""
