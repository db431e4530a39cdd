"""The papers' figures and tables (matplotlib), one module per paper: `fcl_paper` (FCL Fig. 3-5),
`fcl_paper_tables` (FCL Tables 3-4), `flocora` (FLoCoRA Fig. 2-3, Table III), `drift_correction`
(beyond the papers); `catalog` lists them and is the `python -m analysis figures` command.

Files only, never a window: importing the package chooses the Agg backend, before any of its
modules imports pyplot."""
import matplotlib

matplotlib.use("Agg")
