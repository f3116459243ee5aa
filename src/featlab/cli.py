"""The ``featlab`` command: list, run, show, reproduce."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .config import parse_overrides
from .errors import FeatlabError
from .runs.registry import get_experiment, list_experiments, paper_results, papers
from .runs.runner import run
from .report.tables import claims_markdown, claims_table, declared_claims_rows, run_report, table
from .runs.store import load_run


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="featlab", description="Reproduce and check feature-learning theory papers.")
    sub = p.add_subparsers(dest="cmd", required=True)

    sub.add_parser("list", help="every experiment with its paper reference")

    c = sub.add_parser("claims", help="every claim an experiment judges: statement, source, threshold and why")
    c.add_argument("id", nargs="?", help="one experiment (default: all)")
    c.add_argument("--markdown", action="store_true", help="print docs/claims.md instead of a table")

    r = sub.add_parser("run", help="run one experiment")
    r.add_argument("id")
    r.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. seeds=8 k=20")
    _common(r)
    r.add_argument("--config", metavar="FILE.yaml", help="YAML file of field: value (applied before key=value)")
    r.add_argument("--control", action="store_true",
                   help="run every control setting, where the paper's statements should be false (no claim it "
                   "targets may hold); --control-name picks one")
    r.add_argument("--control-name", metavar="NAME", help="run only this control (see 'featlab claims ID')")

    s = sub.add_parser("show", help="reprint a finished run's claims and headline metrics")
    s.add_argument("run_dir")

    rp = sub.add_parser("reproduce", help="every experiment of a paper, then one table of all claims")
    rp.add_argument("paper", nargs="?", default="all", choices=[*papers(), "all"])
    _common(rp)

    d = sub.add_parser("data", help="image datasets: 'featlab data check [--root DIR]' lists what is present and valid")
    dsub = d.add_subparsers(dest="data_cmd", required=True)
    dc = dsub.add_parser("check", help="verify every dataset file under the data root against its checksum")
    dc.add_argument("--root", default="data", help="data root in torchvision's layout (default ./data)")

    em = sub.add_parser("embed", help="CLIP ViT-B-32 embeddings of CIFAR-10 for fa-embeddings (needs open_clip)")
    em.add_argument("--root", default="data", help="data root holding CIFAR-10 (default ./data)")
    em.add_argument("--out", default="cifar10_clip_vitb32.npz", help="output .npz or .parquet")
    em.add_argument("--pretrained", default="openai", help="open_clip pretrained tag or a local checkpoint file")
    em.add_argument("--device", default="auto", help="auto, cpu or cuda")
    em.add_argument("--batch-size", type=int, default=256)

    sw = sub.add_parser("sweep", help="the cartesian product of config values, each point a cached run")
    sw.add_argument("id")
    sw.add_argument("axes", nargs="*", metavar="key=v1,v2", help="e.g. k=10,20,40 eta=1e-3,1e-4")
    _common(sw)
    sw.add_argument("--executor", default="local", choices=["local", "ray"], help="local (default) or ray")
    sw.add_argument("--ray-address", default=None, help="address of an existing Ray cluster (default: start one)")
    sw.add_argument("--show", default="", metavar="M1,M2", help="metrics to print (default: the first few)")
    return p


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="quick", help="quick (CPU, about a minute; default) or paper")
    p.add_argument("--out", default="runs", help="output folder (default ./runs)")
    p.add_argument("--force", action="store_true", help="retrain even if an identical complete run exists")
    p.add_argument("--strict", action="store_true", help="exit 1 when a claim does not hold")


def cmd_list() -> int:
    rows = [[e.id, e.paper, e.reference, "/".join(e.presets), e.summary] for e in list_experiments()]
    print(table(rows, ["id", "paper", "figure/table", "presets", "what it shows"], [22, 21, 22, 12, 60]))
    return 0


def cmd_claims(a) -> int:
    exps = [get_experiment(a.id)] if a.id else list_experiments()
    if a.markdown:
        print(claims_markdown(exps, papers(), {k: paper_results(k) for k in papers()}))
        return 0
    rows = declared_claims_rows(exps)
    print(table(rows, ["experiment", "id", "statement", "paper", "threshold", "why"], [18, 24, 40, 14, 22, 44]))
    print(f"\n{len(rows)} claims in {len(exps)} experiment{'s' if len(exps) != 1 else ''}.")
    return 0


def _print_run(rec, out=None) -> None:
    out = out or sys.stdout
    if rec.skipped:
        print(f"(an identical complete run exists; not retrained — use --force to retrain)", file=out)
    print(run_report(rec.summary, str(rec.dir)), file=out)


def cmd_run(a) -> int:
    overrides = parse_overrides(a.overrides)
    if a.control or a.control_name:
        return _run_controls(a, overrides)
    rec = run(a.id, a.preset, out=a.out, config_file=a.config, force=a.force, **overrides)
    _print_run(rec)
    if rec.status != "complete":
        return 1
    return 1 if a.strict and not all(c["holds"] for c in rec.claims) else 0


def _run_controls(a, overrides) -> int:
    """Each control in turn (or the one named): exit 1 when a run fails or a targeted claim holds."""
    exp = get_experiment(a.id)
    chosen = [exp.control(a.control_name)] if a.control_name else [exp.control(c.name) for c in exp.controls]
    code = 0
    for ctl in chosen:
        rec = run(a.id, a.preset, out=a.out, config_file=a.config, force=a.force, control=ctl.name, **overrides)
        _print_run(rec)
        targets = set(ctl.targets(exp.claims))
        held = [c["id"] for c in rec.claims if c["holds"] and c["id"] in targets]
        judged = sum(c["id"] in targets for c in rec.claims)
        print(f"\ncontrol {ctl.name!r} ({ctl.why}): {len(held)}/{judged} claims hold; none may"
              + (f" — a defect: {', '.join(held)}" if held else ""))
        code = max(code, 1 if rec.status != "complete" or held else 0)
    return code


def cmd_show(a) -> int:
    rec = load_run(a.run_dir)
    _print_run(rec)
    return 0


def cmd_reproduce(a) -> int:
    paper = None if a.paper == "all" else a.paper
    exps = list_experiments(paper)
    all_claims, failed = [], []
    for i, e in enumerate(exps, 1):
        print(f"[{i}/{len(exps)}] {e.id} ({e.reference}) ...", flush=True)
        rec = run(e.id, a.preset, out=a.out, force=a.force)
        print(f"    {rec.status}{' (existing run)' if rec.skipped else ''} in {rec.summary.get('elapsed_s', 0):.1f} s"
              f" → {rec.dir}", flush=True)
        if not rec.ok:
            failed.append(e.id)
        all_claims += [{**c, "experiment": e.id} for c in rec.claims]
    print()
    print(claims_table(all_claims, with_experiment=True))
    held = sum(c["holds"] for c in all_claims)
    print(f"\n{held}/{len(all_claims)} claims hold across {len(exps)} experiments.")
    if failed:
        print(f"runs that did not complete: {', '.join(failed)}")
        return 1
    return 1 if a.strict and held < len(all_claims) else 0


def cmd_sweep(a) -> int:
    from .runs.sweep import sweep

    table_df = sweep(a.id, a.axes, preset=a.preset, out=a.out, executor=a.executor, force=a.force,
                     ray_address=a.ray_address)
    axes = [c for c in table_df.columns if c in {ax.partition("=")[0] for ax in a.axes}]
    shown = [m for m in a.show.split(",") if m] or [c for c in table_df.columns
                                                      if c not in axes and "@" not in c][2:6]
    missing = [m for m in shown if m not in table_df.columns]
    if missing:
        print(f"featlab: note: no metric {missing[0]!r} in these runs", file=sys.stderr)
    cols = axes + ["status", "claims_held"] + [m for m in shown if m in table_df.columns]
    rows = [[str(v) if not isinstance(v, float) else f"{v:.4g}" for v in r] for r in table_df[cols].values.tolist()]
    print(table(rows, cols))
    dest = Path(a.out) / a.id / "sweeps"
    dest.mkdir(parents=True, exist_ok=True)
    name = "sweep-" + "-".join(ax.replace("=", "_").replace(",", "_") for ax in a.axes)[:80] + ".parquet"
    table_df.to_parquet(dest / name, index=False)
    print(f"\nsweep table: {dest / name}")
    failed = (table_df["status"] != "complete").any()
    held_all = all(x.split("/")[0] == x.split("/")[1] for x in table_df["claims_held"])
    return 1 if failed or (a.strict and not held_all) else 0


def cmd_data_check(a) -> int:
    from .data.images import SPECS, check_root, where_to_get

    root = Path(a.root or "data").expanduser()
    rows = check_root(root)
    print(f"data root: {root}")
    print(table([list(r) for r in rows], ["dataset", "status", "detail"], [13, 8, 80]))
    hints = [f"  {n}: {where_to_get(SPECS[n], root)}" for n, s, _ in rows if s != "ok"]
    if hints:
        print("\nwhere to get the others:")
        print("\n".join(hints))
    return 0 if all(s != "corrupt" for _, s, _ in rows) else 1


def cmd_embed(a) -> int:
    from .data.embeddings import clip_embeddings, require_open_clip, save_embeddings
    from .data.images import load_images

    require_open_clip()  # before reading the images
    z, y, is_test = clip_embeddings(load_images("cifar10", a.root), a.pretrained, a.device, a.batch_size)
    dest = save_embeddings(a.out, z, y, is_test)
    print(f"wrote {len(z)} CLIP ViT-B-32 embeddings ({z.shape[1]}-d) to {dest}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)  # key=value may come after options
    if extra and (args.cmd not in ("run", "sweep") or any(e.startswith("-") or "=" not in e for e in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra and args.cmd == "run":
        args.overrides = [*args.overrides, *extra]
    elif extra:
        args.axes = [*args.axes, *extra]
    try:
        if args.cmd == "list":
            return cmd_list()
        if args.cmd == "claims":
            return cmd_claims(args)
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "show":
            return cmd_show(args)
        if args.cmd == "sweep":
            return cmd_sweep(args)
        if args.cmd == "data":
            return cmd_data_check(args)
        if args.cmd == "embed":
            return cmd_embed(args)
        return cmd_reproduce(args)
    except FeatlabError as e:
        print(f"featlab: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("featlab: interrupted; completed runs are kept, the unfinished one will be redone", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
