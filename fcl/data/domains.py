"""The Visual Decathlon's ten domains and `data.domains` parsing (no imports: the config checks
its value with it)."""
from __future__ import annotations

DOMAINS = ("aircraft", "cifar100", "daimlerpedcls", "dtd", "gtsrb", "imagenet12", "omniglot",
           "svhn", "ucf101", "vgg-flowers")


def parse_domains(text: str) -> tuple[str, ...]:
    """`data.domains` -> the sequence ('' = all ten); unknown or repeated names raise ValueError."""
    names = tuple(d.strip() for d in text.split(",") if d.strip()) if text else DOMAINS
    unknown = [d for d in names if d not in DOMAINS]
    if unknown or len(set(names)) != len(names) or not names:
        raise ValueError(f"unknown or repeated domain in {text!r}")
    return names
