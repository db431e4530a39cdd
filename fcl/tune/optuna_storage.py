"""Where an Optuna search keeps its state: `--optuna-storage` parsed and checked, and the
storage opened. An RDB URL (`sqlite:///...`, `postgresql://...`, `mysql://...`: SQLAlchemy's)
or an Optuna journal file (`journal:///abs/path/optuna.journal`:
`JournalStorage(JournalFileBackend(path))`, appended to under a lock that also holds on NFS),
which several drivers, or a driver that moves from machine to machine, can share; SQLite (the
default, `<results>/optuna.db`) suits one driver on one machine (docs/studies.md).
"""
from __future__ import annotations

import os

import optuna

from fcl.atomic_file import unwritable
from fcl.config import ConfigError
from fcl.tune.report import BYTES, METRIC

FLAG = "--optuna-storage"
JOURNAL = "journal://"
OBJECTIVES = {"acc": ([METRIC], ["max"]), "pareto": ([METRIC, BYTES], ["max", "min"])}
# What optuna-dashboard calls each objective (else "Objective 0"): the reported `bytes` is the
# run's TCC (bytes up + down so far), trials.parquet's `tcc_bytes`.
METRIC_NAMES = {METRIC: "acc", BYTES: "tcc_bytes"}
RDB_SCHEMES = ("sqlite", "postgresql", "mysql")     # each also with a driver: postgresql+psycopg
ALLOWED = ("sqlite:///PATH, postgresql://USER@HOST/DB, mysql://USER@HOST/DB (passwords in "
           "~/.pgpass or $PGPASSWORD, or ~/.my.cnf), or journal:///ABS/PATH/optuna.journal")


def storage_url(results: str) -> str:
    """The default storage: SQLite in the results folder."""
    return "sqlite:///" + os.path.abspath(os.path.join(results, "optuna.db"))


def parse_storage(text: str) -> str:
    """`--optuna-storage` checked and made absolute: an RDB URL of `RDB_SCHEMES` (an SQLite
    file's path made absolute) or `journal://PATH` (PATH absolute: `journal:///abs/x.journal`;
    a relative one is made absolute). No I/O: bad text is one `ConfigError`."""
    scheme, sep, rest = text.partition("://")
    base = scheme.lower().split("+")[0]
    if not sep or not scheme:
        raise ConfigError(FLAG, text, "not a storage URL", ALLOWED)
    if base == "journal":
        if scheme.lower() != "journal" or not rest.strip("/") or rest.endswith("/"):
            raise ConfigError(FLAG, text, "a journal URL names a file", ALLOWED)
        return JOURNAL + os.path.abspath(rest)
    if base not in RDB_SCHEMES:
        raise ConfigError(FLAG, text, f"unknown scheme {scheme}://", ALLOWED)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError
    try:
        url = make_url(text)
    except (ArgumentError, ValueError) as e:
        raise ConfigError(FLAG, text, f"not a database URL ({e})", ALLOWED) from None
    if url.password:          # study.json and the printed commands would show it
        raise ConfigError(FLAG, url.render_as_string(hide_password=True), "holds a password, "
                          "which study.json and the printed commands would show", ALLOWED)
    if base == "sqlite":
        if not url.database or url.database == ":memory:":
            raise ConfigError(FLAG, text, "an in-memory database outlives no driver", ALLOWED)
        url = url.set(database=os.path.abspath(url.database))
    return url.render_as_string(hide_password=False)


def storage_file(url: str) -> str | None:
    """The file a journal or SQLite storage lives in (None: a database server's)."""
    if url.startswith(JOURNAL):
        return url[len(JOURNAL):]
    if url.startswith("sqlite:///"):
        return url[len("sqlite:///"):]
    return None


def check_writable(url: str) -> None:
    """Before Ray starts: the folder of a storage file can be written in (created if
    missing), and the file, where it exists, is a file (else one `ConfigError`)."""
    path = storage_file(url)
    if path is None:
        return
    if os.path.isdir(path):
        raise ConfigError(FLAG, url, "is a folder, not a file", ALLOWED)
    why = unwritable(os.path.dirname(path))
    if why is None and os.path.exists(path) and not os.access(path, os.W_OK):
        why = "the file is read-only"
    if why:
        raise ConfigError(FLAG, url, f"cannot write there ({why})",
                          "a file in a folder this user can write in; " + ALLOWED)


def repair_journal(path: str) -> int:
    """Drop a partial last record of a journal file (a write cut short by a full disk or a
    kill): Optuna's reader skips it, but the next append would run on from it into a line that
    no reader can parse again (seen: a resumed search failed to restore and then hung). Done
    under the journal's own lock, so a writer of another driver is never cut; a record cut
    short never happened as far as Optuna knows. Returns the bytes dropped."""
    if not os.path.isfile(path):
        return 0
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return 0
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return 0
    journal = getattr(optuna.storages, "journal", optuna.storages)     # Optuna < 4.0: flat
    lock = journal.JournalFileSymlinkLock(path)
    lock.acquire()
    try:
        with open(path, "rb+") as f:
            data = f.read()
            keep = data.rfind(b"\n") + 1
            f.truncate(keep)
        return len(data) - keep
    finally:
        lock.release()


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """The Optuna storage `url` names: a journal file, else an RDB (SQLAlchemy's URL)."""
    if url.startswith(JOURNAL):
        journal = getattr(optuna.storages, "journal", None)
        backend = (journal.JournalFileBackend if hasattr(journal, "JournalFileBackend")
                   else optuna.storages.JournalFileStorage)        # Optuna < 4.0
        return optuna.storages.JournalStorage(backend(url[len(JOURNAL):]))
    return optuna.storages.RDBStorage(url)


def dashboard_command(results: str, storage: str | None = None) -> str:
    """The command that opens the search in optuna-dashboard: a storage URL, or a journal
    file's path (optuna-dashboard opens an existing file as a journal)."""
    url = storage or storage_url(results)
    return f"optuna-dashboard {storage_file(url) if url.startswith(JOURNAL) else url}"


def optuna_study_name(study: str, objective: str) -> str:
    return f"{study}-{objective}"


def optuna_study_exists(url: str, name: str) -> bool:
    path = storage_file(url)
    if path is not None and not os.path.exists(path):
        return False
    try:
        return name in optuna.get_all_study_names(storage=open_storage(url))
    except Exception as e:         # noqa: BLE001  (no server, no driver, no such database)
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(FLAG, url, f"cannot be opened ({type(e).__name__}: {reason})",
                          ALLOWED) from None


def delete_optuna_study(url: str, name: str) -> None:
    if optuna_study_exists(url, name):
        optuna.delete_study(study_name=name, storage=open_storage(url))


def reconcile(url: str, study_name: str, trials, metrics: list[str], owner: str = "") -> int:
    """Optuna trials left RUNNING by a stop (a kill, a full disk: the tell never reached the
    storage) set from the study's exported rows (`trials`: trials.parquet's frame, with
    `optuna_trial`, `status` and the objective's `metrics` columns): COMPLETE with the row's
    values where that trial finished, FAIL otherwise; FAIL too for one asked but never handed
    to Tune (no `tune_trial_id`: the stop cut its suggestion short), and for one this study
    (user attr `fcl_study` == `owner`) handed to a Tune trial that the stop kept from Tune's
    state: the study has ended, so nothing will run it. A trial of another driver's run is
    left alone. Returns how many were set."""
    from fcl.results_io import TERMINATED
    storage = open_storage(url)
    study = optuna.load_study(study_name=study_name, storage=storage)
    if "optuna_trial" not in trials:
        return 0
    rows = {int(n): r for n, r in zip(trials["optuna_trial"], trials.to_dict("records"))
            if n == n}
    fixed = 0
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        row = rows.get(t.number)
        orphan = "tune_trial_id" not in t.user_attrs or (
            owner and t.user_attrs.get("fcl_study") == owner)
        if row is None and orphan:
            # asked, but the stop came before it was handed to Tune, or before Tune recorded
            # the trial it was handed to: no trial will ever run it
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)
            fixed += 1
        if row is None:
            continue
        values = [row.get(m) for m in metrics]
        if row["status"] == TERMINATED and all(v == v and v is not None for v in values):
            study.tell(t.number, values if len(values) > 1 else values[0])
        else:
            study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        fixed += 1
    return fixed


def study_folder(results: str, study: str) -> str:
    """The driver's absolute path of a study's folder: the owner its Optuna trials name."""
    return os.path.abspath(os.path.join(results, study))


def reconciled_line(opts, study: str, trials) -> str | None:
    """A search's Optuna trials that an earlier stop left RUNNING (their tell never reached the
    storage: a kill, a full disk) set from the rows just exported, so optuna-dashboard and the
    next draws see what happened (`reconcile`); the line saying so, or None. `opts`: the
    study's `StudyOptions`."""
    url = opts.optuna_storage or storage_url(opts.results)
    metrics = [METRIC_NAMES.get(m, m) for m in OBJECTIVES[opts.objective][0]]
    fixed = reconcile(url, optuna_study_name(study, opts.objective), trials, metrics,
                      owner=study_folder(opts.results, study))
    return (f"set {fixed} Optuna trials that an earlier stop left RUNNING from the exported "
            "rows") if fixed else None
