"""Figures, tables and the optimizer dashboard, from the Parquet of stored studies only
(never trains, never imports Ray)."""
