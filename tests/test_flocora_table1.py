"""`python -m analysis flocora_table1`: FLoCoRA's Table I, trainable parameters and message
bytes per LoRA rank, checked against counts worked by hand."""
import pytest

from analysis.flocora_table1 import main, table_rows


def trainable_by_hand(backbone: str, r: int) -> int:
    """LoRA on a conv O x I x k x k trains r (I k^2 + O) values; the norms (2 per channel) and
    the 10-class FC are trained whole.
    ResNet-8 (64-128-256): convs sum (I k^2 + O) = 91 (stem) + 2 x 640 + 704 + 1,280 + 192
    (1x1 shortcut) + 1,408 + 2,560 + 384 = 7,899; norms 2 x 1,344 = 2,688; FC 256 x 10 + 10.
    ResNet-18 (64-128-256-512): 91 + 4 x 640 + 704 + 3 x 1,280 + 192 + 1,408 + 3 x 2,560 + 384
    + 2,816 + 3 x 5,120 + 768 = 35,803; norms 2 x 4,800 = 9,600; FC 512 x 10 + 10."""
    per_r, fixed = {"resnet8": (7_899, 2_688 + 2_570), "resnet18": (35_803, 9_600 + 5_130)}[
        backbone]
    return per_r * r + fixed


def test_counts_and_bytes_equal_the_hand_count():
    df = table_rows((8, 16))
    full = {"resnet8": 1_227_594, "resnet18": 11_173_962}     # 4,910,376 B and 44,695,848 B
    for backbone, values in full.items():
        rows = df[df["backbone"] == backbone].set_index("r")
        assert list(rows.index) == [0, 8, 16]                    # FedAvg's row first
        assert rows.loc[0, "trainable"] == values and rows.loc[0, "message_bytes"] == 4 * values
        for r in (8, 16):
            want = trainable_by_hand(backbone, r)
            assert rows.loc[r, "trainable"] == want
            assert rows.loc[r, "message_bytes"] == 4 * want
            assert rows.loc[r, "ratio_vs_full"] == pytest.approx(values / want)
    assert trainable_by_hand("resnet18", 16) == 587_578          # 2.35 MB a message
    assert df.set_index(["backbone", "r"]).loc[("resnet18", 0), "paper"] == "44.7 MB"


def test_command_writes_the_table_with_the_papers_numbers_beside_ours(tmp_path, capsys):
    assert main(["--ranks", "32", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "flocora_table1.md").read_text()
    # the paper: 0.26M parameters at r = 32, 4.8x less than the whole ResNet-8
    assert trainable_by_hand("resnet8", 32) == 258_026
    assert ("| resnet8 | 32 | 258,026 (0.26M) | 1,032,104 B (1.03 MB) | 4.76x | 0.26M, 4.8x |"
            in md)
    assert "| resnet18 | FedAvg (whole model) | 11,173,962 (11.17M) | 44,695,848 B (44.70 MB)" \
        in md
    assert (tmp_path / "flocora_table1.csv").read_text().startswith("backbone,r,trainable,")


def test_a_bad_rank_is_one_line_and_writes_nothing(tmp_path, capsys):
    assert main(["--ranks", "0", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "error: --ranks=0: not a rank; allowed: integers >= 1\n"
    assert not list(tmp_path.iterdir())


def test_the_low_rank_regimes_model_is_counted_by_hand_too(tmp_path):
    """resnet_tiny at width 64 (64-128-256, one block a stage, each stride 2 with a 1x1
    shortcut): convs sum (I k^2 + O) = 91 (stem) + 640 + 640 + 128 + 704 + 1,280 + 192 + 1,408
    + 2,560 + 384 = 8,027; norms 2 x (64 + 3 x 64 + 3 x 128 + 3 x 256) = 2,816; FC 2,570. The
    whole model: conv weights 1,226,432 + norms + FC = 1,231,818."""
    assert main(["--preset", "flocora-cifar10-lowrank", "--ranks", "32",
                 "--out", str(tmp_path)]) == 0
    df = table_rows((32,), "flocora-cifar10-lowrank").set_index("r")
    assert df.loc[0, "trainable"] == 1_231_818
    assert df.loc[32, "trainable"] == 8_027 * 32 + 2_816 + 2_570
    assert df.loc[32, "ratio_vs_full"] == pytest.approx(1_231_818 / 262_250)   # 4.70x
    assert "| resnet_tiny width 64 | 32 | 262,250 (0.26M)" in \
        (tmp_path / "flocora_table1.md").read_text()


def test_a_preset_without_lora_is_one_line_and_writes_nothing(tmp_path, capsys):
    assert main(["--preset", "cifar10-local", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --preset=cifar10-local: not a LoRA preset; allowed: ")
    assert "flocora-cifar10-lowrank" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())
