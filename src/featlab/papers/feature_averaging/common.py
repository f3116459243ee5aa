"""The synthetic setting of the Feature Averaging paper, shared by fa-synthetic and the App. E.1 ablations: the
config, the data, the binary and the k-class two-layer nets, and their full-batch GD training.

Decisions where the paper is silent (each is a config field; defaults below):
* init scale σ_w = σ_b = 1e-5 is a standard deviation (the text's "σ_w = σ_b"; Fig 7's caption writes σ²);
* the k-class network on synthetic data has h = 1 neuron per class (Fig 2b shows 10 columns w_1..w_10);
* centres from the QR of a Gaussian d×k matrix (rotation invariant); near-orthogonal centres (Fig 9) as
  √d(√(1−c) q_j + √c q_0), which gives pairwise cosine c exactly;
* ``positive`` lists 0-based cluster indices like every featlab class/cluster index (the paper's cluster j is
  index j − 1; default 0..⌊k/2⌋−1, the paper's 1..⌊k/2⌋);
* the heat maps average the cosine over seeds; every seed draws its own centres and data (shared_data=True
  gives all seeds seed 0's data, differing only in init);
* robustness: 1000 fresh test points; ℓ2 PGD with 50 steps, step 2.5·δ/50, random start, 1 restart, on the
  margin of the read-out that is scored (f for the binary net, G = logsumexp_{J+} − logsumexp_{J−} for the
  k-class net, whose sign equals F^binary's); radii attacked in increasing order on the survivors.
"""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import Field, model_validator

from ...config import ExperimentConfig, Need, check
from ...data.base import Batch
from ...nn.twolayer import EnsembleTwoLayer, block_readout, joint_preactivation, sign_prediction, signed_readout
from ...train.loop import TrainResult, train
from ...train.objectives import cross_entropy, logistic
from ...utils import per_replica, torch_threads
from . import gram, measures
from .data import MultiClusterDistribution, relabel
from .fine_binary import binary_objective, supervision_ok
from .flow import flow
from .reference import nonrobust_multiclass


class FADataConfig(ExperimentConfig):
    """The paper's synthetic data and binary training (§3, App. E.1): the fields every FA synthetic experiment reads.

    ``positive`` holds 0-based cluster indices (the paper's cluster j is j−1)."""

    k: int = Field(10, ge=2, description="number of clusters")
    d: int = Field(3072, ge=2, description="input dimension")
    m: int = Field(5, ge=1, description="binary net: neurons per sign (2m in all)")
    n: int = Field(1000, ge=1, description="training points")
    alpha: float = Field(1.0, gt=0, description="signal scale α in x = αμ_j + σξ (Remark A.5)")
    sigma: float = Field(1.0, ge=0, description="noise scale σ")
    eta: float = Field(1e-3, gt=0, description="GD learning rate η")
    T: int = Field(100, ge=0, description="GD steps (0: the untrained nets, the control setting)")
    sigma_w: float = Field(1e-5, ge=0, description="init std of first-layer weights")
    sigma_b: float = Field(1e-5, ge=0, description="init std of the binary net's biases")
    positive: list[int] | None = Field(None, description="0-based indices of the clusters in J+ (the paper's "
                                       "cluster j is j−1; default: the first ⌊k/2⌋)")
    centres: Literal["qr", "basis"] = Field("qr", description="random orthogonal (QR) or standard basis")
    pairwise_cos: float = Field(0.0, ge=0, lt=1, description="cos(μ_i, μ_j) for near-orthogonal centres (Fig 9)")
    norm_scales: list[float] | None = Field(None, description="‖μ_j‖ = √d·scale_j (unequal norms); default all 1")
    shared_data: bool = Field(False, description="all seeds use seed 0's centres and data (only init differs)")
    init: Literal["random", "decoupled", "lazy"] = Field(
        "random", description="binary net's start: the paper's small random init; or (a control) that init plus Thm "
        "D.3's robust decoupled network (neuron (s, r) = μ_j of its own class, bias −αd/2); or (the 'lazy' rival) a "
        "large init σ_w = σ_b = lazy_scale/√d with neurons (+, r) and (−, r) started at the same w⁰, b⁰, so f₀ ≡ 0 "
        "and GD stays near W(0) (the kernel regime: activation patterns barely move)")
    lazy_scale: float = Field(30.0, gt=0, description="init='lazy': σ_w = σ_b = lazy_scale/√d, i.e. ‖w⁰‖ ≈ "
                              "lazy_scale [our choice: at d = 3072, η = 1e-3, T = 100 the learned part is < 1 % of "
                              "‖w⁰‖ and < 5 % of the (neuron, training point) activation patterns flip]")
    binary_model: Literal["relu", "linear"] = Field(
        "relu", description="binary net: the paper's two-layer ReLU net, or (the 'linear-logistic' rival) linear "
        "logistic regression f(x) = <v, x> + c by GD on the same loss and data at the same η and T, held as the same "
        "net with tied neurons w_{+,r} = v = −w_{−,r}, b_{+,r} = c = −b_{−,r} (ReLU(z) − ReLU(−z) = z), so every "
        "probe and attack reads it unchanged")
    binary_supervision: Literal["coarse", "fine"] = Field(
        "coarse", description="labels the binary net's first layer learns from: the paper's binary labels (eq. 1), or "
        "(the 'fine-binary' rival) the cluster labels by §4.2's cross-entropy, then read out as f (fine_binary.py)")
    labels: Literal["cluster", "random", "shuffled-in-class"] = Field(
        "cluster", description="training labels: the paper's (a function of the cluster), or a control's — "
        "'random' (binary and fine labels re-drawn independently of the cluster) or 'shuffled-in-class' (fine "
        "labels re-assigned at random inside each coarse class); see data.relabel")
    simulation: Literal["explicit", "gram"] = Field(
        "explicit", description="'explicit' vectors in R^d, or 'gram': the same run exactly in law in k + N "
        "coordinates (N Gaussian vectors: n, n_test, the neurons, thm46_starts; see papers/feature_averaging/"
        "gram.py), whose cost does not grow with d (needs d ≥ k + N) [implementation choice, not the paper's]")
    integrator: Literal["gd", "flow"] = Field(
        "gd", description="'gd': T steps of full-batch GD at step η; 'flow': the gradient flow to time ηT, GD's "
        "η → 0 limit (Assumption 4.3's η = O(d⁻²)), integrated adaptively (flow.py) [implementation choice]")
    flow_rtol: float = Field(1e-6, gt=0, lt=1, description="flow: the solver's relative tolerance [our choice]")
    flow_atol: float = Field(1e-4, gt=0, lt=1, description="flow: the solver's absolute tolerance in units of the "
                             "weights' RMS at each probe time [our choice: at d = 512, n = 30 the output is within "
                             "0.8 % of GD's η → 0 limit (1e-3: 8 %, 1e-5: 0.05 % at 5× the work)]")

    @model_validator(mode="after")
    def _consistent(self):
        need = self.k + (1 if self.pairwise_cos > 0 else 0)
        check(self.d >= need, "d", f"must be >= {need} to hold {need} orthogonal directions (k={self.k}"
              f"{' plus a shared one for pairwise_cos > 0' if self.pairwise_cos > 0 else ''}); got d={self.d}",
              "raise d or lower k")
        pos = self.positive_set()
        check(all(0 <= j < self.k for j in pos), "positive",
              f"must list 0-based clusters in 0..{self.k - 1}; got {self.positive}")
        check(0 < len(set(pos)) < self.k, "positive", "must leave both J+ and J− non-empty",
              f"list between 1 and {self.k - 1} distinct clusters")
        ok, why = supervision_ok(self)
        check(ok, "m", why, "raise m or use binary_supervision=coarse")
        if self.norm_scales is not None:
            check(len(self.norm_scales) == self.k and all(s > 0 for s in self.norm_scales), "norm_scales",
                  f"must hold k={self.k} positive numbers")
        if self.simulation == "gram":
            N, D = gram.size(self)
            check(self.d >= D, "d", f"must be >= k + N = {D} for simulation='gram' (N = {N} Gaussian vectors: n, "
                  f"n_test, the neurons, thm46_starts); got d={self.d}", "raise d or use simulation=explicit")
            check(not self.shared_data, "shared_data", "is not available with simulation='gram'",
                  "use simulation=explicit")
        return self

    def estimate(self) -> list[Need]:
        """A Gram run holds E·N·(k+N) coordinates (d is only a scale); a flow's work is counted by its solver, not
        by T (a lower bound: none)."""
        if self.simulation == "explicit" and self.integrator == "gd":
            return super().estimate()
        E, item = int(self.seeds), 8 if self.dtype == "float64" else 4
        N, D = gram.size(self) if self.simulation == "gram" else (int(self.n), int(self.d))
        needs = [Need(f"{E} replicas × {N} Gaussian vectors × {D} coordinates, {item}-byte floats (+ one "
                      f"float64 factor)", ("seeds", "n"), bytes=float(E * N * D * item + 8 * N * D), host=True)]
        if self.integrator == "gd":
            needs.append(Need(f"{self.T} steps over {E} × {N} × {D} data", ("T",), flops=2.0 * E * N * D * self.T,
                              steps=self.T))
        return needs

    def positive_set(self) -> list[int]:
        """J+ as 0-based cluster indices: ``positive`` or the first ⌊k/2⌋ clusters."""
        return list(self.positive) if self.positive is not None else list(range(self.k // 2))


class FASyntheticConfig(FADataConfig):
    """fa-synthetic: the data and binary training, plus the k-class net, the test set and the attacks."""

    seeds: int = Field(5, ge=1, description="independent seeds trained at once [featlab's choice; the paper is "
                       "silent on repeats]")
    h: int = Field(1, ge=1, description="k-class net: neurons per class [paper silent; 1 fits Fig 2b]",
                   json_schema_extra={"range": [1, 2, 4]})
    m: int = Field(5, ge=1, description="binary net: neurons per sign (2m in all)",
                   json_schema_extra={"range": [5, 50]})  # a stability row: m ≫ k (Remark A.5 allows m up to k)
    second_layer: Literal["fixed", "trained"] = Field(
        "fixed", description="binary net's read-out: fixed at ±1/m (§3.2, 'we fix the second layer for "
        "simplicity'), or trained with the first layer by GD from ±1/m (Min & Vidal's setting, after Thm 4.6) — a "
        "stability row, not a rival: each neuron's read-out is ±c_r/m with c_r > 0 folded into its weights after "
        "training (ReLU(c z) = c ReLU(z)); the probes during training read the first layer alone",
        json_schema_extra={"range": ["fixed", "trained"]})
    kclass_init: Literal["random", "prop48"] = Field(
        "random", description="k-class net's start: the paper's small random init, or (the 'prop48-start' rival) "
        "that init plus Prop 4.8's non-robust network f_j(x) = ReLU(<μ_j + Σ_{l∈J_s}μ_l, x>) (h copies per class), "
        "which fits the fine labels from step 0: GD at the paper's η and T then decides whether it leaves it")
    long_T: int = Field(10_000, ge=0, description="steps of a second, longer binary run on the same data, for λ(t) "
                        "over ηt ∈ [1, η·long_T] (Lemma B.23, §5: λ ≈ log(ηt)); 0 skips it [featlab's choice; the "
                        "paper is silent: it has no longer run]")
    long_eta: float = Field(1e-3, gt=0, description="its learning rate: §6.1's η, so ηT = 10 at the defaults "
                            "[featlab's choice; the paper is silent]")
    n_test: int = Field(1000, ge=1, description="fresh test points for accuracy and attacks [paper silent]",
                        json_schema_extra={"range": [1000, 500, 2000]})
    radii: list[float] | None = Field(None, description="ℓ2 radii; default: Fig 3's axis 0:2:58 scaled by "
                                      "√(d/3072), so the theory's radii √(d/k), √(d/2) stay inside for any d")
    pgd_steps: int = Field(50, ge=1, description="PGD iterations per radius [paper silent: Madry et al.'s "
                           "order of magnitude]", json_schema_extra={"range": [50, 10, 100]})
    pgd_step_factor: float = Field(2.5, gt=0, description="PGD step size = factor·δ/steps [paper silent: Madry "
                                   "et al.'s 2.5]", json_schema_extra={"range": [2.5, 1.0, 5.0]})
    pgd_random_start: bool = Field(True, description="start PGD uniformly in the ball")
    pgd_restarts: int = Field(1, ge=1, description="PGD restarts (robust = survives all) [paper silent]",
                              json_schema_extra={"range": [1, 2]})
    attacks: list[Literal["min_norm", "pgd", "pgd_softplus", "avgdir", "centre", "midpoint"]] = Field(
        ["min_norm", "pgd", "pgd_softplus", "avgdir", "centre", "midpoint"], description="the ℓ2 attacks; robust "
        "accuracy is the worst case over them, point by point (see papers/feature_averaging/attacks.py)")
    ddn_steps: int = Field(300, ge=1, description="min_norm: steps of each DDN run [our choice: on fa-synthetic "
                           "quick, 300 break every point torchattacks' FAB and a dense DDN break]",
                           json_schema_extra={"range": [300, 100, 1000]})
    ddn_restarts: int = Field(2, ge=0, description="min_norm: DDN runs from random directions, besides the "
                              "deterministic ones [our choice]", json_schema_extra={"range": [2, 0, 6]})
    softplus_temperature: float = Field(1.0, gt=0, description="pgd_softplus: the surrogate's softplus temperature "
                                        "in units of the net's RMS pre-activation on the test points [our choice]")
    convergence_check: bool = Field(True, description="re-attack the transition radii with twice the PGD steps and "
                                    "restarts and report the change of robust accuracy")
    thm46_starts: int = Field(32, ge=1, description="random starts of the Thm 4.6 sup search (plus data points)")
    thm46_steps: int = Field(100, ge=1, description="ascent steps of the Thm 4.6 sup search")

    @model_validator(mode="after")
    def _radii(self):
        if self.radii is not None:
            check(len(self.radii) > 0 and all(r >= 0 for r in self.radii), "radii",
                  "must be a non-empty list of radii >= 0", "e.g. radii=[0,10,20]")
        return self

    def estimate(self) -> list[Need]:
        """The data and steps (base), plus the longer binary run, which the step fields do not count: at the paper
        preset (10 000 steps) it is most of the run."""
        needs = super().estimate()
        if self.long_T and self.integrator == "gd":
            D = gram.size(self)[1] if self.simulation == "gram" else int(self.d)
            needs.append(Need(f"{self.long_T} steps of the longer binary run over {self.seeds} × {self.n} × {D} data",
                              ("long_T",), flops=32.0 * int(self.seeds) * int(self.n) * D * self.long_T,
                              steps=self.long_T))
        return needs

    def radius_grid(self) -> list[float]:
        if self.radii is not None:
            return list(self.radii)
        step = 2.0 * (self.d / 3072) ** 0.5
        return [round(i * step, 3) for i in range(30)]


def make_data(cfg: FADataConfig, seeds: list[int], dtype, device=None):
    """Distribution, training and test batches, all with a replica axis of len(seeds); the test batch is None
    for a config without ``n_test`` (the ablations measure weights, not test points).

    With ``shared_data`` seed 0's centres and samples are drawn once and viewed (not copied) by every replica.
    """
    if cfg.simulation == "gram":
        return gram.gram_data(cfg, seeds, dtype, device)
    data_seeds = seeds[:1] if cfg.shared_data else seeds
    dist = MultiClusterDistribution.create(
        data_seeds, cfg.k, cfg.d, cfg.positive_set(), alpha=cfg.alpha, sigma=cfg.sigma, centres=cfg.centres,
        pairwise_cos=cfg.pairwise_cos, norm_scales=cfg.norm_scales, dtype=dtype, device=device)
    n_test = getattr(cfg, "n_test", None)
    batches = [relabel(dist.sample(cfg.n, data_seeds, "train"), dist.positive, data_seeds, cfg.labels)]
    batches += [dist.sample(n_test, data_seeds, "test")] if n_test else []  # test labels: always the paper's
    if cfg.shared_data:
        E = len(seeds)
        dist.mu = dist.mu.expand(E, -1, -1)
        batches = [Batch(b.x.expand(E, -1, -1), b.y.expand(E, -1), {k: v.expand(E, -1) for k, v in b.info.items()})
                   for b in batches]
    return dist, batches[0], (batches[1] if n_test else None)


def train_inputs(cfg, tr):
    """One (n, d) matrix shared by all replicas when the data are shared: one big matmul per step."""
    return tr.x[0] if cfg.shared_data else tr.x


def _from_gaussians(net: EnsembleTwoLayer, dist, seeds, role: str, sigma_w: float,
                    sigma_b: float | None) -> EnsembleTwoLayer:
    """W(0) = σ_w·(the role's rows of the joint Gaussian draw) when the data carry them (a Gram simulation, or
    the exact test's shared draws); the biases, scalars, from the replica's (seed, role/bias) stream, which does
    not depend on the length of the vectors."""
    rows = None if dist is None or dist.gaussians is None else dist.gaussians.get(role)
    if rows is not None:
        with torch.no_grad():
            net.W.copy_(rows.to(net.W.dtype) * sigma_w)
            if net.b is not None and sigma_b is not None:
                net.b.copy_(per_replica(list(seeds), f"{role}/bias", lambda g: torch.randn(
                    net.b.shape[1], generator=g, dtype=torch.float64, device="cpu")).to(net.b) * sigma_b)
    return net


def binary_net(cfg, seeds, dtype, device=None, dist=None) -> EnsembleTwoLayer:
    """FA §3.2: f = (1/m)Σ_r ReLU(<w_{+,r},x> + b) − (1/m)Σ_r ReLU(<w_{−,r},x> + b), second layer fixed."""
    net = EnsembleTwoLayer.init(seeds, cfg.d if dist is None else dist.dim, signed_readout(cfg.m, cfg.m, 1 / cfg.m),
                                sigma_w=cfg.sigma_w, sigma_b=cfg.sigma_b, dtype=dtype, device=device,
                                role="init/binary")
    return _from_gaussians(net, dist, seeds, "init/binary", cfg.sigma_w, cfg.sigma_b)


def kclass_net(cfg, seeds, dtype, device=None, dist=None) -> EnsembleTwoLayer:
    """FA §4.2: f_j = (1/h) Σ_r ReLU(<w_{j,r}, x>), no bias; ``kclass_init='prop48'`` adds Prop 4.8's network."""
    net = EnsembleTwoLayer.init(seeds, cfg.d if dist is None else dist.dim, block_readout(cfg.k, cfg.h, 1 / cfg.h),
                                sigma_w=cfg.sigma_w, sigma_b=None, dtype=dtype, device=device, role="init/multiclass")
    net = _from_gaussians(net, dist, seeds, "init/multiclass", cfg.sigma_w, None)
    if getattr(cfg, "kclass_init", "random") == "prop48" and dist is not None:  # Prop 4.8: w_j = μ_j + Σ_{J_s}μ_l
        with torch.no_grad():
            net.W.add_(nonrobust_multiclass(dist).W.to(net.W.dtype).repeat_interleave(cfg.h, dim=1))
    return keep_init(net)


def keep_init(net: EnsembleTwoLayer) -> EnsembleTwoLayer:
    """Keep W(0) and b(0) on the net (``W0``, ``b0``): what GD learned is W − W(0) (Lemma 5.1's decomposition)."""
    net.W0 = net.W.detach().clone()
    net.b0 = None if net.b is None else net.b.detach().clone()  # type: ignore[assignment]
    return net


def _fit(cfg, params, loss_fn, seeds, probe, prefix):
    """T GD steps at η (FA's full-batch GD), or its η → 0 limit, the gradient flow to time ηT (``integrator``)."""
    if cfg.integrator == "flow":
        W = params[0]
        small = W.shape[0] * W.shape[1] * W.shape[2] * cfg.n < 2e8  # thread wake-ups cost more than they save
        with torch_threads(1 if small else 0):
            return flow(params, lambda: loss_fn(0), cfg.eta * cfg.T, seeds=seeds, eta=cfg.eta, probe=probe,
                        prefix=prefix, desc=f"{prefix}flow", rtol=cfg.flow_rtol,
                        atol_scale=cfg.flow_atol)
    return train(params, loss_fn, cfg.T, seeds=seeds, lr=cfg.eta, probe=probe, probe_every=cfg.probe_every,
                 prefix=prefix, desc=f"{prefix}GD")


def _binary_start(cfg, seeds, dist, tr) -> EnsembleTwoLayer:
    """W(0), b(0) of the binary net (``init``, ``binary_model``), kept on the net (:func:`keep_init`)."""
    if cfg.init == "lazy":  # the lazy rival: a large init, σ = lazy_scale/√d
        scale = cfg.lazy_scale / dist.d ** 0.5
        cfg = cfg.model_copy(update={"sigma_w": scale, "sigma_b": scale})
    net = binary_net(cfg, seeds, tr.x.dtype, tr.x.device, dist)
    assert net.b is not None  # the binary net has biases (§3.2)
    m = cfg.m
    with torch.no_grad():
        if cfg.init == "decoupled":  # a control: GD starts at Thm D.3's robust network, not near 0
            pos, neg = dist.positive.nonzero().flatten(), (~dist.positive).nonzero().flatten()
            r = torch.arange(m, device=pos.device)
            net.W.add_(dist.mu[:, torch.cat([pos[r % len(pos)], neg[r % len(neg)]])].to(net.W.dtype))
            net.b.add_(-cfg.alpha * cfg.d / 2)
        if cfg.init == "lazy":  # (−, r) starts at (+, r)'s w⁰, b⁰: f₀ ≡ 0 with the paper's architecture
            net.W[:, m:] = net.W[:, :m]
            net.b[:, m:] = net.b[:, :m]
        if cfg.binary_model == "linear":  # v = w_{+,0}(0): every (+, r) is v, every (−, r) is −v (f = <v, x> + c)
            net.W[:, :m] = net.W[:, :1]
            net.W[:, m:] = -net.W[:, :1]
            net.b[:, :m] = net.b[:, :1]
            net.b[:, m:] = -net.b[:, :1]
    return keep_init(net)


def _binary_probe(cfg, dist, tr, net, x):
    mask = measures.in_class_mask(dist.positive, cfg.m, cfg.m)

    def probe(step):
        with torch.no_grad():
            out = net(x)
            acc = (sign_prediction(out) == tr.y).to(x.dtype).mean(-1)
            cos = measures.cosine_matrix(dist.mu, net.W)
            q = tr.y.to(out.dtype) * out  # training margins q_i = y_i f(x_i) (Lemma 5.3)
            # in-class λ_{s,r,j} (Lemma B.23) of Lemma 5.1's decomposition: read on the learned part w − w⁰
            lam = measures.coefficient_proxy(measures.learned_part(net), dist.mu)[:, mask.T]
        return {"train_acc": acc, "cos_in_class_mean": measures.averaging_stats(cos, mask)["cos_in_class_mean"],
                "margin_spread": q.amax(-1) - q.amin(-1), "margin_mean": q.mean(-1),
                "lambda_in_class_min": lam.amin(-1), "lambda_in_class_max": lam.amax(-1)}
    return probe


def _kclass_probe(cfg, dist, tr, net, x):
    def probe(step):
        with torch.no_grad():
            logits = net(x)
            acc = (logits.argmax(-1) == tr.cluster).to(x.dtype).mean(-1)
            cos = measures.cosine_matrix(dist.mu, measures.equivalent_weights(net.W, cfg.k))
        return {"train_acc_kclass": acc, "cos_diag_mean": measures.decoupling_stats(cos)["cos_diag_mean"]}
    return probe


def fit_binary(cfg, seeds, dist, tr, prefix="binary."):
    """Full-batch GD on the logistic loss (FA eq. 1; ``binary_supervision='fine'``: the rival's, fine_binary.py;
    ``binary_model='linear'``: linear logistic regression, :func:`_linear_score`)."""
    net, x = _binary_start(cfg, seeds, dist, tr), train_inputs(cfg, tr)
    loss = binary_objective(cfg, dist, tr)  # eq. 1, or the fine-binary rival's (fine_binary.py)
    probe = _binary_probe(cfg, dist, tr, net, x)
    if getattr(cfg, "second_layer", "fixed") == "trained":
        return net, _fit_two_layers(cfg, net, x, loss, seeds, probe, prefix)
    if cfg.binary_model == "linear":
        res = train([net.W, net.b], lambda step: logistic(_linear_score(net, x, cfg.m), tr.y), cfg.T, seeds=seeds,
                    lr=2 * cfg.m * cfg.eta, probe=probe, probe_every=cfg.probe_every, prefix=prefix,
                    desc=f"{prefix}GD (linear)")
        return net, res
    res = _fit(cfg, [net.W, net.b], lambda step: loss(net, net.preactivation(x)), seeds, probe, prefix)
    return net, res


def _fit_two_layers(cfg, net: EnsembleTwoLayer, x, loss, seeds, probe, prefix) -> TrainResult:
    """Min & Vidal's setting (Thm 4.6's remark): the read-out ±c_r/m trained with W, b by the same GD (eq. 1's loss),
    c_r = 1 at init; then c_r folded into neuron r (w, b ← c_r·(w, b): the same f while c_r > 0)."""
    c = torch.ones(net.W.shape[:2], dtype=net.W.dtype, device=net.W.device, requires_grad=True)  # (E, 2m)
    assert net.b is not None  # the binary net has biases (§3.2)

    def objective(step):
        z = net.preactivation(x)
        return loss(net, torch.where(z >= 0, z * c[:, None, :], z))  # c·ReLU(z) = ReLU(c·z) for c > 0

    res = train([net.W, net.b, c], objective, cfg.T, seeds=seeds, lr=cfg.eta, probe=probe,
                probe_every=cfg.probe_every, prefix=prefix, desc=f"{prefix}GD (two layers)")
    with torch.no_grad():
        scale = c.detach().clamp_min(0)  # a neuron whose read-out crossed 0 is switched off (none measured)
        net.W.mul_(scale[..., None])
        net.b.mul_(scale)
    return res


def _linear_score(net: EnsembleTwoLayer, x, m: int) -> torch.Tensor:
    """The linear-logistic rival's score <v, x> + c = (mean_r z_{+,r} − mean_r z_{−,r})/2 on the tied net: linear in
    (W, b), so GD keeps the tie, and each row's gradient is 1/(2m) of v's — GD at 2mη on the rows is GD at η on v."""
    z = net.preactivation(x)
    return (z[..., :m].mean(-1) - z[..., m:].mean(-1)) / 2


def fit_kclass(cfg, seeds, dist, tr, prefix="multiclass."):
    """Full-batch GD on the cross-entropy of the cluster labels (FA §3.2 / §4.2)."""
    net, x = kclass_net(cfg, seeds, tr.x.dtype, tr.x.device, dist), train_inputs(cfg, tr)
    res = _fit(cfg, [net.W], lambda step: cross_entropy(net(x), tr.cluster), seeds,
               _kclass_probe(cfg, dist, tr, net, x), prefix)
    return net, res


def fit_both(cfg, seeds, dist, tr) -> tuple[EnsembleTwoLayer, TrainResult, EnsembleTwoLayer, TrainResult]:
    """:func:`fit_binary` and :func:`fit_kclass` trained together: the same T GD steps at η on the same points, the
    two first layers in one product per step, so the data are read once (half the step's cost when n·d is large).
    Each net's update is its own loss's gradient, as apart; the records are split back by net. The flow integrator
    (its step sizes adapt to the loss) still fits them one at a time."""
    if cfg.integrator == "flow" or cfg.binary_model == "linear" or getattr(cfg, "second_layer", "fixed") != "fixed":
        return (*fit_binary(cfg, seeds, dist, tr), *fit_kclass(cfg, seeds, dist, tr))
    bnet, knet, x = _binary_start(cfg, seeds, dist, tr), kclass_net(cfg, seeds, tr.x.dtype, tr.x.device, dist), \
        train_inputs(cfg, tr)
    probes = {"binary.": _binary_probe(cfg, dist, tr, bnet, x), "multiclass.": _kclass_probe(cfg, dist, tr, knet, x)}
    last: dict[str, torch.Tensor] = {}
    bloss = binary_objective(cfg, dist, tr)

    def loss_fn(step):
        zb, zk = joint_preactivation([bnet, knet], x)
        last["binary."], last["multiclass."] = bloss(bnet, zb), cross_entropy(knet.head(zk), tr.cluster)
        return last["binary."] + last["multiclass."]

    def probe(step):
        return {f"{net}{name}": v for net, f in probes.items() for name, v in {"loss": last[net].detach(),
                                                                              **f(step)}.items()}

    params: list = [bnet.W, bnet.b, knet.W]
    res = train(params, loss_fn, cfg.T, seeds=seeds, lr=cfg.eta, probe=probe,
                probe_every=cfg.probe_every, desc="binary + multiclass GD")
    return bnet, _split(res, "binary."), knet, _split(res, "multiclass.")


def _split(res: TrainResult, prefix: str) -> TrainResult:
    """One net's records of a joint training (the joint ``loss`` dropped); status and time are the joint run's."""
    return TrainResult(res.status, res.steps_done, res.message, [r for r in res.records if r[2].startswith(prefix)],
                       res.elapsed_s)
