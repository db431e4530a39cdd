"""`fcl study noniid` as a script; the study is in
`fcl/studies/noniid.py`, and every flag is the same."""
from fcl.studies.noniid import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
