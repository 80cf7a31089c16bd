"""The package version, defined once (read by hatchling and by ``anvia_notebook.__version__``)."""

__version__ = "0.1.0"
