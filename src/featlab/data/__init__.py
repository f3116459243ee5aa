"""Paper-free data plumbing: the replica-batched :class:`Batch`, checksummed image-dataset readers."""

from .base import Batch
from .images import ImageData, load_images

__all__ = ["Batch", "ImageData", "load_images"]
