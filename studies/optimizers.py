"""`fcl study optimizers` as a script; the study is in
`fcl/studies/optimizers.py`, and every flag is the same."""
from fcl.studies.optimizers import STUDY
from fcl.tune import main

if __name__ == "__main__":
    main(STUDY)
