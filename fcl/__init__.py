"""fcl: federated continual learning runs and hyperparameter studies."""
__version__ = "0.1.0"
