"""fcl beside Flower's simulation on the same federated workload: training samples/s,
evaluation images/s and the whole-run ratio, interleaved over repetitions.

    python benchmarks/flower_side_by_side.py [--repetitions 2] [--rounds 6] [--actors N]
        [--parallel K] [--threads T] [--data-root data] [--set KEY=VALUE ...] [--smoke]

Needs Flower 1.42 (the `bench` extra: flwr, whose simulation runs on the Ray fcl installs;
docs/benchmarks.md, "fcl beside Flower"); without it the script says so in one line and exits
with status 2.

The workload is `fcl run --preset flocora --set model.adapter=full rounds=6
client.local_epochs=1`: full-model FedAvg of FLoCoRA's ResNet-8 with GroupNorm(2) on CIFAR-10, 100
clients of 500 images each (the preset's LDA partition, equal shard sizes), 10 clients a round,
one local epoch of batch 32, SGD lr 0.01 momentum 0.9, the 10,000 test images evaluated in the
last round only (`eval.every` = the number of rounds). Both sides train the same torch module,
built by fcl's own factory (`fcl.models.factory.build_model`), on the same client shards and
test tensors (`fcl.engine.prepare_data`), so the computation per sample is the same.

Variants, run in this order within each repetition (A B C D E, A B C D E, ...), each in a fresh
process:
- flower: Flower 1.42's `run_simulation` on Ray, `--actors` actors of one CPU and one torch
  thread each, a `ClientApp` training one local epoch with torch.optim.SGD, stock `FedAvg`
  (fraction_train 0.1, no client-side evaluation), and server-side evaluation of the test set in
  the last round at Flower's customary `test()` batch of 100 (`torch.no_grad`, `.item()` per
  batch) in the ServerApp's process with `--threads` torch threads. Rounds are timed on the
  server: from the strategy's `configure_train` to the end of the round's `evaluate_fn` call.
- fcl fp32: `run.precision=fp32 run.channels_last=false eval.batch_size=1024` (fp32 at a pinned
  evaluation batch: the defaults fcl had before they became the device's).
- fcl fp32 defaults: `run.precision=fp32` with the rest at `auto`: what a CPU without native
  bf16 runs by default (`eval.batch_size=auto`: the device's evaluation batch).
- fcl fast: `run.precision=auto run.channels_last=auto eval.batch_size=auto` (bf16 and NHWC
  where the CPU has native bf16 / AVX-512, fp32 and NCHW elsewhere; `fcl/compute_mode.py`).
- fcl fast compiled: the same with `run.compile=true` (`fcl/compile_policy.py`).
  Each fcl mode runs as one run with `--threads` threads and as `--parallel` runs of one thread
  at once (separate processes that start their rounds together): a study's layout.
fcl's rounds are timed by the engine (`wall_s` of each round record), its evaluation by wrapping
`fcl.engine.evaluate`.

Measured (round 1 is a warm-up, not counted: actors start, workers import, caches fill):
- train samples/s: training samples of the counted rounds / their wall time less the evaluation;
- eval images/s: test images / the evaluation's wall time;
- whole-run samples/s: training samples of the counted rounds / their wall time, evaluation
  included (the whole-run ratio compares these). For K runs of one thread: summed over the runs
  for training and evaluation (they compute at the same time), and the K runs' samples over the
  span from the first counted round's start to the last one's end for the whole run.
Ratios are fcl / Flower of the same repetition, then the median over repetitions.

Targets, on a CPU with native bf16: fcl's evaluation >= 1.2x Flower's images/s (the fast path,
one run with all threads: the layout of Flower's server-side evaluation), and the fast path,
evaluation included, >= 2.5x Flower's whole-run samples/s as `--parallel` runs of one thread
(eager, and compiled); on every CPU, fp32 at its defaults >= 1.3x
Flower's whole run as runs of one thread.
On a CPU without native bf16 the fast path computes in fp32 and the script says so beside the
verdict. `--smoke` runs the whole pipeline at toy size (a generated CIFAR-10 of random images, 2
clients of 20 images, 2 rounds, 20 test images): a check that everything runs, not a measurement.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SCRIPT = str(Path(__file__).resolve())
MODULE = "fcl_flower_side_by_side"        # this file's name when a Ray worker imports it
FLOWER_EVAL_BATCH = 100                   # the batch of the `test()` of Flower's examples
WORKLOAD = {"model.adapter": "full", "rounds": 6, "client.local_epochs": 1}
FCL_MODES = {"fp32": {"run.precision": "fp32", "run.channels_last": "false",
                      "eval.batch_size": 1024},
             # what a CPU without native bf16 runs by default: fp32, the rest at auto
             "fp32-defaults": {"run.precision": "fp32", "run.channels_last": "auto",
                               "eval.batch_size": "auto"},
             "fast": {"run.precision": "auto", "run.channels_last": "auto",
                      "eval.batch_size": "auto"},
             # the fast path compiled (run.compile=true: auto leaves this 42-TFLOP run eager,
             # fcl/compile_policy.py); evaluation's graph compiles in the last, counted round
             "fast-compiled": {"run.precision": "auto", "run.channels_last": "auto",
                               "eval.batch_size": "auto", "run.compile": "true"}}
VARIANTS = ["flower", *FCL_MODES, *(f"{m}-par" for m in FCL_MODES)]
SMOKE = {"rounds": 2, "data.num_clients": 2, "participation.fraction": 1.0,
         "data.train_per_class": 4, "data.test_per_class": 2}
TARGET_EVAL = 1.2        # fcl fast (1 run x all threads) / Flower, evaluation images/s
TARGET_WHOLE = 2.5       # fcl fast (K runs x 1 thread) / Flower, whole-run samples/s
TARGET_FP32 = 1.3        # fcl fp32 defaults (K runs x 1 thread) / Flower, whole-run samples/s


def flwr_missing() -> str | None:
    """The missing module that Flower's simulation needs (None: none is missing)."""
    for mod in ("flwr", "ray"):
        if importlib.util.find_spec(mod) is None:
            return mod
    return None


# ---------------------------------------------------------------------------------------------
# the workload, shared by both sides


def workload_sets(args: argparse.Namespace) -> dict:
    sets = {**WORKLOAD, "rounds": args.rounds, "data.root": args.data_root}
    if args.smoke:
        sets.update(SMOKE)
    sets.update(args.sets)
    sets["eval.every"] = int(sets["rounds"])      # the test set in the last round only
    return sets


def config(sets: dict):
    from fcl.presets import preset
    return preset("flocora", sets)


def write_fake_cifar10(root: Path, per_class: int) -> None:
    """A CIFAR-10 of random images in torchvision's on-disk layout (root/cifar-10-batches-py):
    `per_class` images of each class in each training batch and in the test batch."""
    import numpy as np
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        labels = np.tile(np.arange(10), per_class)
        with open(folder / name, "wb") as f:
            pickle.dump({"batch_label": name, "labels": labels.tolist(),
                         "data": rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8),
                         "filenames": [f"{name}_{i}.png" for i in range(len(labels))]}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"class{i}" for i in range(10)],
                     "num_cases_per_batch": 10 * per_class}, f)


# ---------------------------------------------------------------------------------------------
# the fcl side: one process runs one fcl run; K of them start their rounds together


def fcl_worker(spec: dict) -> dict:
    """One fcl run of `spec["sets"]`, its data prepared before the start signal (the file
    `spec["go"]` appearing), rounds timed by the engine and evaluation by a wrapper."""
    import torch

    import fcl.engine as engine
    cfg = config(spec["sets"])
    torch.set_num_threads(spec["threads"])
    data = engine.prepare_data(cfg)
    evals: list[dict] = []
    inner = engine.evaluate

    def timed_evaluate(model, data, batch_size, *rest):
        t0 = time.perf_counter()
        out = inner(model, data, batch_size, *rest)
        evals.append({"s": time.perf_counter() - t0, "batch": batch_size,
                      "nhwc": bool(rest[1]) if len(rest) > 1 else False,
                      "images": sum(len(td.test_y) for td in data.tasks)})
        return out

    engine.evaluate = timed_evaluate
    rounds: list[dict] = []
    seen = [0]

    def on_round(record, state) -> None:
        end = time.time()
        rounds.append({"start": end - record.wall_s, "end": end, "wall_s": record.wall_s,
                       "samples": state.totals.samples - seen[0], "evaluated": record.evaluated})
        seen[0] = state.totals.samples

    Path(spec["ready"]).touch()
    while not Path(spec["go"]).exists():
        time.sleep(0.005)
    res = engine.run(cfg, on_round=on_round, data=data)
    return {"rounds": rounds, "evals": evals, "precision": res.summary.precision,
            "layout": res.summary.layout, "compiled": res.summary.compiled,
            "threads": torch.get_num_threads()}


# ---------------------------------------------------------------------------------------------
# the Flower side: a ClientApp and a ServerApp with stock FedAvg under run_simulation

_CLIENT: dict = {}            # in each Ray actor: (sets json, config, data, model)


def client_state(sets_json: str):
    if _CLIENT.get("key") != sets_json:
        from fcl.engine import prepare_data
        from fcl.models.factory import build_model
        cfg = config(json.loads(sets_json))
        data = prepare_data(cfg)
        model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
        _CLIENT.update(key=sets_json, cfg=cfg, data=data, model=model)
    return _CLIENT["cfg"], _CLIENT["data"], _CLIENT["model"]


def client_train(msg, context):
    """One local epoch of the node's shard (partition-id = fcl's client index) with SGD, as
    Flower's PyTorch examples train; replies with the weights and `num-examples`."""
    import torch
    import torch.nn.functional as F
    from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict
    torch.set_num_threads(1)
    cfg, data, model = client_state(msg.content["config"]["sets"])
    module = model.tasks[0]
    module.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    td = data.tasks[0]
    shard = td.shards[int(context.node_config["partition-id"])]
    opt = torch.optim.SGD(module.parameters(), lr=cfg.client.lr, momentum=cfg.client.momentum,
                          weight_decay=cfg.client.weight_decay)
    model.train()
    total = 0.0
    for _ in range(cfg.client.local_epochs):
        for idx in shard[torch.randperm(len(shard))].split(cfg.client.batch_size):
            opt.zero_grad()
            loss = F.cross_entropy(model(data.normalise(td.train_x[idx]), 0), td.train_y[idx])
            loss.backward()
            opt.step()
            total += loss.item()
    content = RecordDict({"arrays": ArrayRecord(module.state_dict()),
                          "metrics": MetricRecord({"train_loss": total, "num-examples":
                                                   len(shard) * cfg.client.local_epochs})})
    return Message(content=content, reply_to=msg)


def _script_module():
    """This file as a module (a Ray actor gets the ClientApp's functions by value and finds the
    rest, and its per-process cache, in this module)."""
    if MODULE not in sys.modules:
        spec = importlib.util.spec_from_file_location(MODULE, SCRIPT)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[MODULE] = mod
        spec.loader.exec_module(mod)
    return sys.modules[MODULE]


def flower_test(model, data, batch: int) -> tuple[float, float]:
    """Flower's customary `test()`: eval mode, no_grad, `.item()` per batch (loss, accuracy)."""
    import torch
    import torch.nn.functional as F
    td = data.tasks[0]
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for start in range(0, len(td.test_y), batch):
            images, labels = data.normalise(td.test_x[start:start + batch]), \
                td.test_y[start:start + batch]
            outputs = model(images, 0)
            loss += F.cross_entropy(outputs, labels).item()
            correct += (torch.max(outputs.data, 1)[1] == labels).sum().item()
    return loss / len(td.test_y), correct / len(td.test_y)


def timed_fedavg(FedAvg, rounds: list[dict]):
    """Stock FedAvg whose two overrides only take timestamps and count samples into `rounds`."""
    class TimedFedAvg(FedAvg):
        def configure_train(self, server_round, arrays, config, grid):
            rounds.append({"start": time.time(), "round": server_round})
            return super().configure_train(server_round, arrays, config, grid)

        def aggregate_train(self, server_round, replies):
            replies = list(replies)
            rounds[-1]["samples"] = int(sum(r.content["metrics"]["num-examples"]
                                            for r in replies if r.has_content()))
            return super().aggregate_train(server_round, replies)
    return TimedFedAvg


def final_evaluation(model, data, R: int, rounds: list[dict], evals: list[dict]):
    """Flower's server-side `evaluate_fn`: every round's end time, and after round R the test
    set's accuracy (timed into `evals`)."""
    from flwr.app import ArrayRecord, MetricRecord

    def evaluate_fn(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
        if server_round == 0:
            return None
        out = None
        if server_round == R:
            t0 = time.perf_counter()
            model.tasks[0].load_state_dict(arrays.to_torch_state_dict())
            loss, accuracy = flower_test(model, data, FLOWER_EVAL_BATCH)
            evals.append({"s": time.perf_counter() - t0, "batch": FLOWER_EVAL_BATCH,
                          "nhwc": False, "images": len(data.tasks[0].test_y)})
            out = MetricRecord({"accuracy": accuracy, "loss": loss})
        rounds[-1]["end"] = time.time()
        rounds[-1]["evaluated"] = out is not None
        return out
    return evaluate_fn


def flower_worker(spec: dict) -> dict:
    """One Flower simulation of the workload; the server's per-round timestamps."""
    import torch
    from flwr.app import ArrayRecord, ConfigRecord, Context
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg
    from flwr.simulation import run_simulation

    from fcl.engine import prepare_data
    from fcl.models.factory import build_model
    sets = spec["sets"]
    cfg = config(sets)
    torch.set_num_threads(spec["threads"])
    data = prepare_data(cfg)            # the server's test set; each actor loads its own
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    R, N = cfg.rounds, cfg.data.num_clients
    rounds: list[dict] = []
    evals: list[dict] = []
    TimedFedAvg = timed_fedavg(FedAvg, rounds)
    evaluate_fn = final_evaluation(model, data, R, rounds, evals)
    server = ServerApp()

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = TimedFedAvg(fraction_train=cfg.participation.fraction, fraction_evaluate=0.0,
                               min_train_nodes=max(1, round(cfg.participation.fraction * N)),
                               min_available_nodes=N)
        strategy.start(grid=grid, initial_arrays=ArrayRecord(model.tasks[0].state_dict()),
                       num_rounds=R, train_config=ConfigRecord({"sets": json.dumps(sets)}),
                       evaluate_fn=evaluate_fn)

    client = ClientApp()

    @client.train()
    def train(msg, context):
        return _script_module().client_train(msg, context)

    run_simulation(server_app=server, client_app=client, num_supernodes=N,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                   "init_args": {"num_cpus": spec["actors"],
                                                 "include_dashboard": False,
                                                 # a Ray of its own, never another one's
                                                 "address": "local"}})
    for r in rounds:
        r["wall_s"] = r["end"] - r["start"]
    if len(rounds) != R or not evals:
        raise RuntimeError(f"Flower ran {len(rounds)} of {R} rounds, {len(evals)} evaluations")
    return {"rounds": rounds, "evals": evals, "precision": "fp32", "layout": "nchw",
            "threads": torch.get_num_threads()}


# ---------------------------------------------------------------------------------------------
# the driver


def run_processes(kind: str, specs: list[dict], folder: Path, log) -> list[dict]:
    """Start one process per spec (`--worker`), signal them to start together once all are
    ready, and return their results."""
    go = folder / f"go-{time.time_ns()}"
    procs = []
    for i, spec in enumerate(specs):
        spec = {**spec, "kind": kind, "go": str(go), "ready": str(go) + f".ready{i}",
                "out": str(go) + f".out{i}"}
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env.update(FLWR_TELEMETRY_ENABLED="0", RAY_DEDUP_LOGS="0")
        procs.append((spec, subprocess.Popen([sys.executable, SCRIPT, "--worker", json.dumps(spec)],
                                             stdout=log, stderr=subprocess.STDOUT, env=env)))
    while not all(Path(s["ready"]).exists() or p.poll() is not None for s, p in procs):
        time.sleep(0.01)
    go.touch()
    out = []
    for spec, p in procs:
        if p.wait() != 0 or not Path(spec["out"]).exists():
            raise RuntimeError(f"{kind} worker failed (exit {p.returncode}); see {log.name}")
        out.append(json.loads(Path(spec["out"]).read_text()))
    return out


def measure(results: list[dict]) -> dict:
    """Rates of one variant from its processes' round records (round 1 not counted)."""
    train, evals, samples = 0.0, 0.0, 0
    starts, ends = [], []
    for res in results:
        counted = res["rounds"][1:]
        ev = sum(e["s"] for e in res["evals"])
        n = sum(r["samples"] for r in counted)
        wall = sum(r["wall_s"] for r in counted)
        train += n / (wall - ev)
        evals += sum(e["images"] for e in res["evals"]) / ev
        samples += n
        starts.append(counted[0]["start"])
        ends.append(counted[-1]["end"])
    first = results[0]
    e0 = first["evals"][0]
    return {"train": train, "eval": evals, "whole": samples / (max(ends) - min(starts)),
            "samples": samples, "precision": first["precision"], "layout": first["layout"],
            "compiled": bool(first.get("compiled")),
            "eval_batch": e0["batch"], "eval_nhwc": e0["nhwc"], "threads": first["threads"]}


def cpu_in_words() -> str:
    """The CPU kind every fcl row records (`fcl.machine_kind.cpu_kind`: model name and vector
    extensions) and its logical CPUs."""
    from fcl.machine_kind import cpu_kind
    return f"{cpu_kind()}, {os.cpu_count()} logical CPUs"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] + " " +
                                __doc__.splitlines()[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[6:]))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    cpus = os.cpu_count() or 1
    p.add_argument("--repetitions", type=int,
                   help="interleaved repetitions (default 2; 1 with --smoke)")
    p.add_argument("--rounds", type=int, default=WORKLOAD["rounds"],
                   help="rounds of each run; the first is a warm-up, the last evaluates")
    p.add_argument("--actors", type=int, default=cpus, help="Flower's Ray actors, 1 CPU each")
    p.add_argument("--parallel", type=int, default=cpus,
                   help="fcl runs of one thread at once (a study's layout)")
    p.add_argument("--threads", type=int, default=cpus,
                   help="torch threads of one fcl run and of Flower's server-side evaluation")
    p.add_argument("--data-root", default="data",
                   help="the folder that holds cifar-10-batches-py (data.root)")
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", dest="raw_sets",
                   help="more fcl config overrides, applied to both sides")
    p.add_argument("--variants", nargs="+", default=VARIANTS, choices=VARIANTS)
    p.add_argument("--smoke", action="store_true",
                   help="toy size on a generated CIFAR-10: a check that it runs, no measurement")
    p.add_argument("--log", help="file for the workers' output (default: a temporary file)")
    return p


def main() -> None:
    args = build_parser().parse_args()
    if args.repetitions is None:
        args.repetitions = 1 if args.smoke else 2
    if args.worker:
        spec = json.loads(args.worker)
        res = (flower_worker if spec["kind"] == "flower" else fcl_worker)(spec)
        Path(spec["out"]).write_text(json.dumps(res))
        return
    missing = flwr_missing()
    if missing and "flower" in args.variants:
        print(f"{missing} is not installed: Flower 1.42 (pip install -e '.[bench]') "
              f"is needed; docs/benchmarks.md, 'fcl beside Flower', says how")
        sys.exit(2)
    from fcl.cli_args import parse_sets
    from fcl.compute_mode import native_cpu_bf16
    args.sets = parse_sets(args.raw_sets)
    with tempfile.TemporaryDirectory(prefix="fcl-flower-") as tmp:
        folder = Path(tmp)
        if args.smoke:
            args.data_root = str(folder / "data")
            write_fake_cifar10(Path(args.data_root), per_class=4)
        sets = workload_sets(args)
        log = open(args.log, "w") if args.log else open(folder / "workers.log", "w")
        bf16 = native_cpu_bf16()
        print(f"CPU: {cpu_in_words()}; native bf16 (oneDNN): {bf16}; load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        shown = {**sets, "data.root": "(generated)"} if args.smoke else sets
        print(f"workload: fcl preset flocora with {' '.join(f'{k}={v}' for k, v in shown.items())}"
              f"{' (SMOKE RUN: toy size, not a measurement)' if args.smoke else ''}", flush=True)
        label = variant_labels(args)
        report(args, run_repetitions(args, variant_plan(args, sets), label, folder, log),
               label, bf16)
        log.close()


def variant_plan(args, sets: dict) -> dict[str, tuple[str, list[dict]]]:
    """Each variant's worker kind and its processes' specs."""
    return {"flower": ("flower", [{"sets": sets, "threads": args.threads,
                                   "actors": args.actors}]),
            **{m: ("fcl", [{"sets": {**sets, **FCL_MODES[m]}, "threads": args.threads}])
               for m in FCL_MODES},
            **{f"{m}-par": ("fcl", [{"sets": {**sets, **FCL_MODES[m], "run.threads": 1},
                                     "threads": 1}] * args.parallel) for m in FCL_MODES}}


def variant_labels(args) -> dict[str, str]:
    names = {"fp32": "fcl fp32 (eval batch 1024)", "fp32-defaults": "fcl fp32 defaults",
             "fast": "fcl fast path", "fast-compiled": "fcl fast path compiled"}
    return {"flower": f"Flower, {args.actors} actors x 1 thread",
            **{m: f"{n}, 1 run x {args.threads} threads" for m, n in names.items()},
            **{f"{m}-par": f"{n}, {args.parallel} runs x 1 thread" for m, n in names.items()}}


def run_repetitions(args, plan: dict, label: dict, folder: Path, log) -> dict[str, list[dict]]:
    """Every variant once per repetition, interleaved, each measured and printed as a row."""
    reps: dict[str, list[dict]] = {v: [] for v in args.variants}
    print("\n| rep | variant | precision, layout (compiled), eval batch | train samples/s | "
          "eval images/s | whole-run samples/s | wall (s) | load |\n|---|---|---|---|---|---"
          "|---|---|", flush=True)
    for rep in range(args.repetitions):
        for v in args.variants:
            kind, specs = plan[v]
            t0 = time.perf_counter()
            m = measure(run_processes(kind, specs, folder, log))
            reps[v].append(m)
            print(f"| {rep + 1} | {label[v]} | {m['precision']}, {m['layout']}"
                  f"{' (NHWC eval)' if m['eval_nhwc'] and m['layout'] == 'nchw' else ''}"
                  f"{', compiled' if m['compiled'] else ''}, {m['eval_batch']} | {m['train']:.1f} | {m['eval']:.1f} | {m['whole']:.1f}"
                  f" | {time.perf_counter() - t0:.0f} | {os.getloadavg()[0]:.1f} |",
                  flush=True)
    return reps


def report(args, reps: dict, label: dict, bf16: bool) -> None:
    med = {v: {k: statistics.median(m[k] for m in ms) for k in ("train", "eval", "whole")}
           for v, ms in reps.items()}
    ratio: dict = {}
    if "flower" in reps:
        for v in reps:
            ratio[v] = {k: statistics.median(m[k] / f[k] for m, f in zip(reps[v], reps["flower"]))
                        for k in ("train", "eval", "whole")}
    print(f"\nMedians over {args.repetitions} repetitions; ratios: fcl / Flower of the same "
          f"repetition, median\n\n| variant | train samples/s | eval images/s | whole-run "
          f"samples/s | train ratio | eval ratio | whole-run ratio |\n|---|---|---|---|---|---|"
          f"---|")
    for v in reps:
        r = ratio.get(v)
        cells = (f"{r['train']:.2f} | {r['eval']:.2f} | {r['whole']:.2f}" if r else "- | - | -")
        print(f"| {label[v]} | {med[v]['train']:.1f} | {med[v]['eval']:.1f} | "
              f"{med[v]['whole']:.1f} | {cells} |")
    if args.smoke:
        print("\nSmoke run: toy size on random images; the targets are not judged.")
        return
    why = ("" if bf16 else "; this CPU has no native bf16, so the fast path computed in fp32 "
           "(bf16 through reference kernels is several times slower than fp32, "
           "docs/benchmarks.md) and the targets, set for a CPU with native bf16, do not apply as "
           "such")
    print("\n| target | goal | measured | |\n|---|---|---|---|")
    for name, v, key, goal in (("fcl evaluation / Flower's, images/s (fast path, 1 run)", "fast",
                                "eval", TARGET_EVAL),
                               ("fast path / Flower, whole run, runs of 1 thread", "fast-par",
                                "whole", TARGET_WHOLE),
                               ("fast path compiled / Flower, whole run, runs of 1 thread",
                                "fast-compiled-par", "whole", TARGET_WHOLE),
                               ("fp32 defaults / Flower, whole run, runs of 1 thread",
                                "fp32-defaults-par", "whole", TARGET_FP32)):
        if v not in ratio:
            print(f"| {name} | >= {goal} | - | not measured (variant {v} or flower not run) |")
            continue
        got = ratio[v][key]
        verdict = "met" if got >= goal else "missed"
        print(f"| {name} | >= {goal} | {got:.2f} | {verdict}{why if got < goal else ''} |")


if __name__ == "__main__":
    main()
