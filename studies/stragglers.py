"""`fcl study stragglers` as a script; the study is in
`fcl/studies/stragglers.py`, and every flag is the same."""
from fcl.studies.stragglers import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
