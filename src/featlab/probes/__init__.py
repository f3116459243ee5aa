"""Measurements that serve every paper: ℓ2 attacks and robust accuracy over radii (vectors and images)."""

from .robustness import critical_radius, direction_attack, pgd_l2, robust_accuracy_curve

__all__ = ["pgd_l2", "robust_accuracy_curve", "direction_attack", "critical_radius"]
