"""I/O with Google Cloud through the official clients (or the local emulator)."""
