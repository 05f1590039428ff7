"""Actors of the supervisor: one file each, each owning its state behind a memory stream."""
