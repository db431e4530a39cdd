"""`fcl study fcl_methods` as a script; the study is in
`fcl/studies/fcl_methods.py`, and every flag is the same."""
from fcl.studies.fcl_methods import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
