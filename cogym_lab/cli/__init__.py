"""The ``cogym-lab`` command line."""
