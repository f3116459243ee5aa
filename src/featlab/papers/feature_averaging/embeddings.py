"""fa-embeddings: Feature Averaging §6.1 (Figs 2c/2d, 10). Two-layer heads on frozen image embeddings: a head
trained on 2-class labels averages the features of its label's classes, one trained on the k classes decouples
them.

Decisions where the paper is silent (each is a config field; see docs/image-benchmarks.md):
* embeddings mean-centred with the training mean, then scaled to norm √D (the synthetic setting's ‖x‖ ≈ √d);
  μ_j = class mean of the training embeddings; full-batch Adam on the heads (the paper gives no optimiser).
* ``positive`` (J+) lists the embeddings' own class labels, which are 0-based — unlike fa-synthetic's clusters,
  numbered 1..k as in the paper. Rows and columns of the heat maps put the J+ classes first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Literal

import numpy as np
import torch
from pydantic import Field, model_validator

from ... import plotting
from ...config import ExperimentConfig, check
from ...data.embeddings import embedding_split
from ...errors import DataError
from ...nn.twolayer import EnsembleTwoLayer, block_readout, logit_margin_readout, signed_readout
from ...placement import to_run
from ...runs.registry import experiment
from ...runs.resources import embedding_needs
from ...train.loop import train
from ...train.objectives import cross_entropy, logistic
from ...utils import generator, torch_threads
from . import measures
from .diagnoses import diagnosed
from .embeddings_claims import ASSUMPTIONS, CLAIMS, DECOUPLED, FINE_SHUFFLED, LARGE_INIT, UNTRAINED


class FAEmbeddingsConfig(ExperimentConfig):
    seeds: int = Field(5, ge=1, description="independent seeds of both heads [featlab's choice; the paper is silent "
                       "on repeats]")
    dtype: Literal["float32", "float64"] = Field(
        "float64", description="float64 by default (unlike the other experiments): the heads were always trained in "
        "float64, and every preset keeps it")
    embeddings: str = Field("digits", description="'digits' (the 64 pixels of 8×8 digits; no download) or a .npz/"
                            ".npy/.parquet file of image embeddings with labels (see 'featlab embed')")
    labels_file: str | None = Field(None, description="labels (.npy) when 'embeddings' is a bare .npy array")
    positive: list[int] = Field([0, 1, 2, 3, 4], description="classes merged into the + label (J+): the embeddings' "
                                "0-based class labels (fa-synthetic numbers its clusters 1..k instead)")
    width: int = Field(30, ge=2, description="hidden width of both heads (2-class: width/2 per sign)")
    kclass_labels: Literal["fine", "shuffled"] = Field(
        "fine", description="labels of the k-class head: 'fine' (§6.1) or 'shuffled' (the 'fine-shuffled' control: "
        "each image's fine label re-drawn at random within its coarse class, once per seed)")
    h: int = Field(3, ge=1, description="neurons per class of the 10-class head; also the 2-class head's grouping")
    center: bool = Field(True, description="subtract the training mean embedding [paper silent]",
                         json_schema_extra={"range": [True, False]})
    optimizer: Literal["adam", "gd"] = Field("adam", description="full-batch optimiser of the heads [paper silent]",
                                             json_schema_extra={"range": ["adam", "gd"]})
    lr: float = Field(1e-2, gt=0, description="learning rate")
    steps: int = Field(300, ge=0, description="full-batch steps (0: the heads at their init, the 'untrained' "
                       "control)")
    sigma_w: float = Field(1e-3, ge=0, description="init std of the first-layer weights")
    test_fraction: float = Field(0.2, gt=0, lt=1, description="held-out fraction when the file has no split")
    per_class: int = Field(100, ge=1, description="training images per class in the Fig 10 correlation map")
    cpu_threads: int | None = Field(None, ge=1, description="torch CPU threads while this experiment runs (None: "
                                    "leave as is)")

    @model_validator(mode="after")
    def _ok(self):
        check(self.width % 2 == 0 and (self.width // 2) % self.h == 0, "width",
              f"must be even with width/2 a multiple of h={self.h} (groups of h neurons per class)",
              "e.g. width=30 h=3")
        check(len(set(self.positive)) == len(self.positive) > 0, "positive", "must list distinct classes")
        return self

    def estimate(self) -> list:
        """Both heads per seed, full batch: the embeddings (N × D; 8×8 digits, or a file's size at 4 bytes a value)
        and each head's (E, N, width) activations; the embeddings file it reads."""
        return embedding_needs(self, "digits" if self.embeddings == "digits" else self.embeddings, self.width,
                               heads=2, steps=self.steps)


@dataclass
class _Task:
    """The prepared embeddings: inputs x (cfg.dtype, ‖x‖ ≈ √D), classes relabelled so that 0..k/2−1 are J+. Built
    on the host from the file, then moved whole to the run device (:meth:`to`)."""

    xtr: torch.Tensor
    xte: torch.Tensor
    ytr: torch.Tensor  # the file's labels (Fig 10)
    ctr: torch.Tensor  # relabelled classes
    cte: torch.Tensor
    pos_r: torch.Tensor  # (k,) J+ mask of the relabelled classes: the first k/2
    order: torch.Tensor  # file class of each relabelled class
    mu: torch.Tensor  # (k, D) μ_j: class means of the training embeddings
    k: int
    src: str

    def to(self, device) -> _Task:
        """The same task with every tensor field on ``device``."""
        return replace(self, **{f.name: to_run(getattr(self, f.name), device) for f in fields(self)})


@experiment("fa-embeddings", paper="feature-averaging", reference="Fig 2c/2d, Fig 10 (§6.1)",
            summary="two-layer heads on image embeddings: 2-class labels average class features, 10-class labels "
                    "decouple them",
            config=FAEmbeddingsConfig, claims=diagnosed(CLAIMS, "fa-embeddings"),
            controls=[FINE_SHUFFLED, LARGE_INIT, UNTRAINED], assumptions=ASSUMPTIONS,
            presets={"quick": {"seeds": 4, "cpu_threads": 1},
                     "paper": {"embeddings": "cifar10_clip_vitb32.npz", "width": 30, "h": 3}},
            tiny={"seeds": 1, "steps": 5, "per_class": 10},
            cites={"embeddings": "§6.1 'Experiments on CIFAR': CIFAR-10 embeddings of a pre-trained CLIP ViT-B-32",
                   "width": "§6.1: 'the width of the first layer to be 30 (h = 3)'", "h": "§6.1: h = 3"})
def fa_embeddings(ctx) -> None:
    cfg: FAEmbeddingsConfig = ctx.cfg
    with torch_threads(cfg.cpu_threads):
        task = _prepare(cfg, ctx.dtype, ctx.device,
                        *embedding_split(cfg.embeddings, cfg.labels_file, cfg.test_fraction))
        bnet, knet = _train(ctx, task)
        bcos, kcos, per_seed = _measure_heads(ctx, task, bnet, knet)
        corr, lab = _measure_embeddings(ctx, task)
        _draw(ctx, task, bcos, kcos, corr, lab)
        _judge(ctx, per_seed)


def _prepare(cfg: FAEmbeddingsConfig, dtype, device, ztr, ytr, zte, yte, src: str) -> _Task:
    k = int(max(ytr.max(), yte.max())) + 1
    if k * cfg.h != cfg.width:
        raise DataError(f"fa-embeddings: {src} has {k} classes, so width must be k·h = {k * cfg.h} (got width="
                        f"{cfg.width}, h={cfg.h}); set width={k * cfg.h}")
    if max(cfg.positive) >= k or len(cfg.positive) * 2 != k:
        raise DataError(f"fa-embeddings: 'positive' must list half of the {k} classes (the 2-class head has width/2 "
                        f"neurons per sign, h per class); got {cfg.positive}")
    D = ztr.shape[1]
    mean = ztr.mean(0) if cfg.center else torch.zeros(D, dtype=ztr.dtype, device=ztr.device)
    scale = ((ztr - mean).norm(dim=1).mean() / math.sqrt(D))
    prep = lambda z: ((z - mean) / scale).to(dtype=dtype)  # (‖z‖ ≈ √D on average)
    xtr, xte = prep(ztr), prep(zte)
    pos = torch.zeros(k, dtype=torch.bool, device=ytr.device)  # class bookkeeping beside the labels (the host)
    pos[cfg.positive] = True
    # class order for the figure and the head: J+ classes first, then J− (rows μ_1..μ_k in this order)
    order = torch.cat([pos.nonzero().flatten(), (~pos).nonzero().flatten()])
    rank = torch.empty(k, dtype=torch.long, device=ytr.device)
    rank[order] = torch.arange(k, device=ytr.device)
    ctr, cte = rank[ytr], rank[yte]  # relabelled so that classes 0..k/2−1 are J+
    mu = torch.stack([xtr[ctr == c].mean(0) for c in range(k)])  # μ_j: class means of the training embeddings
    return _Task(xtr, xte, ytr, ctr, cte, torch.arange(k, device=ytr.device) < k // 2, order, mu, k, src).to(device)


def _train(ctx, t: _Task) -> tuple[EnsembleTwoLayer, EnsembleTwoLayer]:
    """The 2-class head (§2.1's binary net, logistic loss) and the k-class head (h neurons per class, CE)."""
    cfg: FAEmbeddingsConfig = ctx.cfg
    seeds, E, half, D = ctx.seeds, len(ctx.seeds), cfg.width // 2, t.xtr.shape[1]
    ypm_tr = t.pos_r[t.ctr].to(t.xtr.dtype) * 2 - 1
    bnet = EnsembleTwoLayer.init(seeds, D, signed_readout(half, half, 1 / half), sigma_w=cfg.sigma_w, sigma_b=None,
                                 dtype=ctx.dtype, device=ctx.device, role="init/emb-binary")
    knet = EnsembleTwoLayer.init(seeds, D, block_readout(t.k, cfg.h, 1 / cfg.h), sigma_w=cfg.sigma_w, sigma_b=None,
                                 dtype=ctx.dtype, device=ctx.device, role="init/emb-multiclass")
    opt = "adam" if cfg.optimizer == "adam" else "gd"
    xtr, every = t.xtr, max(1, cfg.steps // 20)
    ctx.trained(train([bnet.W], lambda s: logistic(bnet(xtr), ypm_tr), cfg.steps, seeds=seeds, optimizer=opt,
                      lr=cfg.lr, probe=lambda s: {"train_acc": (torch.where(bnet(xtr) > 0, 1.0, -1.0) == ypm_tr)
                                                  .double().mean(-1)},
                      probe_every=every, prefix="binary.", desc="2-class head"))
    cidx = t.ctr.expand(E, -1)
    if cfg.kclass_labels == "shuffled":  # per seed, a uniform class of the image's own coarse label (J+ = 0..k/2−1)
        half_k = t.k // 2
        draws = to_run(torch.stack([torch.randint(half_k, t.ctr.shape, generator=generator(s, "fine-shuffled"))
                                    for s in seeds]), t.ctr.device)
        cidx = draws + half_k * (~t.pos_r[t.ctr]).long()
    ctx.trained(train([knet.W], lambda s: cross_entropy(knet(xtr), cidx), cfg.steps, seeds=seeds, optimizer=opt,
                      lr=cfg.lr, probe=lambda s: {"train_acc_kclass": (knet(xtr).argmax(-1) == cidx).double()
                                                  .mean(-1)},
                      probe_every=every, prefix="multiclass.", desc="10-class head"))
    return bnet, knet


@torch.no_grad()
def _measure_heads(ctx, t: _Task, bnet, knet) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Test accuracies and cos(μ_i, w_j) of both heads' equivalent weights (E, k, k), with their block statistics
    and the neurons' selectivity; the per-seed (E,) values of every statistic as the third element."""
    ypm_te = t.pos_r[t.cte].to(t.xte.dtype) * 2 - 1
    ctx.metric("binary.test_acc", (torch.where(bnet(t.xte) > 0, 1.0, -1.0) == ypm_te).double().mean(-1))
    lk = knet(t.xte)
    ctx.metric("multiclass.test_acc_kclass", (lk.argmax(-1) == t.cte).double().mean(-1))
    ctx.metric("multiclass.test_acc", ((logit_margin_readout(lk, t.pos_r) > 0) == t.pos_r[t.cte]).double().mean(-1))
    per_seed: dict[str, torch.Tensor] = {}
    # equivalent weights: groups of h consecutive neurons (2-class: k/2 positive then k/2 negative groups)
    mu_e = t.mu.expand(len(ctx.seeds), t.k, t.mu.shape[1])
    bcos = measures.cosine_matrix(mu_e, measures.equivalent_weights(bnet.W, t.k))  # (E, k, k)
    kcos = measures.cosine_matrix(mu_e, measures.equivalent_weights(knet.W, t.k))
    eye = torch.eye(t.k, dtype=torch.bool, device=bcos.device)
    block = t.pos_r[:, None] == t.pos_r[None, :]
    for name, cos in (("binary", bcos), ("multiclass", kcos)):
        diag = cos[:, eye].mean(-1)
        in_off = cos[:, block & ~eye].mean(-1)
        off_block = cos[:, ~block].mean(-1)
        stats = {"cos_diag_mean": diag, "cos_in_block_offdiag_mean": in_off, "cos_off_block_mean": off_block,
                 "diag_excess": diag - in_off, "block_excess": cos[:, block].mean(-1) - off_block}
        for key, v in stats.items():
            ctx.metric(f"{name}.{key}", v)
            per_seed[f"{name}.{key}"] = v
    for name, net, neuron_pos in (("binary", bnet, torch.arange(bnet.W.shape[1], device=eye.device)
                                   < bnet.W.shape[1] // 2),
                                  ("multiclass", knet, t.pos_r.repeat_interleave(ctx.cfg.h))):
        sel = selectivity(measures.cosine_matrix(mu_e, net.W), t.pos_r, neuron_pos)
        per_seed[f"{name}.neuron_selectivity"] = sel
        ctx.metric(f"{name}.neuron_selectivity", sel)
    # reference: the selectivity of exact averages Σ_{J_s} μ_j (Thm 4.5 (2)), > 0 when the μ_j are not orthogonal
    avg = torch.stack([t.mu[t.pos_r].sum(0), t.mu[~t.pos_r].sum(0)])[None]
    ctx.metric("average_direction.neuron_selectivity", selectivity(
        measures.cosine_matrix(t.mu[None], avg), t.pos_r, torch.tensor([True, False], device=eye.device)))
    return bcos, kcos, per_seed


def selectivity(cos: torch.Tensor, pos_r: torch.Tensor, neuron_pos: torch.Tensor) -> torch.Tensor:
    """Mean over neurons of how far a neuron singles out one class of its own label (Fig 2c vs 2d): for neuron r of
    label s, max_{j ∈ J_s} cos(μ_j, w_r) − the mean of cos(μ_i, w_r) over the other i ∈ J_s. ``cos``: (E, k, M);
    ``neuron_pos``: (M,) whether each neuron belongs to J+. Invariant to any permutation of the neurons. (E,)."""
    own = pos_r[:, None] == neuron_pos[None, :]  # (k, M): class j has neuron r's label
    c = cos.masked_fill(~own, float("nan"))
    top = torch.nan_to_num(c, nan=-torch.inf).max(1).values  # (E, M)
    n_own = own.sum(0)  # (M,)
    rest = (torch.nansum(c, 1) - top) / (n_own - 1).clamp_min(1)
    return (top - rest).mean(-1)


def _measure_embeddings(ctx, t: _Task) -> tuple[np.ndarray, torch.Tensor]:
    """Fig 10: cos(z_i, z_j) of ``per_class`` training embeddings per class, ordered by class; (corr, labels)."""
    sel = torch.cat([(t.ytr == c).nonzero().flatten()[: ctx.cfg.per_class] for c in range(t.k)])
    zs = t.xtr[sel]
    zs = zs / zs.norm(dim=1, keepdim=True)
    corr, lab = zs @ zs.T, t.ytr[sel]
    same = (lab[:, None] == lab[None, :]) & ~torch.eye(len(sel), dtype=torch.bool, device=lab.device)
    ctx.metric("embeddings.cos_within_class", float(corr[same].mean()))
    ctx.metric("embeddings.cos_between_class", float(corr[lab[:, None] != lab[None, :]].mean()))
    return ctx.numpy(corr), ctx.to_host(lab)  # for the figure


def _draw(ctx, t: _Task, bcos: torch.Tensor, kcos: torch.Tensor, corr: np.ndarray, lab: torch.Tensor) -> None:
    cfg: FAEmbeddingsConfig = ctx.cfg
    E, k = len(ctx.seeds), t.k
    ctx.figure(plotting.heatmap_panels([
        (ctx.numpy(bcos.mean(0)), f"(c) 2-class labels: cos($\\mu_i, w_j$), mean of {E} seeds"),
        (ctx.numpy(kcos.mean(0)), f"(d) {k}-class labels: cos($\\mu_i, w_j$), mean of {E} seeds")],
        f"Feature averaging vs decoupling on {t.src} (width {cfg.width}, h={cfg.h}; rows/columns: J+ classes "
        f"{[int(c) for c in t.order[: k // 2]]} first)"), "fig2cd_embedding_cosine")

    fig, ax = plotting.subplots(figsize=(6.2, 5.4))
    im = ax.imshow(corr, cmap="viridis", interpolation="nearest")
    edges = np.cumsum([0] + [int((lab == c).sum()) for c in range(k)])
    ax.set_xticks((edges[:-1] + edges[1:]) / 2, [str(c) for c in range(k)], fontsize=7)
    ax.set_yticks((edges[:-1] + edges[1:]) / 2, [str(c) for c in range(k)], fontsize=7)
    ax.set_xlabel("class")
    ax.set_ylabel("class")
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ax.set_title(f"Fig 10: cos($z_i, z_j$), {len(lab)} training embeddings ({t.src}, "
                 f"{'centred' if cfg.center else 'raw'}), ordered by class", fontsize=9)
    fig.tight_layout()
    ctx.figure(fig, "fig10_embedding_correlation")


def _ratio_of_means(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a) / np.mean(b))


def _judge(ctx, per_seed: dict[str, torch.Tensor]) -> None:
    """Thresholds: docs/image-benchmarks.md. Each claim's interval is bootstrapped over seeds (the heads' inits)."""
    m = ctx.metrics
    kd = m["multiclass.diag_excess"]
    ctx.claim("fa.emb_kclass_decouples", kd, samples=per_seed["multiclass.diag_excess"])
    ctx.claim("fa.emb_binary_blocks", m["binary.block_excess"], samples=per_seed["binary.block_excess"])
    sb, sk = per_seed["binary.neuron_selectivity"], per_seed["multiclass.neuron_selectivity"]
    ratio = float(sb.mean() / sk.mean()) if kd >= DECOUPLED else math.nan
    ctx.metric("binary.selectivity_ratio", ratio)
    if kd >= DECOUPLED:  # paired per seed: the two heads of a seed share its embeddings and its init stream
        ctx.claim("fa.emb_binary_averages", ratio, samples=(sb, sk), statistic=_ratio_of_means)
    else:
        ctx.claim("fa.emb_binary_averages", f"undefined: k-class excess {kd:.3g} < {DECOUPLED}")
