"""The planted paper's one experiment: a two-layer ReLU net separates two Gaussian clusters ±μ (Thm 1)."""

import torch
from pydantic import Field

from featlab.config import ExperimentConfig
from featlab.nn.twolayer import EnsembleTwoLayer, sign_prediction, signed_readout
from featlab.runs.claims import AtLeast, Claim, Control
from featlab.runs.registry import experiment
from featlab.train.loop import train
from featlab.train.objectives import logistic

from .data import TwoClusters


class ClustersConfig(ExperimentConfig):
    d: int = Field(20, ge=1, description="input dimension")
    n: int = Field(200, ge=2, description="training points")
    m: int = Field(4, ge=1, description="neurons per sign")
    lr: float = Field(0.5, gt=0, description="GD learning rate")
    steps: int = Field(50, ge=1, description="GD steps")
    shifted: bool = Field(False, description="test points drawn with the mean reversed (the rival)")


CLAIMS = [Claim("toy.clean", "the trained net classifies fresh points", "Thm 1", AtLeast(lo=0.9),
                why="the Bayes accuracy at margin 2 is Φ(2) ≈ 0.98")]
CONTROLS = [Control("shifted", {"shifted": True}, "test points drawn with the cluster means reversed",
                    premise="test points come from the training distribution", trained=("net.train_acc",))]


@experiment("toy-clusters", paper="toy-clusters", reference="Thm 1", summary="two clusters are separated",
            config=ClustersConfig, presets={"quick": {"seeds": 2}}, claims=CLAIMS, controls=CONTROLS,
            tiny={"seeds": 1, "steps": 5, "n": 40})
def toy_clusters(ctx):
    cfg, seeds = ctx.cfg, ctx.seeds
    train_law = TwoClusters.create(seeds, cfg.d)
    test_law = TwoClusters.create(seeds, cfg.d, mean=-2.0 if cfg.shifted else 2.0)
    tr = train_law.sample(cfg.n, seeds, "train", device=ctx.device)
    te = test_law.sample(cfg.n, seeds, "test", device=ctx.device)
    net = EnsembleTwoLayer.init(seeds, cfg.d, signed_readout(cfg.m, cfg.m, 1 / cfg.m), sigma_w=0.1, sigma_b=0.1,
                                device=ctx.device)
    ctx.trained(train([net.W, net.b], lambda step: logistic(net(tr.x), tr.y), cfg.steps, seeds=seeds, lr=cfg.lr,
                      probe_every=cfg.probe_every))
    with torch.no_grad():
        ctx.metric("net.train_acc", (sign_prediction(net(tr.x)) == tr.y).float().mean(-1))
        correct = (sign_prediction(net(te.x)) == te.y).float()
    acc = ctx.metric("net.clean_acc", correct.mean(-1))
    ctx.claim("toy.clean", acc, samples=correct.flatten(), unit="test points")
