"""The Cloud Storage JSON API door of the local store."""
