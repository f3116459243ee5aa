from .store import RunRecord, load_run

__all__ = ["RunRecord", "load_run"]
