"""The exceptions featlab raises for user mistakes.

Everything derived from :class:`FeatlabError` is a *user* error: the CLI prints its one-line message and exits
with code 2, no traceback. Any other exception is a bug and keeps its traceback.
"""


class FeatlabError(Exception):
    """Base class of user-facing errors (bad config, missing data, unknown experiment...)."""


class ConfigError(FeatlabError, ValueError):
    """A config field is unknown, of the wrong type, out of range, or inconsistent with another field."""


class UnknownExperimentError(FeatlabError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class DataError(FeatlabError):
    """A dataset file is missing, corrupt, or does not match its published checksum."""


class RunRecordError(FeatlabError):
    """A run directory is missing, incomplete or unreadable."""


class TrainingDiverged(Exception):
    """A training run's loss became non-finite. Not a user error: the runner turns it into a failed run record
    (status "failed", the message, and the measurements made until then), so the run is kept, not lost.

    ``frame``: the (seed, step, metric, value) rows recorded before the divergence, or None.
    """

    def __init__(self, message: str, frame=None):
        super().__init__(message)
        self.frame = frame
