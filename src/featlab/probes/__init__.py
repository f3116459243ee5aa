"""Measurements that serve every paper: ℓ2 attacks and robust accuracy over radii (vectors and images), the exact
minimum adversarial distance of small two-layer ReLU nets, certified lower bounds, and robust accuracy as an
interval [certified, attacked]."""

from .certify import RobustInterval, attack_distance, certified_lower_bound, robust_interval
from .exact import ExactDistance, exact_min_distance
from .robustness import critical_radius, direction_attack, pgd_l2, robust_accuracy_curve

__all__ = ["pgd_l2", "robust_accuracy_curve", "direction_attack", "critical_radius", "exact_min_distance",
           "ExactDistance", "certified_lower_bound", "robust_interval", "RobustInterval", "attack_distance"]
