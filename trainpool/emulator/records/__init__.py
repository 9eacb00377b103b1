"""The emulator's records: one SQLite database, one table for every resource, SQL paging."""
