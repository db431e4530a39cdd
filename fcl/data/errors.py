"""`DataError`: a data set that is missing or malformed. Its own module, without torch, so that
the CLI can catch it without importing a loader."""


class DataError(RuntimeError):
    """A data set that is missing or malformed; the CLI prints it as one line and exits 2."""
