"""FLoCoRA's Table I: trainable parameters and message size per LoRA rank r, ResNet-8 and
ResNet-18, counted from the models (no study, no data, no training).

    python -m analysis flocora_table1                       # figures/flocora_table1.{md,csv}
    python -m analysis flocora_table1 --ranks 16 32 --out /tmp/fcl-table1
    python -m analysis flocora_table1 --preset flocora-cifar10-lowrank --ranks 4 8 16 32 \
        --out figures/lowrank

The models are the `flocora` preset's (the paper's recipe): CIFAR-10's 10-class head, 64 channels
in the first stage, group norm, a LoRA adapter on every convolution (r x I x k x k down, O x r x
1 x 1 up), the norms and the FC trained. `fcl.communication.params_report` counts them, as
`fcl params` prints them; a message is every trained value in float32, the same on both links
(`compression.bits=32`), and "vs full" is how many times less than full-model FedAvg sends.

These counts equal those of FLoCoRA's released code for the same models (its PEFT LoRA on every
Conv2d, `lora_ablation_mode` 2: norms and FC in `modules_to_save`; its message size counts the
parameters that require a gradient, 4 bytes each). Its ResNet builder passes `batchn=False` into
`zero_init_residual`, so the code's models carry BatchNorm where the paper says GroupNorm: the
same number of trained values (a weight and a bias per channel), so the counts agree either way.

`--preset` counts another FLoCoRA preset's model instead (its backbone at its width, LoRA on
every convolution as that preset trains it): `flocora-cifar10-lowrank`, the CPU regime where
LoRA is low-rank, gives its sizes beside the paper's ResNet-8.

The paper's text states two of the table's numbers, quoted in the `paper` column: ResNet-8 at
r = 32 shares 0.26M parameters, 4.8x less than the whole model, and ResNet-18 is a 44.7 MB
model. The table's other cells are not in the text this command quotes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from analysis.figures.files import markdown_table, save_table
from analysis.output_paths import unwritable_folder
from fcl.cli_args import EXIT_USAGE

BACKBONES = ("resnet8", "resnet18")
RANKS = (8, 16, 32, 64, 128)         # the paper's ranks (its Fig. 2 and its scripts)
# (backbone, r) -> what the paper's text says of that cell; r = 0: the whole model (FedAvg)
PAPER = {("resnet8", 32): "0.26M, 4.8x", ("resnet18", 0): "44.7 MB"}


PAPERS_PRESET = "flocora"


def models_of(preset_name: str) -> list[tuple[str, dict]]:
    """(the model's name in the table, its config keys) of each model Table I counts: the
    paper's two backbones for the `flocora` preset, another preset's own model otherwise."""
    from fcl.presets import preset
    if preset_name == PAPERS_PRESET:
        return [(b, {"model.backbone": b}) for b in BACKBONES]
    model = preset(preset_name).model
    width = f" width {model.width}" if model.backbone == "resnet_tiny" else ""
    return [(f"{model.backbone}{width}", {})]


def lora_presets() -> list[str]:
    """The run presets whose model trains LoRA adapters: those Table I can count."""
    from fcl.presets import PRESETS, preset
    return [name for name in PRESETS if preset(name).model.adapter == "lora"]


def table_rows(ranks: tuple[int, ...] = RANKS, preset_name: str = PAPERS_PRESET
               ) -> pd.DataFrame:
    """One row per model x r (r = 0: full-model FedAvg): trainable values, float32 bytes of
    one message, and the ratio of the full model's message to it."""
    from fcl.communication import params_report
    from fcl.presets import preset
    rows = []
    for backbone, keys in models_of(preset_name):
        full = None
        for r in ranks:
            rep = params_report(preset(preset_name, {**keys, "model.lora_rank": r,
                                                     "model.lora_alpha": 16.0 * r}))
            full = rep["full_model_bytes"]
            m32 = next(m for m in rep["messages"] if m["bits"] == 32)
            rows.append({"backbone": backbone, "r": r, "trainable": rep["trainable_params"],
                         "message_bytes": m32["bytes_up"],
                         "ratio_vs_full": full / m32["bytes_up"]})
        rows.insert(len(rows) - len(ranks), {"backbone": backbone, "r": 0,
                                             "trainable": full // 4, "message_bytes": full,
                                             "ratio_vs_full": 1.0})
    df = pd.DataFrame(rows)
    df["paper"] = [PAPER.get((b, r), "") for b, r in zip(df["backbone"], df["r"])]
    return df


def markdown(df: pd.DataFrame, preset_name: str = PAPERS_PRESET) -> str:
    header = ["model", "r", "trainable parameters", "message (float32)", "vs full", "paper"]
    rows = [[r["backbone"], "FedAvg (whole model)" if r["r"] == 0 else str(r["r"]),
             f"{r['trainable']:,} ({r['trainable'] / 1e6:.2f}M)",
             f"{r['message_bytes']:,} B ({r['message_bytes'] / 1e6:.2f} MB)",
             f"{r['ratio_vs_full']:.2f}x", r["paper"] or "-"] for _, r in df.iterrows()]
    return (f"FLoCoRA Table I (preset `{preset_name}`): trainable parameters and the bytes of "
            "one message (either link, float32) per LoRA rank r; CIFAR-10 head, group norm, LoRA "
            "on every convolution, norms and FC trained. `paper`: the numbers its text states."
            "\n\n" + markdown_table(header, rows))


def main(argv: list[str] | None = None, prog: str = "python -m analysis flocora_table1") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=list(RANKS), metavar="R",
                   help="LoRA ranks, one row each (default: 8 16 32 64 128)")
    p.add_argument("--preset", default=PAPERS_PRESET, metavar="NAME",
                   help="the FLoCoRA preset whose model is counted (default: flocora, the "
                        "paper's ResNet-8 and ResNet-18)")
    p.add_argument("--out", default="figures",      # text: Path('') would be '.'
                   help="where flocora_table1.md and .csv go (default: figures/)")
    args = p.parse_args(argv)
    presets = lora_presets()
    problem = next((f"--ranks={r}: not a rank; allowed: integers >= 1" for r in args.ranks
                    if r < 1), None) or unwritable_folder(args.out, "--out")
    if problem is None and args.preset not in presets:
        problem = f"--preset={args.preset}: not a LoRA preset; allowed: {', '.join(presets)}"
    args.out = Path(args.out)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    df = table_rows(tuple(args.ranks), args.preset)
    paths = save_table(df, markdown(df, args.preset), args.out, "flocora_table1",
                       f"Counted by fcl.communication.params_report from the `{args.preset}` "
                       "preset's models (no training).")
    print("flocora_table1 " + " ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
