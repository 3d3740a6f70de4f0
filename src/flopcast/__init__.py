"""flopcast: forecast what training and serving large language models costs on AI hardware."""

from .api import TrainResult, train
from .errors import FlopcastError

__all__ = ["train", "TrainResult", "FlopcastError"]
__version__ = "0.1.0"
