"""The package's version, in a leaf module: what writes it into a file (a saved session, an experiment's
results) reads it here, without importing the package's front door."""

__version__ = "0.1.0"
