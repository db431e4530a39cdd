"""Figures, tables and the dashboard, from the stored study results only (Parquet and the study
manifest); never trains, never imports Ray.

    python -m analysis figures [--only NAME ...] [--results FOLDER ...] [--out figures/]
    python -m analysis dashboard [--results results/] [--out dashboard.html]
    python -m analysis paired STUDY --ref KEY=VALUE ... [--value acc bwt_f]
    python -m analysis claims [--results results results-pretrained ...]
    python -m analysis flocora_table1 [--ranks R ...] [--out figures/]

`study_tables` reads a study (`Study`), `seed_stats` aggregates over seeds, `labels` names
values for display; `claims` judges the papers' claims per results folder; `figures/` draws
the papers' figures (matplotlib), `dashboard/` the interactive page (plotly); `flocora_table1`
counts FLoCoRA's Table I from the models (no study).
"""
